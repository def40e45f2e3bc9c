"""The tests that bundle the Lambda asset for real (pip with --platform, no Docker) and import every handler from it
in a fresh interpreter of the functions' Python version, with a clean environment and no site-packages, as the
Lambda runtime would: nothing written back (/var/task is read-only), the package, the pinned dependencies, the
rules file and the bytecode all from the asset; and the fast tests of what goes in it and of its hash.

Bundling needs the package index (or pip's cache) for the wheels; importing needs python3.13 on this machine
(pyenv has it), which also compiles the asset's bytecode; without that interpreter the import is skipped, saying
so, and the asset must hold no bytecode. Run with -s to see the asset's size and each handler's cold import time
(benchmarks/asset_bench.py measures them, with and without bytecode)."""

from __future__ import annotations

import json
import marshal
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from aws_cdk.assertions import Template

from ecr_retention.cdk import constants, lambda_asset
from ecr_retention.cdk.import_closure import shipped_modules
from ecr_retention.loading import load_config, load_spoke_roles
from support.infra_stacks import CONTEXT, RULES, build_stack, rules_file

HANDLERS = ("targets", "evaluate", "report", "push", "tagger", "collector", "sentinel")
# What the Lambda runtime sets that the imported code looks at (Powertools enables its tracer in Lambda).
LAMBDA_ENVIRONMENT = {
    "AWS_REGION": "eu-west-1",
    "AWS_DEFAULT_REGION": "eu-west-1",
    "AWS_EXECUTION_ENV": f"AWS_Lambda_python{constants.LAMBDA_PYTHON_VERSION}",
    "AWS_LAMBDA_FUNCTION_NAME": "ecr-retention-asset-test",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
    "AWS_LAMBDA_LOG_FORMAT": "JSON",
}
# What the package ships: the handlers, the services, the adapters, the domain, and the top-level modules they
# import (ports.py; registries.py, the pruned registries; run_files.py, a run's files; run_adapters.py, what the
# workflow's steps work through; loading.py from handlers.dependencies; the report step's page, with its templates, and
# sheet).
# The shared Kubernetes code (kube/), whose lister the collector uses for eksClusters. Not the CLI, the in-cluster
# exporter or the demo. A new top-level entry must be added here on purpose, or left out of the asset.
SHIPPED = {
    "__init__.py",
    "aws",
    "domain",
    "kube",
    "handlers",
    "services",
    "clock.py",
    "defects.py",
    "gc_guard.py",
    "layout.py",
    "loading.py",
    "ports.py",
    "registries.py",
    "run_adapters.py",
    "run_files.py",
    "run_records.py",
    "run_request.py",
    "workflow.py",
    "workflow_batches.py",
    "report_page",
    "report_renderers.py",
    "report_sheet.py",
}
# The CLI's own code, which no function imports, by module: none of it may ship (the asset ships the handlers' import
# closure, infra/import_closure.py).
CLI_ONLY = (
    "ecr_retention.__main__",
    "ecr_retention.cli",
    "ecr_retention.commands",
    "ecr_retention.tables",
    "ecr_retention.exporter",
    "ecr_retention.services.restore",
    "ecr_retention.services.run",  # the whole run in one process; each Lambda runs its step's service alone
    "ecr_retention.listed_ahead",  # the CLI's dry-run sweep lists ahead
    "ecr_retention.domain.review",
)
# The flags word of a hash-based .pyc that the runtime does not check against its source (PEP 552).
UNCHECKED_HASH = (1).to_bytes(4, "little")
# Of what only some functions use, what each handler loads at import: asyncio only with Powertools' batch processor
# (the push function's; the X-Ray SDK's wrapt is pinned below the releases that import it), each of the run's steps'
# services only in its own step, the collector's only in the collector, kubernetes in none (only when eksClusters lists
# a cluster, handlers.wiring.collector.eks_clusters).
STEPS = (
    "ecr_retention.services.targets_step",
    "ecr_retention.services.evaluate_step",
    "ecr_retention.services.report_step",
)
PROBED = ("asyncio", "kubernetes", *STEPS, "ecr_retention.services.aws_inventory")
LOADED = {
    "targets": {"ecr_retention.services.targets_step"},
    "evaluate": {"ecr_retention.services.evaluate_step"},
    "report": {"ecr_retention.services.report_step"},
    "push": {"asyncio"},
    "tagger": set(),
    "collector": {"ecr_retention.services.aws_inventory"},
    "sentinel": set(),
}
# "compiled at import": every module the loader compiled from its source, which it does only when no bytecode it
# can use is there (SourceFileLoader.source_to_code): a .pyc of another Python, or checked against a changed source.
IMPORT = """
import importlib.machinery, json, sys, time
sys.path.insert(0, {asset!r})
compiled = []
source_to_code = importlib.machinery.SourceFileLoader.source_to_code
def compiling(self, data, path, *args, **kwargs):
    compiled.append(path)
    return source_to_code(self, data, path, *args, **kwargs)
importlib.machinery.SourceFileLoader.source_to_code = compiling
started = time.perf_counter()
import ecr_retention.handlers.{handler} as handler
elapsed = time.perf_counter() - started
loaded = sorted(name for name in {probed!r} if name in sys.modules)
import boto3, botocore, pydantic_core, yaml, aws_lambda_powertools, aws_xray_sdk.core.patcher
print(json.dumps({{
    "seconds": elapsed,
    "handler": callable(handler.lambda_handler),
    "version": list(sys.version_info[:2]),
    "files": [m.__file__ for m in (handler, boto3, botocore, pydantic_core, yaml, aws_lambda_powertools)],
    "ecr_retention": sorted({{name.split(".")[1] for name in sys.modules if name.startswith("ecr_retention.")}}),
    "traced": sorted(aws_xray_sdk.core.patcher._PATCHED_MODULES),
    "compiled at import": compiled,
    "loaded": loaded,
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
# The report step's page (Jinja2 and the templates, from the asset) and sheet, of an empty run.
from datetime import UTC, datetime
from ecr_retention.domain.reporting.cost import StoragePrice
from ecr_retention.domain.reporting.run_report import RunFacts, run_report_of
from ecr_retention.report_page import render_page
from ecr_retention.report_sheet import render_sheet
now = datetime.now(UTC)
facts = RunFacts(run_id="asset", trigger="cli", dry_run=True, started_at=now, finished_at=now, repositories=[])
report = run_report_of(facts)
# The collector's way into eksClusters: the kubernetes client, from the asset, without its asyncio part.
import kubernetes
from ecr_retention.aws.eks_clusters import EksClusters
from ecr_retention.kube.client import ClusterLister
print(json.dumps({{
    "kubernetes": kubernetes.__file__.startswith({asset!r}) and callable(ClusterLister) and callable(EksClusters),
    "rulesFile": str(default_rules_file()),
    "policies": len(config.policies),
    "page": render_page(report, StoragePrice.for_region("eu-west-1")).startswith("<!DOCTYPE html>"),
    "sheet": render_sheet(report).startswith("repository,digest,"),
}}))
"""


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
    # The collector's spoke roles (none in this context), where its SPOKE_ROLES_FILE points.
    assert load_spoke_roles(directory / constants.ASSET_SPOKE_ROLES_FILE).role_arns == ()
    for handler in HANDLERS:
        assert (directory / "ecr_retention" / "handlers" / f"{handler}.py").is_file()
    [extension] = (directory / "pydantic_core").glob("_pydantic_core.*.so")
    version = constants.LAMBDA_PYTHON_VERSION.replace(".", "")
    assert extension.name == f"_pydantic_core.cpython-{version}-x86_64-linux-gnu.so"
    assert not (directory / "bin").exists()
    models = {path.name for path in (directory / "botocore" / "data").iterdir() if path.is_dir()}
    assert models == lambda_asset.BOTOCORE_SERVICES


