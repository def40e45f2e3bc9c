"""The pull-request check of examples/github/retention-review.yml, run for real (issues 28 and 45): the workflow's
review step, the composite action it uses (action.yml) executed as a runner executes it, with the step's `with:` and
`env:` read from the file, against the bucket of the demo's emulator after its sweeps (moto in server mode). The rules
change widens a delete rule's glob; what the check posts is the markdown `diff --bucket` prints."""

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
from support.github_action import Contexts, evaluated_step, install_stub_pipx, pull_request_event, run_action

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "github" / "retention-review.yml"
WIDENED = ('tags: ["v*"], older_than: 45d', 'tags: ["*"], older_than: 45d')  # platform/*: every tag, not only v*


@dataclass(frozen=True)
class Check:
    code: str
    comment: str
    summary: str
    stderr: str


def workflow() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text())
    return document


def review_step() -> dict[str, Any]:
    step: dict[str, Any] = next(step for step in workflow()["jobs"]["review"]["steps"] if step.get("id") == "review")
    return step


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
    """The example's review step as a runner runs it: its `with:` and `env:` evaluated (the repository's variables,
    the credentials step's outputs), the action's composite steps run; a stub pipx runs the installed CLI."""
    runner_temp.mkdir(exist_ok=True)
    install_stub_pipx(runner_temp)
    (runner_temp / "event.json").write_text(json.dumps(pull_request_event()))
    credentials = {  # the demo's emulator takes any: these stand for the reviewer role's session
        "aws-access-key-id": os.environ["AWS_ACCESS_KEY_ID"],
        "aws-secret-access-key": os.environ["AWS_SECRET_ACCESS_KEY"],
        "aws-session-token": os.environ.get("AWS_SESSION_TOKEN", ""),
    }
    github = {"base_ref": "main", "token": "ghs_runner_token"}
    contexts = Contexts(inputs={}, github=github, steps={"aws": {"outputs": credentials}})
    # The demo prunes two Regions: ECR_RETENTION_REVIEW_REGION names the one the check plans.
    contexts.vars = {
        "ECR_RETENTION_BUCKET": BUCKET,
        "ECR_RETENTION_REVIEW_REGION": "eu-west-1",
        "AWS_REGION": "eu-west-1",
    }
    inputs, step_env = evaluated_step(review_step(), contexts)
    environment = {
        **{
            name: value
            for name, value in os.environ.items()
            if not name.startswith(("GITHUB_", "AWS_ACCESS", "AWS_SECRET", "AWS_SESSION"))
        },
        **step_env,
        "PATH": f"{runner_temp}{os.pathsep}{os.environ['PATH']}",
        "RUNNER_TEMP": str(runner_temp),
        "GITHUB_EVENT_PATH": str(runner_temp / "event.json"),
        "GITHUB_REPOSITORY": "acme/platform-config",
        "PIPX_CALLS": str(runner_temp / "pipx-calls"),
        "ECR_RETENTION_BIN": str(Path(sys.executable).parent / "ecr-retention"),
    }
    run = run_action(ROOT / "action.yml", inputs | overrides, env=environment, cwd=checkout, github=github)
    assert run.outputs["exit-code"] == str(run.code), run.log
    comment = Path(run.outputs["markdown-file"]).read_text()
    assert run.outputs["comment-body"].strip() == comment.strip()
    return Check(code=str(run.code), comment=comment, summary=run.summary, stderr=run.log)


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
        results["strict"] = run_check(checkout, temp / "strict", **{"fail-on": "deletions-increase"})
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


def test_the_workflow_assumes_the_reviewer_role_and_posts_the_comment_from_a_job_without_it() -> None:
    document = workflow()
    review, comment = document["jobs"]["review"], document["jobs"]["comment"]
    assert review["permissions"] == {"id-token": "write", "contents": "read"}
    assert comment["permissions"] == {"pull-requests": "write"}
    uses = {step["uses"].split("@")[0]: step.get("with", {}) for step in review["steps"] if "uses" in step}
    assert (
        uses["aws-actions/configure-aws-credentials"]["role-to-assume"] == "${{ vars.ECR_RETENTION_REVIEW_ROLE_ARN }}"
    )
    assert review["outputs"]["comment-body"] == "${{ steps.review.outputs.comment-body }}"
    (post,) = comment["steps"]
    assert post["uses"].split("@")[0] == "OWNER/ecr-retention/action/comment"
    assert post["with"]["body"] == "${{ needs.review.outputs.comment-body }}"


def test_plan_bucket_plans_the_registry_the_last_sweep_left(checks: dict[str, Check]) -> None:
    plans = checks["plans"]
    kept, live = json.loads(plans.comment), json.loads(plans.summary)
    managed = [repository for repository in live["repositories"] if repository["policy"] is not None]
    assert kept["repositories"]
    # The kept snapshots are the registry as ECR shows it after the real sweep: the same plan of what is managed.
    assert kept == {**live, "repositories": managed}
    assert "plan: the registry as the pipeline last read it: 6 repositories" in plans.stderr
