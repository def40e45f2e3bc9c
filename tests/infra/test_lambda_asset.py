"""The one test that bundles the Lambda asset for real (pip with --platform, no Docker) and imports every
handler from it in a fresh interpreter of the functions' Python version, with a clean environment and no
site-packages, as the Lambda runtime would: no .pyc files (the asset has none and /var/task is read-only),
the package, the pinned dependencies and the rules file all from the asset.

It needs the package index (or pip's cache) for the wheels, and python3.13 on this machine (pyenv has it);
without that interpreter the test is skipped, saying so. Run with -s to see the asset's size and each
handler's cold import time."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from aws_cdk.assertions import Template

from ecr_retention.loading import load_config
from infra import constants, lambda_asset
from support.infra_stacks import CONTEXT, RULES, build_stack, rules_file

HANDLERS = ("targets", "evaluate", "report", "push", "tagger", "collector")
# What the Lambda runtime sets that the imported code looks at (Powertools enables its tracer in Lambda).
LAMBDA_ENVIRONMENT = {
    "AWS_REGION": "eu-west-1",
    "AWS_DEFAULT_REGION": "eu-west-1",
    "AWS_EXECUTION_ENV": f"AWS_Lambda_python{constants.LAMBDA_PYTHON_VERSION}",
    "AWS_LAMBDA_FUNCTION_NAME": "ecr-retention-asset-test",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
    "AWS_LAMBDA_LOG_FORMAT": "JSON",
}
PACKAGE = Path(lambda_asset.PACKAGE_SOURCE) / "ecr_retention"
IMPORT = """
import json, sys, time
sys.path.insert(0, {asset!r})
started = time.perf_counter()
import ecr_retention.handlers.{handler} as handler
elapsed = time.perf_counter() - started
import boto3, botocore, pydantic_core, yaml, aws_lambda_powertools
print(json.dumps({{
    "seconds": elapsed,
    "handler": callable(handler.lambda_handler),
    "version": list(sys.version_info[:2]),
    "files": [m.__file__ for m in (handler, boto3, botocore, pydantic_core, yaml, aws_lambda_powertools)],
}}))
"""
RUNTIME_CHECK = """
import json, sys
sys.path.insert(0, {asset!r})
import boto3
from ecr_retention.handlers.settings import default_rules_file
from ecr_retention.loading import load_config
config = load_config(default_rules_file())
for service in {services!r}:
    boto3.client(service, region_name="eu-west-1")
print(json.dumps({{"rulesFile": str(default_rules_file()), "policies": len(config.policies)}}))
"""


def runtime_python() -> str | None:
    """An interpreter of the functions' Python version: pyenv's, or one on the PATH (not a pyenv shim, which
    answers only when that version is selected)."""
    version = constants.LAMBDA_PYTHON_VERSION
    candidates = sorted(Path.home().glob(f".pyenv/versions/{version}.*/bin/python{version}"))
    if candidates:
        return str(candidates[-1])
    found = shutil.which(f"python{version}")
    return found if found and "/shims/" not in found else None


def run_isolated(python: str, code: str, asset: Path) -> dict[str, object]:
    # -I: no PYTHON* variables, no user site, no current directory; -S: no site-packages; -B: no .pyc written.
    result = subprocess.run(
        [python, "-I", "-S", "-B", "-c", code],
        env=LAMBDA_ENVIRONMENT | {"LAMBDA_TASK_ROOT": str(asset)},
        cwd=asset,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    document: dict[str, object] = json.loads(result.stdout.strip().splitlines()[-1])
    return document


def directory_bytes(directory: Path) -> int:
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file())


@pytest.fixture(scope="module")
def asset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The bundled asset directory of the stack's functions, and the rules file it was built from."""
    work = tmp_path_factory.mktemp("bundle")
    rules = rules_file(work, RULES)
    stack = build_stack(rules, CONTEXT, bundle=True, outdir=work / "cdk.out")
    functions = Template.from_stack(stack).find_resources("AWS::Lambda::Function").values()
    keys = {function["Properties"]["Code"]["S3Key"] for function in functions}
    [key] = keys  # one asset for all six functions
    return work / "cdk.out" / f"asset.{key.removesuffix('.zip')}", rules


@pytest.mark.slow
def test_the_asset_holds_the_package_the_rules_file_and_linux_wheels_for_the_runtime(asset: tuple[Path, Path]) -> None:
    directory, rules = asset
    assert (directory / "retention.yaml").read_bytes() == rules.read_bytes()
    assert load_config(directory / "retention.yaml") == load_config(rules)
    for handler in HANDLERS:
        assert (directory / "ecr_retention" / "handlers" / f"{handler}.py").is_file()
    [extension] = (directory / "pydantic_core").glob("_pydantic_core.*.so")
    version = constants.LAMBDA_PYTHON_VERSION.replace(".", "")
    assert extension.name == f"_pydantic_core.cpython-{version}-x86_64-linux-gnu.so"
    assert list(directory.rglob("*.pyc")) == []
    assert not (directory / "bin").exists()
    models = {path.name for path in (directory / "botocore" / "data").iterdir() if path.is_dir()}
    assert models == lambda_asset.BOTOCORE_SERVICES


# Code that never runs in a function: the in-cluster exporter and the CLI (the demo is not in the package).
NOT_IN_FUNCTIONS = {"exporter", "commands"}


@pytest.mark.slow
def test_the_package_creates_clients_only_for_services_the_asset_keeps() -> None:
    requested = {
        service
        for path in PACKAGE.rglob("*.py")
        if not NOT_IN_FUNCTIONS & set(path.parts)
        for service in re.findall(r"""client\(\s*["']([a-z0-9-]+)["']""", path.read_text())
    }
    assert {"ecr", "s3", "ecs", "events", "lambda", "scheduler"} <= requested
    assert requested <= lambda_asset.BOTOCORE_SERVICES - {"xray"}


@pytest.mark.slow
def test_every_handler_imports_from_the_asset_in_a_clean_runtime_interpreter(
    asset: tuple[Path, Path], tmp_path: Path
) -> None:
    python = runtime_python()
    if python is None:
        pytest.skip(f"no python{constants.LAMBDA_PYTHON_VERSION} here: the asset cannot be imported, only listed")
    directory, _ = asset
    times = {}
    for handler in HANDLERS:
        loaded = run_isolated(python, IMPORT.format(asset=str(directory), handler=handler), directory)
        assert loaded["handler"] is True
        assert loaded["version"] == [int(part) for part in constants.LAMBDA_PYTHON_VERSION.split(".")]
        assert all(str(file).startswith(str(directory)) for file in loaded["files"])  # type: ignore[attr-defined]
        times[handler] = loaded["seconds"]
    checked = run_isolated(
        python, RUNTIME_CHECK.format(asset=str(directory), services=sorted(lambda_asset.BOTOCORE_SERVICES)), directory
    )
    assert checked == {"rulesFile": str(directory / "retention.yaml"), "policies": 2}

    archive = tmp_path / "asset.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        for path in sorted(directory.rglob("*")):
            zipped.write(path, path.relative_to(directory))
    print(
        f"\nasset: {directory_bytes(directory) / 2**20:.1f} MiB unzipped, {archive.stat().st_size / 2**20:.1f} MiB zipped"
    )
    for handler, seconds in times.items():
        print(f"cold import of ecr_retention.handlers.{handler} from the asset: {seconds * 1000:.0f} ms")  # type: ignore[operator]