@pytest.mark.slow
def test_the_asset_holds_only_the_part_of_the_package_that_the_functions_import(asset: tuple[Path, Path]) -> None:
    directory, _ = asset
    shipped = {path.name for path in (directory / "ecr_retention").iterdir()} - {"__pycache__"}
    assert shipped == SHIPPED
    assert {path.relative_to(lambda_asset.PACKAGE_SOURCE).parts[1] for path in lambda_asset.package_files()} == SHIPPED
    assert modules_in(directory) == shipped_modules(lambda_asset.PACKAGE_SOURCE / "ecr_retention")


def modules_in(directory: Path) -> set[str]:
    """The ecr_retention modules of an unpacked asset, by dotted name."""
    names = set()
    for path in (directory / "ecr_retention").rglob("*.py"):
        parts = path.relative_to(directory).with_suffix("").parts
        names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_no_module_of_the_cli_ships_and_every_handler_does() -> None:
    shipped = shipped_modules(lambda_asset.PACKAGE_SOURCE / "ecr_retention")
    assert not [module for module in shipped for cli in CLI_ONLY if module == cli or module.startswith(cli + ".")]
    handlers = {path.stem for path in (lambda_asset.PACKAGE_SOURCE / "ecr_retention" / "handlers").glob("*.py")}
    assert {f"ecr_retention.handlers.{name}" for name in handlers - {"__init__"}} <= shipped
    # a lazy import, inside the report step's function, is followed: the page ships with its templates
    assert "ecr_retention.report_page" in shipped
    files = {path.name for path in lambda_asset.package_files()}
    assert {"run.html.j2", "page.css", "page.js"} <= files


