"""Writes infra/requirements-lambda.txt (package data of ecr_retention.cdk): the Lambda asset's full dependency lock
(`make lock`; needs the package index).

pip resolves requirements.txt for the functions' platform (infra.constants: Python version and architecture), as the
asset's bundling installs it (`--platform manylinux2014_<arch> --only-binary=:all:`), without installing anything
(`--dry-run --report`); its report names every distribution, its version and the sha256 of the very wheel chosen. The
lock pins each with that hash, and the bundling installs it with `--require-hashes --no-deps`
(infra.lambda_asset.pip_command): a synthesis next month installs the same bytes, or fails.

Run it after changing requirements.txt or the functions' runtime or architecture; tests/infra/test_lambda_lock.py checks
that the lock covers requirements.txt at its pins and names the platform the constants say.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ecr_retention.cdk import constants, lambda_asset  # noqa: E402

# The functions' direct requirements, this repository's; the lock it writes is the package's (lambda_asset.LOCK_FILE).
REQUIREMENTS_FILE = ROOT / "requirements.txt"


def resolved(requirements: Path, platform: str, python_version: str) -> list[dict[str, Any]]:
    """pip's installation report for the platform: one entry per distribution the asset would hold."""
    with tempfile.TemporaryDirectory() as directory:
        report = Path(directory) / "report.json"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--dry-run",
                "--ignore-installed",
                "--report",
                str(report),
                *lambda_asset.platform_options(platform, python_version),
                "--requirement",
                str(requirements),
            ],
            check=True,
        )
        installs: list[dict[str, Any]] = json.loads(report.read_text())["install"]
        return installs


def lock_text(installs: list[dict[str, Any]], platform: str, python_version: str) -> str:
    lines = [
        "# The Lambda asset's dependencies, every one pinned with the sha256 of its wheel for the functions' platform.",
        "# Generated from requirements.txt by `make lock` (tools/lock_lambda.py); do not edit. The bundling installs it",
        "# with --require-hashes --no-deps (infra/lambda_asset.py), and the asset hash covers it.",
        f"{lambda_asset.LOCK_PLATFORM_PREFIX}{lambda_asset.lock_platform(platform, python_version)}",
    ]
    for install in sorted(installs, key=lambda each: lambda_asset.normalized(each["metadata"]["name"])):
        name = lambda_asset.normalized(install["metadata"]["name"])
        sha256 = install["download_info"]["archive_info"]["hashes"]["sha256"]
        lines.append(f"{name}=={install['metadata']['version']} \\")
        lines.append(f"    --hash=sha256:{sha256}")
    return "\n".join(lines) + "\n"


def main() -> int:
    platform = lambda_asset.PIP_PLATFORMS[constants.LAMBDA_ARCHITECTURE]
    version = constants.LAMBDA_PYTHON_VERSION
    installs = resolved(REQUIREMENTS_FILE, platform, version)
    lambda_asset.LOCK_FILE.write_text(lock_text(installs, platform, version))
    print(f"{lambda_asset.LOCK_FILE.name}: {len(installs)} distributions for {platform}, Python {version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
