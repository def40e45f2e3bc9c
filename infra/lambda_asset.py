"""The one Lambda asset of the stack, bundled without Docker: the pinned requirements as Linux wheels for
the functions' Python and architecture, the part of the ecr_retention package that the functions import, the
rules file (config as code), the collector's spoke roles and eksClusters (lists too long for its environment), and
their bytecode.

`pip install --platform manylinux2014_<arch> --only-binary=:all: --python-version <runtime> --require-hashes --no-deps
-r requirements-lambda.txt` runs on the synthesizing machine and fetches wheels built for Lambda, whatever that
machine is, exactly those of the lock (every distribution pinned with its wheel's sha256; `make lock` writes it); `--no-compile` keeps the
synthesizing Python's .pyc files out (they would not match the runtime's version). When the machine has an
interpreter of the runtime's own version, it compiles the whole asset (see compile_bytecode); without one,
synth says so in one line, and every cold start compiles what it imports.

The asset hash is computed from everything that goes in, so changing the rules file, the spoke roles, the eksClusters,
the shipped part of the package or the lock (a version or a wheel's hash) changes the functions, and nothing else does.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_

from ecr_retention.cdk import constants
from ecr_retention.cdk.import_closure import shipped_files
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.inventory.spoke_roles import SpokeRoles

REPOSITORY_ROOT = Path(__file__).resolve().parent.parent
PACKAGE_SOURCE = REPOSITORY_ROOT / "lambdas"
PACKAGE_NAME = "ecr_retention"
REQUIREMENTS_FILE = REPOSITORY_ROOT / "requirements.txt"
# The full lock of what the asset installs, with each wheel's sha256 for the functions' platform (tools/lock_lambda.py,
# `make lock`): installed with --require-hashes --no-deps, and hashed into the asset hash.
LOCK_FILE = REPOSITORY_ROOT / "requirements-lambda.txt"
LOCK_PLATFORM_PREFIX = "# platform: "
# What ships of the package is what the handlers import (infra/import_closure.py): not the CLI (`ecr-retention`,
# commands/, its tables, the restore command's service, the diff), not the in-cluster exporter (exporter/: it runs in a
# cluster's image; the collector reads eksClusters with the shared Kubernetes code, kube/). The demo and the emulator
# live in another package (ecr_retention_dev), which the asset never copies. tests/infra/test_lambda_asset.py lists
# what must not ship.
# Where Lambda unpacks the asset: the file names compiled into the bytecode, as tracebacks show them.
LAMBDA_TASK_ROOT = "/var/task"
PIP_PLATFORMS = {"x86_64": "manylinux2014_x86_64", "arm64": "manylinux2014_aarch64"}
# The AWS services the package's functions create clients for (ecr_retention.handlers.wiring; ecs, events,
# lambda and scheduler for the AWS inventory collector, ecr_retention.aws.accounts, eks for its eksClusters, and
# inspector2 for Amazon Inspector's reading, inspectorInUse), and xray, whose client the
# X-Ray SDK's sampler creates outside a Lambda context; botocore's models of the other ~440 services are tens of
# MB of the asset that no function reads. tests/infra/test_lambda_asset.py checks that the package asks for no
# other service, and creates a client of each kept one from the asset.
BOTOCORE_SERVICES = frozenset(
    {
        "dynamodb",
        "ecr",
        "ecs",
        "eks",
        "events",
        "inspector2",
        "lambda",
        "s3",
        "scheduler",
        "sns",
        "stepfunctions",
        "sts",
        "xray",
    }
)


# Parts of the dependencies that nothing in the asset imports: the kubernetes package's asyncio client (41 MB of
# the package's 75; the collector lists eksClusters with the synchronous one, ecr_retention.kube.client).
UNUSED_DEPENDENCY_PARTS = ("kubernetes/aio",)


def package_files(root: Path = PACKAGE_SOURCE / PACKAGE_NAME) -> list[Path]:
    """The files of the package that the asset ships (read once per process: every stack of a synthesis hashes
    them)."""
    return list(_package_files(root))


@lru_cache(maxsize=4)
def _package_files(root: Path) -> tuple[Path, ...]:
    return tuple(shipped_files(root))


def copy_package(output_dir: Path, root: Path = PACKAGE_SOURCE / PACKAGE_NAME) -> None:
    for path in package_files(root):
        target = output_dir / path.relative_to(root.parent)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)


@lru_cache(maxsize=4)
def runtime_python(version: str = constants.LAMBDA_PYTHON_VERSION) -> str | None:
    """An interpreter of exactly the functions' Python version on this machine, or None: python<version> on the
    PATH, else one that pyenv installed (pyenv's shim on the PATH answers only when that version is selected).
    Each candidate is asked for its bytecode cache tag, which is what the compiled files must match, and for the
    interpreter it runs: a wrapper such as pyenv's shim (a shell script that starts pyenv, which starts the
    interpreter) adds about 0.14 s to every start, which each compileall run and each of the benchmark's fresh
    processes would pay, so the interpreter itself is returned."""
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    candidates = [shutil.which(f"python{version}"), *sorted(pyenv.glob(f"versions/{version}.*/bin/python{version}"))]
    expected = "cpython-" + version.replace(".", "")
    for candidate in candidates:
        if candidate is None:
            continue
        try:
            answer = subprocess.run(
                [str(candidate), "-c", "import sys; print(sys.implementation.cache_tag); print(sys.executable)"],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        tag, _, interpreter = answer.stdout.strip().partition("\n")
        if answer.returncode == 0 and tag == expected:
            return interpreter or str(candidate)  # sys.executable is empty when Python cannot tell
    return None


def compile_bytecode(python: str, directory: Path) -> None:
    """Compiles every .py file of the asset with the runtime's own Python, into __pycache__ beside it.

    Lambda's /var/task is read-only, so without these files every cold start compiles boto3, botocore, pydantic
    and Powertools again and throws the result away. They are hash-based, not timestamp-based: the asset is a
    zip whose timestamps the CDK normalizes, so a timestamp .pyc would never match its source and would be
    ignored. Unchecked-hash, not checked-hash: the runtime trusts the .pyc without reading and hashing its
    source on every cold start, which is safe because a function's code never changes in place (a new
    deployment is a new asset). The output is deterministic, bytes for bytes: file names are compiled as
    /var/task/..., not the build directory, and a fixed hash seed keeps set constants in one order.
    """
    compileall = [python, "-s", "-m", "compileall", "-q", "-j0", "--invalidation-mode", "unchecked-hash"]
    names = ["-s", str(directory), "-p", LAMBDA_TASK_ROOT]  # strip the build directory, prepend /var/task
    subprocess.run(
        [*compileall, *names, str(directory)],
        env={"PATH": os.environ.get("PATH", ""), "PYTHONHASHSEED": "0"},
        check=True,
    )


def normalized(name: str) -> str:
    """A distribution's name as the package index compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_platform(platform: str, python_version: str) -> str:
    return f"{platform} cp{python_version.replace('.', '')}"