@pytest.mark.slow
def test_the_asset_carries_bytecode_of_the_runtime_python_when_this_machine_has_it(asset: tuple[Path, Path]) -> None:
    directory, _ = asset
    compiled = sorted(directory.rglob("*.pyc"))
    if lambda_asset.runtime_python() is None:
        assert compiled == []
        return
    tag = "cpython-" + constants.LAMBDA_PYTHON_VERSION.replace(".", "")
    expected = {source.parent / "__pycache__" / f"{source.stem}.{tag}.pyc" for source in directory.rglob("*.py")}
    assert set(compiled) == expected
    assert {path.read_bytes()[4:8] for path in compiled} == {UNCHECKED_HASH}


def test_the_hash_changes_with_the_spoke_roles_that_the_asset_ships() -> None:
    rules = Path(constants.DEFAULT_RULES_FILE).read_bytes()
    hashes = {
        lambda_asset.asset_hash(rules, "x86_64", "3.13", bytecode=True, spoke_role_arns=roles)
        for roles in ((), ("arn:aws:iam::210987654321:role/reader",), ("arn:aws:iam::210987654321:role/other",))
    }
    assert len(hashes) == 3
    assert lambda_asset.asset_hash(rules, "x86_64", "3.13", bytecode=True) in hashes


def test_the_hash_covers_only_what_ships_and_whether_bytecode_does() -> None:
    files = lambda_asset.package_files()
    assert lambda_asset.PACKAGE_SOURCE / "ecr_retention" / "handlers" / "evaluate.py" in files
    assert not [path for path in files if path.relative_to(lambda_asset.PACKAGE_SOURCE).parts[1] not in SHIPPED]
    rules = Path(constants.DEFAULT_RULES_FILE).read_bytes()
    hashes = {lambda_asset.asset_hash(rules, "x86_64", "3.13", bytecode=bytecode) for bytecode in (True, False)}
    assert len(hashes) == 2
    assert lambda_asset.asset_hash(rules, "x86_64", "3.13", bytecode=True) in hashes


def test_the_runtime_python_is_an_interpreter_of_exactly_the_runtime_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A python3.13 on the PATH that is another interpreter (a wrapper, a pyenv shim of an unselected version)
    is not taken; one that runs the runtime's version through a wrapper (pyenv's shim of a selected version) is
    resolved to the interpreter it runs, which starts without the wrapper's 0.14 s."""
    wrapper, interpreter = tmp_path / "python3.13", tmp_path / "versions" / "3.13.0" / "bin" / "python3.13"
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "no-pyenv"))
    found = []
    for tag in ("cpython-311", "cpython-313"):
        wrapper.write_text(f"#!/bin/sh\necho {tag}\necho {interpreter}\n")
        wrapper.chmod(0o755)
        lambda_asset.runtime_python.cache_clear()
        found.append(lambda_asset.runtime_python("3.13"))
    lambda_asset.runtime_python.cache_clear()
    assert found == [None, str(interpreter)]


def test_the_runtime_python_found_here_is_no_wrapper() -> None:
    python = lambda_asset.runtime_python()
    if python is None:
        pytest.skip(f"no python{constants.LAMBDA_PYTHON_VERSION} here")
    assert not Path(python).read_bytes().startswith(b"#!")  # the interpreter, not a script that starts one


