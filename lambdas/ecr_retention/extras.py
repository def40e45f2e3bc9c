"""Which extra of the ecr-retention distribution brings a package a command imports (pyproject.toml,
[project.optional-dependencies]), so that a command whose extra is missing says what to install in one line."""

from __future__ import annotations

DISTRIBUTION = "ecr-retention"

# Top-level modules a command imports only when it runs, and the extra that installs each. boto3 is a base dependency
# as well: the aws extra names it for an installation that left it out (`pip install --no-deps`).
EXTRA_OF_MODULE = {
    "boto3": "aws",
    "botocore": "aws",
    "kubernetes": "kubernetes",
    "aws_cdk": "cdk",
    "constructs": "cdk",
}


def missing_extra(error: ImportError) -> str | None:
    """The extra that installs the module `error` failed to import, or None when no extra provides it (a bug or a
    broken installation, which should stay a traceback)."""
    return EXTRA_OF_MODULE.get((error.name or "").partition(".")[0])


def install_hint(extra: str) -> str:
    """How to add an extra, with pip or with pipx (which replaces its installation of the command)."""
    requirement = f'"{DISTRIBUTION}[{extra}]"'
    return f"pip install {requirement} (pipx: pipx install --force {requirement})"