def check_lock(architecture: str, python_version: str, lock_file: Path | None = None) -> None:
    """InputError, in one line, when the lock is missing or was made for another platform than the functions'."""
    lock = lock_file or LOCK_FILE
    if not lock.is_file():
        raise InputError(f"{lock.name}: missing; run `make lock` (docs/deploy.md)")
    wanted = lock_platform(PIP_PLATFORMS[architecture], python_version)
    stated = next(
        (
            line.removeprefix(LOCK_PLATFORM_PREFIX)
            for line in lock.read_text().splitlines()
            if line.startswith(LOCK_PLATFORM_PREFIX)
        ),
        "no platform",
    )
    if stated != wanted:
        raise InputError(f"{lock.name}: locked for {stated}, the functions run on {wanted}; run `make lock`")


def platform_options(platform: str, python_version: str) -> list[str]:
    """pip's options for the functions' platform: its wheels only, whatever this machine is (the bundling's install
    and the lock's resolution, tools/lock_lambda.py, must agree)."""
    return [
        "--platform",
        platform,
        "--only-binary=:all:",
        "--implementation",
        "cp",
        "--python-version",
        python_version,
    ]


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
        *platform_options(PIP_PLATFORMS[architecture], python_version),
        # Every distribution is in the lock, each with its wheel's hash: nothing resolved at synthesis.
        "--require-hashes",
        "--no-deps",
        "--requirement",
        str(LOCK_FILE),
    ]


def drop_unused_service_models(models: Path) -> None:
    for service in models.iterdir():
        if service.is_dir() and service.name not in BOTOCORE_SERVICES:
            shutil.rmtree(service)


def spoke_roles_document(role_arns: Sequence[str]) -> bytes:
    """The asset's spoke roles file (constants.ASSET_SPOKE_ROLES_FILE), validated as the collector reads it."""
    return SpokeRoles(role_arns=tuple(role_arns)).model_dump_json(by_alias=True).encode()


def eks_clusters_document(cluster_arns: Sequence[str]) -> bytes:
    """The asset's eksClusters file (constants.ASSET_EKS_CLUSTERS_FILE), as the collector's settings read it."""
    return json.dumps({"eksClusters": list(cluster_arns)}, separators=(",", ":")).encode()


