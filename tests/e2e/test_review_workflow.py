"""The pull-request check of examples/github/retention-review.yml, run for real (issue 28): the workflow's own
steps, read from the file (the base branch's rules from git, then the same `diff` invocation on the same files), as
bash runs them on a runner, against the bucket of the demo's emulator after its sweeps (moto in server mode). The
rules change widens a delete rule's glob; what the check posts is the markdown `diff --bucket` prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from ecr_retention_dev.demo.registry import BUCKET
from ecr_retention_dev.demo.runner import run_demo

pytestmark = pytest.mark.slow
WORKFLOW = Path(__file__).resolve().parents[2] / "examples" / "github" / "retention-review.yml"
WIDENED = ('tags: ["v*"], older_than: 45d', 'tags: ["*"], older_than: 45d')  # platform/*: every tag, not only v*


@dataclass(frozen=True)
class Check:
    code: str
    comment: str
    summary: str
    stderr: str


def steps() -> dict[str, dict[str, Any]]:
    document = yaml.safe_load(WORKFLOW.read_text())
    return {step["id"]: step for step in document["jobs"]["review"]["steps"] if "id" in step}


def workflow_env() -> dict[str, str]:
    document = yaml.safe_load(WORKFLOW.read_text())
    return {name: str(value) for name, value in document["env"].items()}


def git(directory: Path, *argv: str) -> None:
    identity = ("-c", "user.name=ci", "-c", "user.email=ci@example.com", "-c", "init.defaultBranch=main")
    subprocess.run(["git", *identity, *argv], cwd=directory, check=True, capture_output=True)


def pull_request(tmp_path: Path, rules: str) -> Path:
    """A repository whose main branch has the demo's rules, and a checkout of a pull request that widens a glob."""
    origin, checkout = tmp_path / "origin", tmp_path / "checkout"
    origin.mkdir()
    git(origin, "init")
    (origin / "retention.yaml").write_text(rules)
    git(origin, "add", "retention.yaml")
    git(origin, "commit", "-m", "rules")
    git(tmp_path, "clone", str(origin), str(checkout))
    assert WIDENED[0] in rules
    (checkout / "retention.yaml").write_text(rules.replace(*WIDENED))
    return checkout


def run_check(checkout: Path, runner_temp: Path, **overrides: str) -> Check:
    """The `base` and `diff` steps, as a runner runs them: bash -e, the workflow's and the step's environment."""
    runner_temp.mkdir(exist_ok=True)
    output, summary = runner_temp / "output", runner_temp / "summary"
    environment = {
        **os.environ,  # the demo's emulator: AWS_ENDPOINT_URL, fake credentials, the region
        **workflow_env(),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "RUNNER_TEMP": str(runner_temp),
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(summary),
        "BASE_REF": "main",  # ${{ github.base_ref }}
        "BUCKET": BUCKET,  # ${{ vars.ECR_RETENTION_BUCKET }}
        "REVIEW_REGION": "eu-west-1",  # ${{ vars.ECR_RETENTION_REVIEW_REGION }}: the demo prunes two Regions
        **overrides,
    }
    stderr = ""
    for step in ("base", "diff"):
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", steps()[step]["run"]],
            cwd=checkout,
            env=environment,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        stderr += done.stderr
    code = dict(line.split("=", 1) for line in output.read_text().splitlines())["code"]
    comment = (runner_temp / "retention-diff.md").read_text()
    return Check(code=code, comment=comment, summary=summary.read_text(), stderr=stderr)


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ecr_retention", *argv], capture_output=True, text=True, check=False)


def plans_both_ways(rules: Path, directory: Path) -> Check:
    """`plan --bucket` (the kept snapshots) and `plan --snapshot` of a snapshot read from ECR now, at one time."""
    directory.mkdir()
    now = "--now=2030-01-01T00:00:00Z"  # the same for both; the manifests' age does not matter to the comparison
    taken = cli("snapshot", "--out", str(directory / "s.json"), "--bucket", BUCKET, "--manifests", str(directory / "m"))
    assert taken.returncode == 0, taken.stderr
    live = cli(
        "plan",
        "--config",
        str(rules),
        "--snapshot",
        str(directory / "s.json"),
        "--manifests",
        str(directory / "m"),
        now,
        "--format",
        "json",
    )
    kept = cli("plan", "--config", str(rules), "--bucket", BUCKET, "--region", "eu-west-1", now, "--format", "json")
    return Check(code=str(kept.returncode), comment=kept.stdout, summary=live.stdout, stderr=kept.stderr)


@pytest.fixture(scope="module")
def checks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Check]:
    out = tmp_path_factory.mktemp("demo")
    results: dict[str, Check] = {}

    def review() -> None:  # while the emulator still runs, after both sweeps
        checkout = pull_request(tmp_path_factory.mktemp("git"), (out / "retention.yaml").read_text())
        temp = tmp_path_factory.mktemp("runner")
        results["default"] = run_check(checkout, temp / "default")
        results["strict"] = run_check(checkout, temp / "strict", FAIL_ON="--fail-on deletions-increase")
        results["plans"] = plans_both_ways(out / "retention.yaml", temp / "plans")

    code = run_demo(out=out, keep_running=True, write=lambda _line: None, wait=review)
    assert code == 0
    return results


def test_the_check_posts_what_the_widened_glob_deletes(checks: dict[str, Check]) -> None:
    check = checks["default"]
    assert check.code == "0", check.stderr
    headline = check.comment.splitlines()[2]
    assert headline.startswith("**this change deletes ")
    assert "more image" in headline
    assert "in 1 repository; no in-use image changes fate**" in headline
    assert "| platform/api | policies\\[4\\] |" in check.comment
    assert "<details><summary>platform/api: " in check.comment
    assert "the registry as the pipeline last read it" in check.comment  # how old the inputs are
    assert check.summary == check.comment  # the job summary is the comment


def test_a_condition_that_holds_fails_the_check_and_says_so(checks: dict[str, Check]) -> None:
    check = checks["strict"]
    assert check.code == "1"
    assert ":x: **fails** `--fail-on` deletions-increase: the new rules remove" in check.comment


def test_the_markdown_the_check_posts(checks: dict[str, Check], capsys: pytest.CaptureFixture[str]) -> None:
    """For the closing note: the comment, as posted."""
    with capsys.disabled():
        sys.stdout.write("\n" + checks["default"].comment)


def test_the_workflow_assumes_the_reviewer_role_and_posts_a_sticky_comment() -> None:
    document = yaml.safe_load(WORKFLOW.read_text())
    assert document["permissions"] == {"id-token": "write", "contents": "read", "pull-requests": "write"}
    job_steps = document["jobs"]["review"]["steps"]
    uses = {step["uses"].split("@")[0]: step.get("with", {}) for step in job_steps if "uses" in step}
    assert (
        uses["aws-actions/configure-aws-credentials"]["role-to-assume"] == "${{ vars.ECR_RETENTION_REVIEW_ROLE_ARN }}"
    )
    assert uses["marocchino/sticky-pull-request-comment"]["path"] == "${{ runner.temp }}/retention-diff.md"


def test_plan_bucket_plans_the_registry_the_last_sweep_left(checks: dict[str, Check]) -> None:
    plans = checks["plans"]
    kept, live = json.loads(plans.comment), json.loads(plans.summary)
    managed = [repository for repository in live["repositories"] if repository["policy"] is not None]
    assert kept["repositories"]
    # The kept snapshots are the registry as ECR shows it after the real sweep: the same plan of what is managed.
    assert kept == {**live, "repositories": managed}
    assert "plan: the registry as the pipeline last read it: 6 repositories" in plans.stderr
