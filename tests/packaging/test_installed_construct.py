"""The EcrRetention construct from the installed wheel, in a CDK app outside the repository (issue 45, item 3).

The wheel is built from the tracked files and installed with its `cdk` extra into fresh virtual environments, offline
(support.distribution: the dependencies it declares, and only those, come from a view of this repository's .venv,
where the editable ecr_retention is never activated). A consumer app in a temporary directory synthesizes from that
install, with the pip bundling skipped as the infra tests skip it (the `aws:cdk:bundling-stacks` context): the asset
hash is the package's own (lambda_asset.asset_hash, from the installed files), which the bundling does not change.
Compared with app.py's synthesis in the repository: the same templates, byte for byte; from an install without
bytecode and one with it (pip's default): the same asset hash; under an empty context (none of cdk.json's feature
flags) and in a stack of the user's: a synthesis with the same functions and the same forwarder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.distribution import build_wheel, install
from support.infra_stacks import DEV_ARN, PROD_ARN, RULES

REPOSITORY = Path(__file__).resolve().parents[2]
HOME, OTHER = "eu-west-1", "us-east-1"
# The deployment both apps synthesize: app.py from the context, the consumer from typed properties.
CONTEXT = {
    "reportEmails": ["platform@example.com"],
    "exporterClusterArns": [PROD_ARN, DEV_ARN],
    "mapConcurrency": 25,
    "regions": [HOME, OTHER],
}
SKIP_BUNDLING = {"aws:cdk:bundling-stacks": []}
STACKS = ("EcrRetention", f"EcrRetentionEvents-{OTHER}")

CONSUMER_APP = """\
import json
import sys
from pathlib import Path

import aws_cdk as cdk

import ecr_retention
from ecr_retention.cdk import DeploySettings, EcrRetention, EcrRetentionStack, forwarder_stacks, lambda_asset
from ecr_retention.cdk import spoke_templates
from ecr_retention.loading import load_config

flavour, outdir, context = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
app = cdk.App(outdir=outdir, context=context)
if flavour == "own-stack":
    settings = DeploySettings(
        rules_file=Path("retention.yaml"),
        report_emails=("platform@example.com",),
        exporter_cluster_arns=({prod!r}, {dev!r}),
        map_concurrency=25,
        regions=({home!r}, {other!r}),
    )
    stack = EcrRetentionStack(
        app, "EcrRetention", settings=settings, description={description!r}, tags={{"project": "ecr-retention"}}
    )
    retention = stack.retention
else:
    stack = cdk.Stack(app, "Platform")
    retention = EcrRetention(
        stack,
        "Retention",
        rules=load_config("retention.yaml"),
        report_emails=["platform@example.com"],
        exporter_cluster_arns=[{prod!r}, {dev!r}],
        regions=[{home!r}, {other!r}],
    )
forwarder_stacks(app, retention)
app.synth()
package_root = lambda_asset.PACKAGE_ROOT
print(json.dumps({{
    "package": ecr_retention.__file__,
    "lock": str(lambda_asset.LOCK_FILE),
    "templates": [str(spoke_templates.template_path(name)) for name in spoke_templates.TEMPLATES],
    "shipped": [path.relative_to(package_root).as_posix() for path in lambda_asset.package_files()],
    "bytecode": sum(1 for _ in package_root.rglob("*.pyc")),
}}))
"""


def consumer_app(directory: Path) -> Path:
    from ecr_retention.cdk import constants

    directory.mkdir(parents=True)
    (directory / "retention.yaml").write_text(RULES)
    app = directory / "app.py"
    app.write_text(
        CONSUMER_APP.format(prod=PROD_ARN, dev=DEV_ARN, home=HOME, other=OTHER, description=constants.STACK_DESCRIPTION)
    )
    return app


def installed_environment(root: Path, wheel: Path, *, compile_bytecode: bool) -> Path:
    """The wheel with its `cdk` extra, as support.distribution installs it (without bytecode); with compile_bytecode,
    then compiled as `pip install` does by default. Its Python."""
    python = install(wheel, root, extras=("cdk",)).python
    if compile_bytecode:
        package = subprocess.run(
            [str(python), "-c", "import pathlib, ecr_retention; print(pathlib.Path(ecr_retention.__file__).parent)"],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        ).stdout.strip()
        subprocess.run([str(python), "-m", "compileall", "-q", package], check=True)
    return python


def synthesize(python: Path, app: Path, flavour: str, outdir: Path, context: dict[str, Any]) -> dict[str, Any]:
    env = {**os.environ, "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20"}
    if python.parent.parent.name == "no-bytecode":
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # nor written at import: the install stays without any
    result = subprocess.run(
        [str(python), str(app), flavour, str(outdir), json.dumps(context)],
        cwd=app.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return report


def templates(outdir: Path, stacks: tuple[str, ...] = STACKS) -> dict[str, dict[str, Any]]:
    return {name: json.loads((outdir / f"{name}.template.json").read_text()) for name in stacks}


def asset_keys(template: dict[str, Any]) -> set[str]:
    """The S3 keys of the functions' code: the asset hash, as a deployment sees it."""
    return {
        resource["Properties"]["Code"]["S3Key"]
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::Lambda::Function" and "S3Key" in resource["Properties"].get("Code", {})
    }


def resource_types(template: dict[str, Any]) -> dict[str, int]:
    counted: dict[str, int] = {}
    for resource in template["Resources"].values():
        counted[resource["Type"]] = counted.get(resource["Type"], 0) + 1
    return counted


