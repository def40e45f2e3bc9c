"""The distribution a user installs (issue 45): the wheel and the sdist built from the tracked files carry the
Apache-2.0 license and the metadata the package index shows; installed into a fresh virtual environment with only
what it declares, the CLI answers --version and every --help, plans, diagnoses and diffs the examples exactly as the
repository's code does, and a command whose extra is missing says which to install in one line, exit 2.

Built once per session, offline (tests/support/distribution.py)."""

from __future__ import annotations

import argparse
import email
import email.message
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import trove_classifiers
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from ecr_retention import __version__
from ecr_retention.cli import build_parser, main
from support.distribution import (
    REPOSITORY,
    Installation,
    build_sdist,
    build_wheel,
    install,
    unpack_sdist,
)

pytestmark = pytest.mark.slow

NOW = "2026-11-30T06:00:00Z"
PACKAGE_README = REPOSITORY / "docs" / "package-readme.md"
GOLDEN_PLAN = REPOSITORY / "tests" / "golden" / "data" / "plan-examples.table.txt"


@dataclass(frozen=True)
class Built:
    wheel: Path
    sdist: Path

    def wheel_names(self) -> list[str]:
        with zipfile.ZipFile(self.wheel) as archive:
            return archive.namelist()

    def wheel_file(self, name: str) -> bytes:
        with zipfile.ZipFile(self.wheel) as archive:
            return archive.read(name)

    def metadata(self) -> email.message.Message:
        return email.message_from_bytes(self.wheel_file(f"{dist_info()}/METADATA"))


def dist_info() -> str:
    return f"ecr_retention-{__version__}.dist-info"


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    dist = tmp_path_factory.mktemp("dist")
    return Built(wheel=build_wheel(REPOSITORY, dist), sdist=build_sdist(REPOSITORY, dist))