def test_without_the_runtime_python_synth_says_so_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(lambda_asset, "runtime_python", lambda _version: None)
    lambda_asset.lambda_code(Path(constants.DEFAULT_RULES_FILE).read_bytes())
    [line] = capsys.readouterr().err.splitlines()
    assert f"no python{constants.LAMBDA_PYTHON_VERSION}" in line
    assert "cold start" in line


def test_the_bytecode_is_the_same_bytes_wherever_it_is_built(tmp_path: Path) -> None:
    python = lambda_asset.runtime_python()
    if python is None:
        pytest.skip(f"no python{constants.LAMBDA_PYTHON_VERSION} here: nothing is compiled")
    source = "RULES = {'keep', 'delete', 'archive', 'tag'}\n\ndef decide(x):\n    return x in RULES\n"
    builds = []
    for name in ("one", "elsewhere/two"):
        package = tmp_path / name / "pkg"
        package.mkdir(parents=True)
        (package / "rules.py").write_text(source)
        lambda_asset.compile_bytecode(python, tmp_path / name)
        [compiled] = (package / "__pycache__").glob("rules.*.pyc")
        builds.append(compiled.read_bytes())
    assert builds[0] == builds[1]
    assert builds[0][4:8] == UNCHECKED_HASH
    if sys.version_info[:2] == tuple(int(part) for part in constants.LAMBDA_PYTHON_VERSION.split(".")):
        assert marshal.loads(builds[0][16:]).co_filename == "/var/task/pkg/rules.py"


@pytest.mark.slow
def test_the_package_creates_clients_only_for_services_the_asset_keeps() -> None:
    requested = {
        service
        for path in lambda_asset.package_files()
        if path.suffix == ".py"
        for service in re.findall(r"""client\(\s*["']([a-z0-9-]+)["']""", path.read_text())
    }
    assert {"ecr", "s3", "ecs", "events", "lambda", "scheduler"} <= requested
    assert requested <= lambda_asset.BOTOCORE_SERVICES - {"xray"}


@pytest.mark.slow
def test_every_handler_imports_from_the_asset_in_a_clean_runtime_interpreter(
    asset: tuple[Path, Path], tmp_path: Path
) -> None:
    python = lambda_asset.runtime_python()
    if python is None:
        pytest.skip(f"no python{constants.LAMBDA_PYTHON_VERSION} here: the asset cannot be imported, only listed")
    directory, _ = asset
    times = {}
    for handler in HANDLERS:
        loaded = run_isolated(python, IMPORT.format(asset=str(directory), handler=handler, probed=PROBED), directory)
        assert loaded["handler"] is True
        assert loaded["version"] == [int(part) for part in constants.LAMBDA_PYTHON_VERSION.split(".")]
        assert all(str(file).startswith(str(directory)) for file in loaded["files"])  # type: ignore[attr-defined]
        assert set(loaded["ecr_retention"]) <= {name.removesuffix(".py") for name in SHIPPED}  # type: ignore[arg-type]
        assert loaded["compiled at import"] == []
        assert loaded["traced"] == ["botocore"]  # tracing is on in Lambda, and every AWS call is traced
        assert set(loaded["loaded"]) == LOADED[handler], handler  # type: ignore[arg-type]
        times[handler] = loaded["seconds"]
    checked = run_isolated(
        python, RUNTIME_CHECK.format(asset=str(directory), services=sorted(lambda_asset.BOTOCORE_SERVICES)), directory
    )
    assert checked == {
        "kubernetes": True,
        "rulesFile": str(directory / "retention.yaml"),
        "policies": 2,
        "page": True,
        "sheet": True,
    }
    assert not (directory / "kubernetes" / "aio").exists()

    archive = tmp_path / "asset.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        for path in sorted(directory.rglob("*")):
            zipped.write(path, path.relative_to(directory))
    print(
        f"\nasset: {directory_bytes(directory) / 2**20:.1f} MiB unzipped, {archive.stat().st_size / 2**20:.1f} MiB zipped"
    )
    for handler, seconds in times.items():
        print(f"cold import of ecr_retention.handlers.{handler} from the asset: {seconds * 1000:.0f} ms")  # type: ignore[operator]