def asset_hash(
    rules_file: Path,
    architecture: str,
    python_version: str,
    *,
    bytecode: bool,
    spoke_role_arns: Sequence[str] = (),
    eks_cluster_arns: Sequence[str] = (),
    lock_file: Path | None = None,
) -> str:
    """From the inputs alone. The bytecode is derived from them, deterministically, by an interpreter of
    python_version (its patch releases share one bytecode format, so any of them builds a working asset): only
    whether it is there counts, and an asset synthesized without it is another asset."""
    digest = hashlib.sha256()
    digest.update(
        f"{architecture}\0{python_version}\0{sorted(BOTOCORE_SERVICES)}\0{UNUSED_DEPENDENCY_PARTS}\0".encode()
    )
    digest.update(b"bytecode\0" if bytecode else b"sources only\0")
    digest.update((lock_file or LOCK_FILE).read_bytes())  # every distribution's version and wheel hash
    digest.update(b"\0rules\0" + rules_file.read_bytes())
    digest.update(b"\0spoke roles\0" + spoke_roles_document(spoke_role_arns))
    digest.update(b"\0eks clusters\0" + eks_clusters_document(eks_cluster_arns))
    for path in package_files():
        digest.update(b"\0" + path.relative_to(PACKAGE_SOURCE).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


@jsii.implements(ILocalBundling)
class PipBundler:
    """Bundles on this machine; returning True tells the CDK not to try Docker."""

    def __init__(
        self,
        rules_file: Path,
        architecture: str,
        python_version: str,
        compiler: str | None,
        spoke_role_arns: Sequence[str] = (),
        eks_cluster_arns: Sequence[str] = (),
    ) -> None:
        self.rules_file = rules_file
        self.spoke_role_arns = tuple(spoke_role_arns)
        self.eks_cluster_arns = tuple(eks_cluster_arns)
        self.architecture = architecture
        self.python_version = python_version
        self.compiler = compiler  # an interpreter of python_version (runtime_python), or None: no bytecode

    def try_bundle(self, output_dir: str, *_options: Any, **_keywords: Any) -> bool:  # the BundlingOptions: unused
        subprocess.run(pip_command(output_dir, self.architecture, self.python_version), check=True)
        # pip's console scripts (bin/) point at the synthesizing interpreter and cannot run on Lambda.
        shutil.rmtree(Path(output_dir) / "bin", ignore_errors=True)
        drop_unused_service_models(Path(output_dir) / "botocore" / "data")
        for part in UNUSED_DEPENDENCY_PARTS:
            shutil.rmtree(Path(output_dir) / part)
        copy_package(Path(output_dir))
        shutil.copyfile(self.rules_file, Path(output_dir) / constants.ASSET_RULES_FILE)
        (Path(output_dir) / constants.ASSET_SPOKE_ROLES_FILE).write_bytes(spoke_roles_document(self.spoke_role_arns))
        (Path(output_dir) / constants.ASSET_EKS_CLUSTERS_FILE).write_bytes(eks_clusters_document(self.eks_cluster_arns))
        if self.compiler is not None:
            compile_bytecode(self.compiler, Path(output_dir))
        return True


def runtime() -> lambda_.Runtime:
    runtime: lambda_.Runtime = getattr(lambda_.Runtime, "PYTHON_" + constants.LAMBDA_PYTHON_VERSION.replace(".", "_"))
    return runtime


def architecture() -> lambda_.Architecture:
    return lambda_.Architecture.ARM_64 if constants.LAMBDA_ARCHITECTURE == "arm64" else lambda_.Architecture.X86_64


def lambda_code(
    rules_file: Path, spoke_role_arns: Sequence[str] = (), eks_cluster_arns: Sequence[str] = ()
) -> lambda_.Code:
    """One code object for every function of the stack (the CDK uploads it once); spoke_role_arns and
    eks_cluster_arns, the collector's (cdk.json spokeRoleArns and eksClusters)."""
    version = constants.LAMBDA_PYTHON_VERSION
    check_lock(constants.LAMBDA_ARCHITECTURE, version)
    compiler = runtime_python(version)
    if compiler is None:
        print(
            f"note: no python{version} on this machine: the Lambda asset ships without bytecode, "
            "so each cold start compiles the modules it imports (about three times slower)",
            file=sys.stderr,
        )
    bundler = PipBundler(
        rules_file, constants.LAMBDA_ARCHITECTURE, version, compiler, spoke_role_arns, eks_cluster_arns
    )
    return lambda_.Code.from_asset(
        str(PACKAGE_SOURCE),
        asset_hash_type=AssetHashType.CUSTOM,
        asset_hash=asset_hash(
            rules_file,
            constants.LAMBDA_ARCHITECTURE,
            version,
            bytecode=compiler is not None,
            spoke_role_arns=spoke_role_arns,
            eks_cluster_arns=eks_cluster_arns,
        ),
        exclude=["**/__pycache__", "**/*.pyc"],
        bundling=BundlingOptions(
            # Required by the API, never pulled: the local bundler always succeeds or raises.
            image=DockerImage.from_registry("public.ecr.aws/sam/build-python" + constants.LAMBDA_PYTHON_VERSION),
            local=bundler,
        ),
    )