@pytest.fixture(scope="session")
def base(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Installation:
    """`pipx install ecr-retention`: the wheel and its dependencies, no extra."""
    return install(built.wheel, tmp_path_factory.mktemp("base") / "venv")


@pytest.fixture(scope="session")
def with_kubernetes(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Installation:
    """`pipx install "ecr-retention[kubernetes]"`."""
    return install(built.wheel, tmp_path_factory.mktemp("kubernetes") / "venv", extras=("kubernetes",))


@pytest.fixture(scope="session")
def without_boto3(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Installation:
    """An installation that lost boto3 and botocore (`pip install --no-deps`, a hand-made environment)."""
    return install(built.wheel, tmp_path_factory.mktemp("no-boto3") / "venv", without=("boto3", "botocore"))


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Copies of the rules and the examples, the working directory of both this process and the installed CLI."""
    shutil.copy(REPOSITORY / "retention.yaml", tmp_path / "retention.yaml")
    shutil.copytree(REPOSITORY / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def subcommands() -> list[str]:
    (choices,) = (
        action.choices for action in build_parser()._actions if isinstance(action, argparse._SubParsersAction)
    )
    return sorted(choices)


def requirements_of(metadata: email.message.Message, extra: str | None) -> set[str]:
    found = set()
    for line in metadata.get_all("Requires-Dist") or []:
        requirement = Requirement(line)
        in_extra = requirement.marker is not None and requirement.marker.evaluate({"extra": extra or ""})
        if (requirement.marker is None and extra is None) or (extra is not None and in_extra):
            found.add(canonicalize_name(requirement.name))
    return found


def in_process(capsys: pytest.CaptureFixture[str], *arguments: str) -> subprocess.CompletedProcess[str]:
    """What the repository's code answers, for comparison with the installed CLI."""
    capsys.readouterr()
    code = main(list(arguments))
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(list(arguments), code, captured.out, captured.err)


def assert_one_line_naming(result: subprocess.CompletedProcess[str], command: str, extra: str) -> None:
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"ecr-retention {command}: error: ")
    assert f'pip install "ecr-retention[{extra}]"' in result.stderr


# --- the license -------------------------------------------------------------------------------------------------


def test_the_repository_is_licensed_apache_2_0() -> None:
    text = (REPOSITORY / "LICENSE").read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "END OF TERMS AND CONDITIONS" in text


def test_the_wheel_declares_apache_2_0_and_carries_the_license_file(built: Built) -> None:
    metadata = built.metadata()
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata.get_all("License-File") == ["LICENSE"]
    assert built.wheel_file(f"{dist_info()}/licenses/LICENSE") == (REPOSITORY / "LICENSE").read_bytes()
    # The expression says it; setuptools refuses a License classifier beside it.
    assert not [classifier for classifier in metadata.get_all("Classifier") or [] if classifier.startswith("License")]


def test_the_sdist_carries_the_license_and_builds_the_same_wheel(built: Built, tmp_path: Path) -> None:
    top = f"ecr_retention-{__version__}"
    assert sdist_file(built.sdist, f"{top}/LICENSE") == (REPOSITORY / "LICENSE").read_bytes()
    package_info = email.message_from_bytes(sdist_file(built.sdist, f"{top}/PKG-INFO"))
    assert package_info["License-Expression"] == "Apache-2.0"
    assert package_info.get_all("License-File") == ["LICENSE"]
    # pip installs an sdist by building its wheel: the same files as the wheel built from the tree.
    rebuilt = build_wheel(unpack_sdist(built.sdist, tmp_path / "unpacked"), tmp_path / "rebuilt")
    with zipfile.ZipFile(rebuilt) as archive:
        assert sorted(archive.namelist()) == sorted(built.wheel_names())


def sdist_file(sdist: Path, name: str) -> bytes:
    with tarfile.open(sdist) as archive:
        member = archive.extractfile(name)
        assert member is not None, name
        return member.read()


# --- the metadata the package index shows ------------------------------------------------------------------------


def test_the_metadata_names_the_version_the_readme_and_the_project_urls(built: Built) -> None:
    metadata = built.metadata()
    assert (metadata["Name"], metadata["Version"]) == ("ecr-retention", __version__)
    assert metadata["Requires-Python"] == ">=3.11"
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert metadata.get_payload() == PACKAGE_README.read_text()
    urls = dict(line.split(", ", 1) for line in metadata.get_all("Project-URL") or [])
    assert set(urls) == {"Homepage", "Documentation", "Source", "Issues"}
    assert all(url.startswith("https://") for url in urls.values())
    assert {"aws", "ecr", "kubernetes"} <= set((metadata["Keywords"] or "").split(","))


def test_the_package_readme_rules_validate_and_its_commands_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = PACKAGE_README.read_text()
    (rules,) = re.findall(r"```yaml\n(.*?)```", text, flags=re.DOTALL)
    (tmp_path / "retention.yaml").write_text(rules)
    assert in_process(capsys, "validate", str(tmp_path / "retention.yaml")).returncode == 0
    named = set(re.findall(r"ecr-retention ([a-z][a-z-]+)", text))
    assert {"validate", "snapshot", "plan", "export", "diff"} <= named
    assert named - set(subcommands()) == set()


def test_every_classifier_is_one_the_package_index_accepts(built: Built) -> None:
    classifiers = built.metadata().get_all("Classifier") or []
    assert [classifier for classifier in classifiers if classifier not in trove_classifiers.classifiers] == []
    assert {"Typing :: Typed", "Environment :: Console", "Programming Language :: Python :: 3.13"} <= set(classifiers)


def test_boto3_is_a_dependency_and_each_extra_brings_what_its_commands_import(built: Built) -> None:
    metadata = built.metadata()
    assert requirements_of(metadata, None) == {"pydantic", "pyyaml", "jinja2", "boto3", "shtab"}
    assert requirements_of(metadata, "aws") == {"boto3"}
    assert requirements_of(metadata, "kubernetes") == {"kubernetes", "python-dateutil"}
    assert requirements_of(metadata, "cdk") == {"aws-cdk-lib", "constructs"}
    assert set(metadata.get_all("Provides-Extra") or []) == {"aws", "kubernetes", "cdk"}


def test_the_pinned_versions_satisfy_the_declared_ranges(built: Built) -> None:
    pins = {}
    for name in ("requirements.txt", "requirements-dev.txt"):
        for line in (REPOSITORY / name).read_text().splitlines():
            if "==" in line and not line.startswith("#"):
                requirement = Requirement(line)
                pins[canonicalize_name(requirement.name)] = next(iter(requirement.specifier)).version
    declared = [Requirement(line) for line in built.metadata().get_all("Requires-Dist") or []]
    assert [str(one) for one in declared if not one.specifier.contains(pins[canonicalize_name(one.name)])] == []


def test_twine_accepts_both_distributions(built: Built) -> None:
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(built.wheel), str(built.sdist)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


# --- what the wheel holds ----------------------------------------------------------------------------------------


def test_the_wheel_holds_the_package_its_types_marker_and_templates_and_nothing_else(built: Built) -> None:
    names = built.wheel_names()
    assert {name.split("/")[0] for name in names} == {"ecr_retention", dist_info()}
    assert "ecr_retention/py.typed" in names
    templates = sorted((REPOSITORY / "lambdas/ecr_retention/report_page/templates").iterdir())
    assert templates
    for template in templates:
        assert built.wheel_file(f"ecr_retention/report_page/templates/{template.name}") == template.read_bytes()
    modules = subprocess.run(
        ["git", "-C", str(REPOSITORY), "ls-files", "lambdas/ecr_retention/*.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert modules
    assert [module for module in modules if module.removeprefix("lambdas/") not in names] == []
    assert [name for name in names if "__pycache__" in name or name.endswith((".pyc", ".pyo"))] == []


def test_every_file_of_the_wheel_is_one_git_tracks(built: Built) -> None:
    tracked = set(
        subprocess.run(
            ["git", "-C", str(REPOSITORY), "ls-files"], capture_output=True, text=True, check=True
        ).stdout.splitlines()
    )
    # ecr_retention/cdk/... is infra/... (lambdas/ecr_retention/cdk is a link to it).
    sources = {
        name: (REPOSITORY / "lambdas" / name).resolve().relative_to(REPOSITORY).as_posix()
        for name in built.wheel_names()
        if not name.startswith(dist_info())
    }
    assert sources
    assert {name: source for name, source in sources.items() if source not in tracked} == {}


# --- the installed CLI -------------------------------------------------------------------------------------------


def test_the_installed_cli_is_the_wheel_and_prints_its_version(base: Installation, tmp_path: Path) -> None:
    imported = python(base, tmp_path, "-c", "import ecr_retention; print(ecr_retention.__file__)").stdout.strip()
    assert Path(imported).is_relative_to(base.root / "lib")
    for result in (base.run("--version"), python(base, tmp_path, "-m", "ecr_retention", "--version")):
        assert (result.returncode, result.stdout, result.stderr) == (0, f"ecr-retention {__version__}\n", "")


def python(installation: Installation, cwd: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(installation.python), *arguments], cwd=cwd, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("command", ["", *subcommands()])
def test_every_help_works_from_the_base_install(base: Installation, command: str) -> None:
    result = base.run(*filter(None, [command]), "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: ecr-retention {command}".rstrip())
    assert result.stderr == ""


BASH_COMPLETION = """
source "$1"
complete_line() {
    COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; read -r -a COMP_WORDS <<< "$COMP_LINE"
    [[ $COMP_LINE == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMPREPLY=()
    _shtab_ecr_retention
    echo "${COMPREPLY[*]}"
}
complete_line ecr-retention pl
complete_line ecr-retention diff --fo
complete_line "ecr-retention diff --format "
"""


def test_bash_completes_the_commands_their_options_and_choices(base: Installation, tmp_path: Path) -> None:
    script = base.run("--print-completion", "bash")
    assert (script.returncode, script.stderr) == (0, "")
    (tmp_path / "ecr-retention.bash").write_text(script.stdout)
    completed = subprocess.run(
        ["bash", "-c", BASH_COMPLETION, "bash", str(tmp_path / "ecr-retention.bash")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert completed.stdout.splitlines() == ["plan", "--format", "table json markdown"]


def test_plan_of_the_examples_is_the_recorded_table(base: Installation, workspace: Path) -> None:
    result = base.run(
        *("plan", "--config", "retention.yaml", "--snapshot", "examples/snapshot.json"),
        *("--manifests", "examples/in-use", "--now", NOW),
        cwd=workspace,
    )
    assert (result.returncode, result.stderr) == (1, "")  # tests/golden/data/plan-examples.exit-codes.txt
    assert result.stdout == GOLDEN_PLAN.read_text()


def test_doctor_on_the_examples_answers_as_the_repository_code(
    base: Installation, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arguments = (
        *("doctor", "--policy", "examples/lifecycle/policy-incident.json"),
        *("--images", "examples/lifecycle/describe-images.json", "--manifests", "examples/lifecycle/in-use"),
        *("--now", NOW),
    )
    installed, expected = base.run(*arguments, cwd=workspace), in_process(capsys, *arguments)
    assert "ERROR" in installed.stdout
    assert (installed.returncode, installed.stdout, installed.stderr) == (
        expected.returncode,
        expected.stdout,
        expected.stderr,
    )


def test_diff_as_markdown_on_the_examples_answers_as_the_repository_code(
    base: Installation, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = (workspace / "retention.yaml").read_text()
    fewer = rules.replace("older_than: 30d, keep_newest: 20", "older_than: 30d, keep_newest: 10")
    assert fewer != rules
    (workspace / "fewer.yaml").write_text(fewer)
    arguments = (
        *("diff", "--base", "retention.yaml", "--config", "fewer.yaml", "--snapshot", "examples/snapshot.json"),
        *("--manifests", "examples/in-use", "--now", NOW, "--format", "markdown"),
    )
    installed, expected = base.run(*arguments, cwd=workspace), in_process(capsys, *arguments)
    assert "**this change deletes 6 more images (1.5 GiB) in 1 repository;" in installed.stdout
    assert (installed.returncode, installed.stdout, installed.stderr) == (
        expected.returncode,
        expected.stdout,
        expected.stderr,
    )


# --- a command whose extra is missing ----------------------------------------------------------------------------


def test_export_without_the_kubernetes_extra_names_it_in_one_line(base: Installation, tmp_path: Path) -> None:
    result = base.run("export", "--cluster", "prod", "--out", str(tmp_path / "prod.json"))
    assert_one_line_naming(result, "export", "kubernetes")
    assert not (tmp_path / "prod.json").exists()


def test_export_with_the_kubernetes_extra_goes_on_to_read_the_kubeconfig(
    with_kubernetes: Installation, tmp_path: Path
) -> None:
    missing = tmp_path / "kubeconfig"
    result = with_kubernetes.run("export", "--cluster", "prod", "--out", "prod.json", "--kubeconfig", str(missing))
    assert (result.returncode, result.stderr) == (
        2,
        f"ecr-retention export: error: kubeconfig {missing}: no such file\n",
    )


def test_demo_from_the_package_says_it_runs_from_a_clone(base: Installation) -> None:
    result = base.run("demo")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("ecr-retention demo: the demo is not installed; install ecr-retention-dev")


AWS_COMMANDS = {
    "snapshot": ("--out", "snapshot.json"),
    "export-aws": ("--out", "aws.json"),
    "export": ("--cluster", "prod", "--bucket", "my-inventory"),
    "run": ("--config", "retention.yaml", "--bucket", "my-inventory"),
    "tag": ("--config", "retention.yaml", "--bucket", "my-inventory"),
    "restore": ("--repository", "app", "--tag", "v1"),
    "plan": ("--config", "retention.yaml", "--bucket", "my-inventory"),
    "diff": ("--base", "retention.yaml", "--config", "retention.yaml", "--bucket", "my-inventory"),
    "lifecycle-diff": (
        *("--policy", "examples/lifecycle/policy-fixed.json", "--base", "examples/lifecycle/policy-incident.json"),
        *("--bucket", "my-inventory", "--repository", "app"),
    ),
}


@pytest.mark.parametrize("command", sorted(AWS_COMMANDS))
def test_a_command_that_talks_to_aws_without_boto3_names_the_aws_extra(
    without_boto3: Installation, workspace: Path, command: str
) -> None:
    result = without_boto3.run(command, *AWS_COMMANDS[command], cwd=workspace)
    assert_one_line_naming(result, command, "aws")
    assert "boto3" in result.stderr


def test_the_offline_commands_need_no_boto3(without_boto3: Installation, workspace: Path) -> None:
    result = without_boto3.run(
        *("plan", "--config", "retention.yaml", "--snapshot", "examples/snapshot.json"),
        *("--manifests", "examples/in-use", "--now", NOW),
        cwd=workspace,
    )
    assert (result.returncode, result.stdout) == (1, GOLDEN_PLAN.read_text())