@pytest.fixture(scope="module")
def repository_synthesis(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """app.py in the repository, from its cdk.json and the context, as `cdk synth -c ...` runs it."""
    directory = tmp_path_factory.mktemp("repository")
    rules = directory / "retention.yaml"
    rules.write_text(RULES)
    outdir = directory / "cdk.out"
    env = {
        **os.environ,
        "CDK_CONTEXT_JSON": json.dumps({**CONTEXT, **SKIP_BUNDLING, "config": str(rules)}),
        "CDK_OUTDIR": str(outdir),
        "CDK_DEFAULT_REGION": HOME,
    }
    result = subprocess.run(
        [sys.executable, str(REPOSITORY / "app.py")],
        cwd=REPOSITORY,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return templates(outdir)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The wheel, a consumer app outside the repository, and two installs of the wheel: with bytecode, without."""
    root = tmp_path_factory.mktemp("consumer")
    assert REPOSITORY not in root.parents
    wheel = build_wheel(REPOSITORY, root / "dist")
    return {
        "wheel": wheel,
        "app": consumer_app(root / "platform-app"),
        "compiled": installed_environment(root / "compiled", wheel, compile_bytecode=True),
        "no-bytecode": installed_environment(root / "no-bytecode", wheel, compile_bytecode=False),
        "root": root,
    }


def repository_flags() -> dict[str, Any]:
    from ecr_retention.cdk.app_context import cdk_json_context

    return cdk_json_context(REPOSITORY / "cdk.json")


@pytest.fixture(scope="module")
def compiled_synthesis(installed: dict[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The consumer's own-stack app from the install with bytecode, under this repository's flags: its report and
    templates."""
    outdir = installed["root"] / "own-stack.out"
    report = synthesize(
        installed["compiled"], installed["app"], "own-stack", outdir, {**repository_flags(), **SKIP_BUNDLING}
    )
    return report, templates(outdir)


@pytest.mark.slow
def test_the_installed_construct_synthesizes_what_app_py_synthesizes_in_the_repository(
    installed: dict[str, Any],
    compiled_synthesis: tuple[dict[str, Any], dict[str, dict[str, Any]]],
    repository_synthesis: dict[str, dict[str, Any]],
) -> None:
    report, synthesized = compiled_synthesis

    # The wheel's package, not the repository's editable one, with its lock as package data.
    site_packages = installed["compiled"].parent.parent / "lib"
    assert Path(report["package"]).is_relative_to(site_packages), report["package"]
    assert Path(report["lock"]).is_file()
    assert Path(report["lock"]).is_relative_to(site_packages)
    # The templates deployed elsewhere are package data too.
    assert len(report["templates"]) == 3
    assert all(Path(path).is_file() and Path(path).is_relative_to(site_packages) for path in report["templates"])
    # Nothing of the constructs (nor the CLI) ships in the functions' asset.
    assert not [path for path in report["shipped"] if path.startswith(("cdk/", "commands/"))]
    assert "handlers/evaluate.py" in report["shipped"]
    assert synthesized == repository_synthesis


@pytest.mark.slow
def test_an_install_without_bytecode_gives_the_same_asset_hash(
    installed: dict[str, Any], compiled_synthesis: tuple[dict[str, Any], dict[str, dict[str, Any]]]
) -> None:
    """pip compiles bytecode into site-packages unless told --no-compile: the same release must be the same asset
    either way (distribution-2026-12.md, pitfall 1)."""
    compiled_report, compiled = compiled_synthesis
    outdir = installed["root"] / "no-bytecode.out"
    report = synthesize(
        installed["no-bytecode"], installed["app"], "own-stack", outdir, {**repository_flags(), **SKIP_BUNDLING}
    )

    assert compiled_report["bytecode"] > 0
    assert report["bytecode"] == 0
    [asset] = asset_keys(templates(outdir)["EcrRetention"])
    assert {asset} == asset_keys(compiled["EcrRetention"])
    assert templates(outdir) == compiled


@pytest.mark.slow
def test_the_construct_in_a_users_stack_synthesizes_under_an_empty_context(
    installed: dict[str, Any], repository_synthesis: dict[str, dict[str, Any]]
) -> None:
    """None of cdk.json's feature flags, a stack of the user's, a loaded config and flat properties: the functions, the
    workflow and the forwarder are all there, from the same code (the rules document differs: it ships as JSON)."""
    outdir = installed["root"] / "users-stack.out"
    synthesize(installed["compiled"], installed["app"], "users-stack", outdir, dict(SKIP_BUNDLING))

    synthesized = templates(outdir, ("Platform", f"EcrRetentionEvents-{OTHER}"))
    users, ours = synthesized["Platform"], repository_synthesis["EcrRetention"]
    # The same resources, by type and number (the feature flags change some properties, not what exists).
    assert resource_types(users) == resource_types(ours)
    assert resource_types(users)["AWS::Lambda::Function"] >= 7
    assert len(asset_keys(users)) == 1
    # The construct's id begins its logical IDs in a user's stack (not "Default": those of app.py's stack).
    # (RetentionInventoryBucketName<hash of the path>).
    assert sorted(name[: -len("0123ABCD")] for name in users["Outputs"]) == sorted(
        f"Retention{name}" for name in ours["Outputs"]
    )
    assert resource_types(synthesized[f"EcrRetentionEvents-{OTHER}"]) == resource_types(
        repository_synthesis[f"EcrRetentionEvents-{OTHER}"]
    )
