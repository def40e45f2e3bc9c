"""The GitHub Action for reviews (action.yml, action/comment/action.yml, action/*.py) and the example workflow.

Both pass zizmor (offline) and the GitHub Actions schemas. The action's steps are executed as the runner executes a
composite action: each `run:` with `bash -eo pipefail`, its `env:` and `if:` evaluated from the inputs and the earlier
steps' outputs, fresh GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files per step, a real pull_request event. A stub `pipx`
on PATH records each call and runs the installed `ecr-retention` (the review itself is real, on examples/), and a
loopback HTTP server plays GitHub's REST API for the sticky comment. No Docker, no AWS, no network."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import yaml

import ecr_retention
from support.github_action import REPOSITORY, ActionRun, install_stub_pipx, pull_request_event, run_action

ROOT = Path(__file__).resolve().parents[2]
ACTION = ROOT / "action.yml"
COMMENT_ACTION = ROOT / "action" / "comment" / "action.yml"
WORKFLOW = ROOT / "examples" / "github" / "retention-review.yml"
BIN = Path(sys.executable).parent
SNAPSHOT = ROOT / "examples" / "snapshot.json"
IN_USE = ROOT / "examples" / "in-use"
LIFECYCLE = ROOT / "examples" / "lifecycle"
SUMMARY_LIMIT = 1024 * 1024
COMMENT_LIMIT = 64_000
# README's example tightened: the version images of `app` beyond the newest 5 (not 20) and older than 30 days are
# newly deleted, at least 10 of them whatever the day the test runs (the images only grow older).
TIGHTER = ("keep_newest: 20", "keep_newest: 5")
DELETES_MORE = re.compile(r"this change deletes 1[0-5] more images")
# Stands in for a review of a registry far larger than examples/: a markdown of 2 MiB (the CLI keeps its own under
# 60,000 characters, so only such a stand-in can reach the summary's cap).
HUGE_REVIEW = """#!{python}
import sys
if sys.argv[1:] == ["--version"]:
    print("ecr-retention {version}")
    sys.exit(0)
print("### Retention rules review\\n")
for repository in range(2000):
    print(f"<details><summary>repository-{{repository}}</summary>\\n")
    print("| image | change |\\n|---|---|")
    for image in range(30):
        print(f"| `{{image:064d}}` | keep → delete |")
    print("\\n</details>\\n")
sys.exit(1)
"""


# ---- GitHub's REST API for issue comments, on loopback -----------------------------------------------------------


class FakeGitHub(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), CommentsHandler)
        # 120 comments of others first: the review's comment is found on the second page of 100.
        self.comments: dict[int, dict[str, Any]] = {
            number: {
                "id": number,
                "body": f"LGTM {number} <!-- ecr-retention-review:default -->",
                "user": {"login": f"reviewer-{number}"},
            }
            for number in range(1, 121)
        }
        self.requests: list[tuple[str, str, str]] = []  # method, path, Authorization

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def of_review(self) -> list[dict[str, Any]]:
        return [c for c in self.comments.values() if c["body"].startswith("<!-- ecr-retention-review:")]


class CommentsHandler(BaseHTTPRequestHandler):
    server: FakeGitHub
    LIST = re.compile(rf"^/repos/{REPOSITORY}/issues/(\d+)/comments$")
    ONE = re.compile(rf"^/repos/{REPOSITORY}/issues/comments/(\d+)$")

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test asserts on `requests`."""

    def answer(self, status: int, document: Any) -> None:
        payload = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def record(self) -> tuple[str, dict[str, list[str]]]:
        url = urlparse(self.path)
        self.server.requests.append((self.command, url.path, self.headers.get("Authorization", "")))
        return url.path, parse_qs(url.query)

    def body(self) -> dict[str, Any]:
        document: dict[str, Any] = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        return document

    def do_GET(self) -> None:
        path, query = self.record()
        if not self.LIST.match(path):
            return self.answer(404, {"message": "Not Found"})
        per_page, page = int(query["per_page"][0]), int(query["page"][0])
        comments = sorted(self.server.comments.values(), key=lambda comment: int(comment["id"]))
        return self.answer(200, comments[(page - 1) * per_page : page * per_page])

    def do_POST(self) -> None:
        path, _ = self.record()
        if not self.LIST.match(path):
            return self.answer(404, {"message": "Not Found"})
        number = max(self.server.comments) + 1
        self.server.comments[number] = {
            "id": number,
            "body": self.body()["body"],
            "html_url": f"/c/{number}",
            "user": {"login": "github-actions[bot]"},
        }
        return self.answer(201, self.server.comments[number])

    def do_PATCH(self) -> None:
        path, _ = self.record()
        match = self.ONE.match(path)
        if not match or int(match.group(1)) not in self.server.comments:
            return self.answer(404, {"message": "Not Found"})
        comment = self.server.comments[int(match.group(1))]
        comment["body"] = self.body()["body"]
        return self.answer(200, comment | {"html_url": f"/c/{comment['id']}"})


