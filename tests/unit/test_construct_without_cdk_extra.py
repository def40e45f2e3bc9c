"""`from ecr_retention.cdk import EcrRetention` without the cdk extra names the extra to install."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_importing_the_construct_without_aws_cdk_names_the_cdk_extra() -> None:
    # Given an interpreter where aws_cdk cannot be imported (a finder that refuses it, as an installation without the
    # extra would)
    script = textwrap.dedent(
        """
        import sys
        class NoCdk:
            def find_spec(self, name, path=None, target=None):
                if name.partition(".")[0] in {"aws_cdk", "constructs"}:
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                return None
        sys.meta_path.insert(0, NoCdk())
        try:
            from ecr_retention.cdk import EcrRetention
        except ModuleNotFoundError as error:
            print(error)
        """
    )
    # When the construct is imported
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    # Then the error says which extra to install
    assert result.stdout.strip() == (
        'EcrRetention needs the cdk extra: pip install "ecr-retention[cdk]" '
        '(pipx: pipx install --force "ecr-retention[cdk]")'
    )
