"""The distribution as a user gets it: a wheel built from the files git tracks (what a release builds from), not from
the working directory with its caches and build leftovers."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path


def build_wheel(source: Path, out: Path) -> Path:
    """The wheel of the git work tree `source` (the tracked files as they are now), written into `out`. pip builds it
    in an isolated environment, with the build backend pyproject.toml names."""
    out.mkdir(parents=True, exist_ok=True)
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=source, capture_output=True, check=True).stdout
    with tempfile.TemporaryDirectory() as directory:
        export = Path(directory) / "source"
        export.mkdir()
        # tar keeps the symbolic link lambdas/ecr_retention/cdk -> ../../infra as a link, as git does.
        packed = subprocess.run(
            ["tar", "--null", "-T", "-", "-cf", "-"], cwd=source, input=tracked, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-xf", "-", "-C", str(export)], input=packed, check=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out), str(export)],
            check=True,
        )
    [wheel] = out.glob("*.whl")
    return wheel