@pytest.fixture
def github_api() -> Iterator[FakeGitHub]:
    server = FakeGitHub()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


# ---- the runner's environment -------------------------------------------------------------------------------------


def git(cwd: Path, *arguments: str) -> str:
    return subprocess.run(["git", *arguments], cwd=cwd, capture_output=True, text=True, check=True).stdout


def commit_all(cwd: Path, message: str) -> None:
    git(cwd, "add", "-A")
    git(cwd, "-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-q", "-m", message)


@dataclass
class Runner:
    workspace: Path
    temp: Path
    env: dict[str, str]

    @property
    def calls(self) -> list[list[str]]:
        path = Path(self.env["PIPX_CALLS"])
        return [line.split("\t") for line in path.read_text().splitlines()] if path.exists() else []

    def event(self, head_repository: str | None) -> None:
        Path(self.env["GITHUB_EVENT_PATH"]).write_text(json.dumps(pull_request_event(head_repository)))

    def run(self, inputs: Mapping[str, str], action_file: Path = ACTION) -> ActionRun:
        github = {"base_ref": "main", "token": "ghs_runner_token"}
        return run_action(action_file, inputs, env=self.env, cwd=self.workspace, github=github)


@pytest.fixture
def runner(tmp_path: Path) -> Runner:
    """A checkout of a pull request that tightens the README's rules (base branch `main`), on a stub runner."""
    workspace, temp, stubs = tmp_path / "workspace", tmp_path / "runner-temp", tmp_path / "bin"
    for directory in (workspace, temp, stubs):
        directory.mkdir()
    git(workspace, "init", "-q", "-b", "main")
    rules = (ROOT / "retention.yaml").read_text()
    (workspace / "retention.yaml").write_text(rules)
    commit_all(workspace, "rules")
    git(workspace, "checkout", "-q", "-b", "tighter")
    assert TIGHTER[0] in rules
    (workspace / "retention.yaml").write_text(rules.replace(*TIGHTER))
    commit_all(workspace, "tighter rules")
    install_stub_pipx(stubs)
    env = {name: value for name, value in os.environ.items() if not name.startswith(("GITHUB_", "RUNNER_"))}
    env |= {
        "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}",
        "RUNNER_TEMP": str(temp),
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(tmp_path / "event.json"),
        "GITHUB_REPOSITORY": REPOSITORY,
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_API_URL": "http://127.0.0.1:9",  # nothing listens: a test that comments sets its server
        "GITHUB_RUN_ID": "4242",
        "PIPX_CALLS": str(tmp_path / "pipx-calls"),
        "ECR_RETENTION_BIN": str(BIN / "ecr-retention"),
        "AWS_SECRET_ACCESS_KEY": "review-role-secret",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "oidc-request-token",
        "ACTIONS_ID_TOKEN_REQUEST_URL": "http://127.0.0.1:9/token",
    }
    runner = Runner(workspace, temp, env)
    runner.event(REPOSITORY)
    return runner


def snapshot_inputs(**more: str) -> dict[str, str]:
    return {"snapshot": str(SNAPSHOT), "manifests": str(IN_USE), **more}


