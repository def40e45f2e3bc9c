"""The one Lambda asset of the stack, bundled without Docker: the pinned requirements as Linux wheels for
the functions' Python and architecture, the ecr_retention package, and the rules file (config as code).

`pip install --platform manylinux2014_<arch> --only-binary=:all: --python-version <runtime>` runs on the
synthesizing machine and fetches wheels built for Lambda, whatever that machine is; `--no-compile` keeps the
synthesizing Python's .pyc files out (they would not match the runtime's version). The asset hash is
computed from everything that goes in, so changing the rules file, the package or a pinned version
changes the functions, and nothing else does.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_

from infra import constants

REPOSITORY_ROOT = Path(__file__).resolve().parent.parent
PACKAGE_SOURCE = REPOSITORY_ROOT / "lambdas"
PACKAGE_NAME = "ecr_retention"
REQUIREMENTS_FILE = REPOSITORY_ROOT / "requirements.txt"
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo")
PIP_PLATFORMS = {"x86_64": "manylinux2014_x86_64", "arm64": "manylinux2014_aarch64"}
# The AWS services the package's functions create clients for (ecr_retention.handlers.wiring; ecs, events,
# lambda and scheduler for the AWS inventory collector, ecr_retention.aws.accounts), and xray, whose client the
# X-Ray SDK's sampler creates outside a Lambda context; botocore's models of the other ~440 services are tens of
# MB of the asset that no function reads. tests/infra/test_lambda_asset.py checks that the package asks for no
# other service, and creates a client of each kept one from the asset.
BOTOCORE_SERVICES = frozenset(
    {"dynamodb", "ecr", "ecs", "events", "lambda", "s3", "scheduler", "sns", "stepfunctions", "sts", "xray"}
)


def package_files(root: Path = PACKAGE_SOURCE / PACKAGE_NAME) -> list[Path]:
    return sorted(
        path
        for path in root.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo")
    )


def pip_command(output_dir: str, architecture: str, python_version: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-compile",
        "--target",
        output_dir,
        "--platform",
        PIP_PLATFORMS[architecture],
        "--only-binary=:all:",
        "--implementation",
        "cp",
        "--python-version",
        python_version,
        "--requirement",
        str(REQUIREMENTS_FILE),
    ]


def drop_unused_service_models(models: Path) -> None:
    for service in models.iterdir():
        if service.is_dir() and service.name not in BOTOCORE_SERVICES:
            shutil.rmtree(service)


def asset_hash(rules_file: Path, architecture: str, python_version: str) -> str:
    digest = hashlib.sha256()
    digest.update(f"{architecture}\0{python_version}\0{sorted(BOTOCORE_SERVICES)}\0".encode())
    digest.update(REQUIREMENTS_FILE.read_bytes())
    digest.update(b"\0rules\0" + rules_file.read_bytes())
    for path in package_files():
        digest.update(b"\0" + path.relative_to(PACKAGE_SOURCE).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


@jsii.implements(ILocalBundling)
class PipBundler:
    """Bundles on this machine; returning True tells the CDK not to try Docker."""

    def __init__(self, rules_file: Path, architecture: str, python_version: str) -> None:
        self.rules_file = rules_file
        self.architecture = architecture
        self.python_version = python_version

    def try_bundle(self, output_dir: str, *_options: Any, **_keywords: Any) -> bool:  # the BundlingOptions: unused
        subprocess.run(pip_command(output_dir, self.architecture, self.python_version), check=True)
        # pip's console scripts (bin/) point at the synthesizing interpreter and cannot run on Lambda.
        shutil.rmtree(Path(output_dir) / "bin", ignore_errors=True)
        drop_unused_service_models(Path(output_dir) / "botocore" / "data")
        shutil.copytree(PACKAGE_SOURCE / PACKAGE_NAME, Path(output_dir) / PACKAGE_NAME, ignore=IGNORED)
        shutil.copyfile(self.rules_file, Path(output_dir) / constants.ASSET_RULES_FILE)
        return True


def runtime() -> lambda_.Runtime:
    runtime: lambda_.Runtime = getattr(lambda_.Runtime, "PYTHON_" + constants.LAMBDA_PYTHON_VERSION.replace(".", "_"))
    return runtime


def architecture() -> lambda_.Architecture:
    return lambda_.Architecture.ARM_64 if constants.LAMBDA_ARCHITECTURE == "arm64" else lambda_.Architecture.X86_64


def lambda_code(rules_file: Path) -> lambda_.Code:
    """One code object for every function of the stack (the CDK uploads it once)."""
    bundler = PipBundler(rules_file, constants.LAMBDA_ARCHITECTURE, constants.LAMBDA_PYTHON_VERSION)
    return lambda_.Code.from_asset(
        str(PACKAGE_SOURCE),
        asset_hash_type=AssetHashType.CUSTOM,
        asset_hash=asset_hash(rules_file, constants.LAMBDA_ARCHITECTURE, constants.LAMBDA_PYTHON_VERSION),
        exclude=["**/__pycache__", "**/*.pyc"],
        bundling=BundlingOptions(
            # Required by the API, never pulled: the local bundler always succeeds or raises.
            image=DockerImage.from_registry("public.ecr.aws/sam/build-python" + constants.LAMBDA_PYTHON_VERSION),
            local=bundler,
        ),
    )