# ---- the files themselves -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("audited", [ACTION, COMMENT_ACTION, WORKFLOW], ids=lambda path: str(path.relative_to(ROOT)))
def test_zizmor_offline_finds_nothing_in_the_action_or_the_example_workflow(audited: Path) -> None:
    audit = subprocess.run(
        [str(BIN / "zizmor"), "--offline", "--persona", "auditor", "--no-progress", str(audited)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert "No findings" in audit.stdout


@pytest.mark.parametrize(
    ("schema", "checked"),
    [
        ("vendor.github-actions", ACTION),
        ("vendor.github-actions", COMMENT_ACTION),
        ("vendor.github-workflows", WORKFLOW),
    ],
    ids=["action.yml", "action/comment/action.yml", "retention-review.yml"],
)
def test_the_action_and_the_workflow_match_github_schemas(schema: str, checked: Path) -> None:
    check = subprocess.run(
        [str(BIN / "check-jsonschema"), "--builtin-schema", schema, str(checked)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_action_runs_the_release_it_is_by_default() -> None:
    default = yaml.safe_load(ACTION.read_text())["inputs"]["version"]["default"]
    assert default == ecr_retention.__version__ == importlib.metadata.version("ecr-retention")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project.get("version", default) == default  # a static version, where pyproject.toml still has one


def test_the_example_workflow_keeps_aws_credentials_to_the_review_step() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    review, comment = workflow["jobs"]["review"], workflow["jobs"]["comment"]
    assert workflow["permissions"] == {}
    assert "id-token" not in comment["permissions"]
    assert "pull-requests" not in review["permissions"]
    assert "group" in workflow["concurrency"]
    credentials = next(step for step in review["steps"] if "configure-aws-credentials" in step.get("uses", ""))
    assert credentials["with"]["output-env-credentials"] is False
    holders = [step for step in review["steps"] if "AWS_SECRET_ACCESS_KEY" in step.get("env", {})]
    assert [step["id"] for step in holders] == ["review"]
    assert all(re.search(r"@[0-9a-f]{40} # v", line) for line in WORKFLOW.read_text().splitlines() if "uses:" in line)


# ---- the review --------------------------------------------------------------------------------------------------


def test_a_review_writes_the_summary_and_the_outputs_and_passes_when_no_condition_holds(runner: Runner) -> None:
    run = runner.run(snapshot_inputs(**{"fail-on": "deletions-over 1000\nbytes-over 1TiB"}))

    assert run.code == 0, run.log
    assert run.step("Exit with the review's code").code is None
    assert run.summary.startswith("### Retention rules review\n\n**this change deletes 1")
    assert DELETES_MORE.search(run.summary)
    assert run.outputs["exit-code"] == "0"
    assert Path(run.outputs["markdown-file"]).read_text() == run.summary
    assert run.outputs["summary-cut"] == run.outputs["comment-cut"] == "false"
    assert run.outputs["comment-body"].strip() == run.summary.strip()
    assert run.outputs["skipped"] == ""


def test_a_condition_that_holds_fails_the_action_with_exit_code_1(runner: Runner) -> None:
    run = runner.run(snapshot_inputs(**{"fail-on": "bytes-over 50GiB, deletions-over 3"}))

    assert run.code == 1
    assert run.outputs["exit-code"] == "1"
    assert ":x: **fails** `--fail-on` deletions-over 3" in run.summary
    assert "::error title=ecr-retention review::ecr-retention diff exited 1" in run.log


def test_the_cli_is_the_pinned_release_installed_without_aws_credentials_or_the_oidc_token(runner: Runner) -> None:
    run = runner.run(snapshot_inputs(version=ecr_retention.__version__, python="python3.12"))

    assert run.code == 0, run.log
    spec = f"run --python python3.12 --spec ecr-retention[aws]=={ecr_retention.__version__} ecr-retention"
    (install_aws, install_oidc, install), (review_aws, review_oidc, review) = runner.calls
    assert install == f"{spec} --version"
    assert (install_aws, install_oidc) == ("", "")
    assert review.startswith(f"{spec} diff --base ")
    assert (review_aws, review_oidc) == ("aws", "")
    assert f"--config retention.yaml --format markdown --snapshot {SNAPSHOT} --manifests {IN_USE}" in review


def test_a_release_other_than_the_one_pipx_runs_is_not_reviewed(runner: Runner) -> None:
    run = runner.run(snapshot_inputs(version="9.9.9"))

    assert run.code == 2
    assert run.outputs["exit-code"] == "2"
    assert "The review did not run: pipx could not run ecr-retention[aws]==9.9.9" in run.summary


def test_the_base_branch_is_fetched_from_origin_when_the_checkout_lacks_it(runner: Runner, tmp_path: Path) -> None:
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(runner.workspace), str(origin))
    git(runner.workspace, "remote", "add", "origin", str(origin))
    git(runner.workspace, "branch", "-q", "-D", "main")

    run = runner.run(snapshot_inputs())

    assert run.code == 0, run.log
    assert DELETES_MORE.search(run.summary)
    assert "extraheader" not in git(runner.workspace, "config", "--list")


@pytest.mark.parametrize(
    ("inputs", "line"),
    [
        (snapshot_inputs(bucket="inventory"), "give bucket (the registry as the last sweep read it) or snapshot"),
        (snapshot_inputs(**{"base-ref": "no-such-branch"}), "base-ref: 'no-such-branch' is no revision"),
        (snapshot_inputs(**{"rules-file": "rules/missing.yaml"}), "base-ref main: has no rules/missing.yaml"),
        (snapshot_inputs(command="plan"), "command: 'plan' is neither diff nor lifecycle-diff"),
        (
            snapshot_inputs(version="0.1.0 --index-url http://x"),
            "version: '0.1.0 --index-url http://x' is not a release",
        ),
        (snapshot_inputs(repository="app"), "repository: lifecycle-diff's"),
        (snapshot_inputs(**{"fail-on": "deletions-over many"}), "ecr-retention diff exited 2"),
    ],
    ids=["bucket-and-snapshot", "unknown-base", "no-base-file", "command", "version", "repository", "cli-refuses"],
)
def test_bad_input_is_one_line_and_exit_code_2_never_a_finding(
    runner: Runner, inputs: dict[str, str], line: str
) -> None:
    run = runner.run(inputs)

    assert run.code == 2
    assert run.outputs["exit-code"] == "2"
    assert run.summary.startswith("### Retention rules review\n\nThe review did not run: ")
    assert line in run.summary
    assert "Traceback" not in run.log


def test_lifecycle_diff_reviews_a_native_policy_change_on_request(runner: Runner) -> None:
    shutil.copy(LIFECYCLE / "policy-fixed.json", runner.workspace / "policy.json")
    commit_all(runner.workspace, "policy")
    git(runner.workspace, "branch", "-q", "-f", "main")
    shutil.copy(LIFECYCLE / "policy-incident.json", runner.workspace / "policy.json")
    commit_all(runner.workspace, "the incident's policy")
    inputs = {
        "command": "lifecycle-diff",
        "policy-file": "policy.json",
        "snapshot": str(LIFECYCLE / "describe-images.json"),
        "manifests": str(LIFECYCLE / "in-use"),
    }

    run = runner.run(inputs)

    assert run.code == 1
    assert run.summary.startswith("### Lifecycle policy review for app")
    assert "1 of them run: dev/dev/Deployment/app" in run.summary
    assert "--policy policy.json --format markdown --images" in runner.calls[-1][2]


# ---- the size caps -----------------------------------------------------------------------------------------------


def test_a_review_larger_than_a_summary_holds_is_cut_below_1_mib_with_a_line_saying_so(runner: Runner) -> None:
    huge = runner.temp / "huge-review"
    huge.write_text(HUGE_REVIEW.format(python=sys.executable, version=ecr_retention.__version__))
    huge.chmod(0o755)
    runner.env["ECR_RETENTION_BIN"] = str(huge)

    run = runner.run(snapshot_inputs())

    whole = Path(run.outputs["markdown-file"]).read_text()
    assert len(whole.encode()) > 2 * SUMMARY_LIMIT
    assert len(run.summary.encode()) < SUMMARY_LIMIT
    assert run.summary.rstrip().endswith("upload it as an artifact to keep it.")
    assert "**Cut here:** a job summary holds 1 MiB" in run.summary
    assert run.summary.count("<details>") == run.summary.count("</details>")
    assert whole.startswith(run.summary.split("\n\n**Cut here:**")[0].rsplit("</details>", 1)[0])
    assert run.outputs["summary-cut"] == run.outputs["comment-cut"] == "true"
    assert len(run.outputs["comment-body"].encode()) < COMMENT_LIMIT
    assert "**Cut here:** a pull-request comment holds 64 KB" in run.outputs["comment-body"]
    assert "https://github.com/acme/platform-config/actions/runs/4242" in run.outputs["comment-body"]
    assert run.code == 1
    assert run.outputs["exit-code"] == "1"


# ---- the sticky comment ------------------------------------------------------------------------------------------


def test_the_sticky_comment_is_posted_once_then_updated_in_place(runner: Runner, github_api: FakeGitHub) -> None:
    runner.env["GITHUB_API_URL"] = github_api.url
    others = {number: dict(comment) for number, comment in github_api.comments.items()}

    first = runner.run(snapshot_inputs(comment="true"))
    (posted,) = (dict(comment) for comment in github_api.of_review())
    (runner.workspace / "retention.yaml").write_text((ROOT / "retention.yaml").read_text())
    commit_all(runner.workspace, "back to the base's rules")
    second = runner.run(snapshot_inputs(comment="true"))

    assert first.code == second.code == 0, first.log + second.log
    (updated,) = github_api.of_review()
    assert updated["id"] == posted["id"]
    assert DELETES_MORE.search(posted["body"])
    assert updated["body"].startswith(
        "<!-- ecr-retention-review:default -->\n### Retention rules review\n\n**this change changes no image"
    )
    assert {number: github_api.comments[number] for number in others} == others
    methods = [method for method, _, _ in github_api.requests]
    assert methods == ["GET", "GET", "POST", "GET", "GET", "PATCH"]
    assert {authorization for _, _, authorization in github_api.requests} == {"Bearer ghs_runner_token"}


def test_the_comment_action_posts_the_review_from_another_job_below_64_kb(
    runner: Runner, github_api: FakeGitHub
) -> None:
    runner.env["GITHUB_API_URL"] = github_api.url
    # Over 64 KB, and below the 128 KiB an environment variable holds (the body reaches the script through env:).
    body = "### Retention rules review\n\n" + "| `app` | keep → delete |\n" * 4_000
    assert 64_000 < len(body.encode()) < 128 * 1024

    run = runner.run({"body": body, "key": "lifecycle app", "github-token": "ghs_comment_job"}, COMMENT_ACTION)

    assert run.code == 0, run.log
    (posted,) = github_api.of_review()
    assert posted["body"].startswith("<!-- ecr-retention-review:lifecycle app -->\n### Retention rules review")
    assert len(posted["body"].encode()) < COMMENT_LIMIT
    assert (
        posted["body"]
        .rstrip()
        .endswith(
            "The whole review is in the [job summary](https://github.com/acme/platform-config/actions/runs/4242)."
        )
    )
    assert github_api.requests[-1][2] == "Bearer ghs_comment_job"


def test_a_comment_the_api_refuses_is_one_error_line(runner: Runner, github_api: FakeGitHub) -> None:
    runner.env["GITHUB_API_URL"] = f"{github_api.url}/elsewhere"

    run = runner.run({"body": "### Retention rules review\n"}, COMMENT_ACTION)

    assert run.code == 1
    assert (
        "::error title=ecr-retention review::the review's comment: GET /repos/acme/platform-config/issues/7/comments: HTTP 404 Not Found"
        in run.log
    )
    assert "Traceback" not in run.log


def test_a_comment_of_someone_else_carrying_the_marker_is_never_taken_for_the_reviews(
    runner: Runner, github_api: FakeGitHub
) -> None:
    # Given a commenter who wrote the review's marker at the top of a comment of their own
    forged = {"id": 500, "body": "<!-- ecr-retention-review:default -->\nno change", "user": {"login": "mallory"}}
    github_api.comments[500] = dict(forged)
    runner.env["GITHUB_API_URL"] = github_api.url

    # When the review comments
    run = runner.run(snapshot_inputs(comment="true"))

    # Then their comment is untouched and the review posts its own
    assert run.code == 0, run.log
    assert github_api.comments[500] == forged
    [posted] = [c for c in github_api.of_review() if c["user"]["login"] == "github-actions[bot]"]
    assert DELETES_MORE.search(posted["body"])
    assert [method for method, _, _ in github_api.requests][-1] == "POST"


def test_a_comment_that_cannot_be_posted_leaves_the_check_to_the_reviews_exit_code(
    runner: Runner, github_api: FakeGitHub
) -> None:
    # Given an API that refuses the comment, and a change no condition fails
    runner.env["GITHUB_API_URL"] = f"{github_api.url}/elsewhere"
    (runner.workspace / "retention.yaml").write_text((ROOT / "retention.yaml").read_text())
    commit_all(runner.workspace, "the base's rules")

    run = runner.run(snapshot_inputs(comment="true"))

    # Then the comment's error is said, and the check passes as the review does
    assert "::error title=ecr-retention review::the review's comment: " in run.log
    assert run.outputs["exit-code"] == "0"
    assert run.code == 0, run.log


# ---- pull requests from forks ------------------------------------------------------------------------------------


@pytest.mark.parametrize("fork", ["someone/platform-config", None], ids=["fork", "deleted-fork"])
def test_a_pull_request_from_a_fork_gets_one_line_not_a_finding(
    runner: Runner, github_api: FakeGitHub, fork: str | None
) -> None:
    runner.event(fork)
    runner.env["GITHUB_API_URL"] = github_api.url
    del runner.env["ACTIONS_ID_TOKEN_REQUEST_URL"], runner.env["ACTIONS_ID_TOKEN_REQUEST_TOKEN"]

    run = runner.run({"bucket": "my-ecr-retention-bucket", "comment": "true", "fail-on": "deletions-over 0"})

    assert run.code == 0
    assert run.outputs == run.outputs | {"exit-code": "0", "skipped": "fork"}
    (headline, line) = run.summary.strip().split("\n\n")
    assert headline == "### Retention rules review"
    assert line.startswith(f"Not reviewed: this pull request comes from {fork or 'a deleted fork'}, and GitHub gives")
    assert "::notice title=ecr-retention review::Not reviewed" in run.log
    assert runner.calls == []
    assert run.step("Post the sticky comment").code is None
    assert github_api.requests == []


def test_a_fork_fails_the_check_when_asked_with_exit_code_2(runner: Runner) -> None:
    runner.event("someone/platform-config")

    run = runner.run({"bucket": "my-ecr-retention-bucket", "on-fork": "fail"})

    assert run.code == 2
    assert run.outputs["exit-code"] == "2"
    assert "Not reviewed: this pull request comes from someone/platform-config" in run.summary
    assert runner.calls == []


def test_a_fork_reviewed_on_a_snapshot_is_reviewed_but_not_commented(runner: Runner, github_api: FakeGitHub) -> None:
    runner.event("someone/platform-config")
    runner.env["GITHUB_API_URL"] = github_api.url

    run = runner.run(snapshot_inputs(comment="true"))

    assert run.code == 0, run.log
    assert DELETES_MORE.search(run.summary)
    assert (
        "::notice title=ecr-retention review::a pull request from someone/platform-config gets a read-only token"
        in run.log
    )
    assert github_api.requests == []


def test_a_failure_of_the_action_itself_is_exit_code_2_with_its_outputs_never_a_finding(runner: Runner) -> None:
    # Given a base rules file that is not text (git show cannot decode it)
    (runner.workspace / "retention.yaml").write_bytes(b"\xff\xfe not utf-8")
    commit_all(runner.workspace, "a binary rules file on the base")
    git(runner.workspace, "branch", "-f", "main")

    run = runner.run(snapshot_inputs())

    assert run.outputs["exit-code"] == "2"
    assert run.code == 2
    assert "::error title=ecr-retention review::the action failed: UnicodeDecodeError: " in run.log
    assert "The review did not run: the action failed: UnicodeDecodeError" in run.summary


def test_the_tools_output_is_shown_with_the_runners_commands_stopped(runner: Runner) -> None:
    # Given a rules file whose invalid line reads as a workflow command when echoed
    (runner.workspace / "retention.yaml").write_text("::add-mask::secret\n")
    commit_all(runner.workspace, "a rules file that is no YAML mapping")

    run = runner.run(snapshot_inputs())

    stopped = re.search(r"::stop-commands::([0-9a-f]{32})\n(.*?)::\1::", run.log, re.S)
    assert run.code == 2, run.log
    assert stopped is not None, run.log
