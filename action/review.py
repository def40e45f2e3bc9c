"""The action's review step: takes the base branch's rules file (or lifecycle policy) from git, runs `ecr-retention
diff` (or `lifecycle-diff`) from the pinned release with `--format markdown`, writes the markdown to the job summary
(cut below 1 MiB, with a line saying so) and sets the step's outputs. It always exits 0 once its outputs are set: the
action's last step exits with the review's code, so the outputs reach the caller whatever the outcome.

A pull request from a fork, reviewed against the inventory bucket, gets one line instead of a review: GitHub gives its
workflow no OIDC token, so the AWS credentials the review needs cannot exist.

Inputs arrive as REVIEW_* environment variables (action.yml passes each through `env:`, never into the script)."""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from runner_files import (
    COMMENT_LIMIT,
    append_summary,
    command,
    cut,
    pull_request_of_event,
    run_url,
    set_outputs,
)

COMMANDS = ("diff", "lifecycle-diff")
HEADING = "### Retention rules review"
FAILURES = {
    "diff": "the change meets a fail-on condition",
    "lifecycle-diff": "the change expires or archives an image a workload runs, or one while which images run is unknown",
}
VERSION = re.compile(r"[0-9]+(\.[0-9]+)*([abc]|rc|\.post|\.dev)?[0-9]*")
# Never handed to what pipx installs: the GitHub token, the OIDC token request (with it, a package's install code could
# ask for a token the review role trusts) and the runtime token. AWS_* is removed from the install only.
SECRET_NAMES = ("REVIEW_GITHUB_TOKEN", "GITHUB_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_URL")
SECRET_PREFIXES = ("ACTIONS_RUNTIME_",)


class InputProblem(ValueError):
    """An input the action cannot use: one line, exit code 2, nothing run."""


@dataclass(frozen=True)
class Inputs:
    command: str
    version: str
    python: str
    changed_file: str  # the rules file (diff) or the policy JSON (lifecycle-diff), as the pull request makes it
    base_ref: str
    bucket: str
    region: str
    snapshot: str
    manifests: str
    repository: str
    fail_on: tuple[tuple[str, ...], ...]
    on_fork: str
    github_token: str

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Inputs:
        def value(name: str) -> str:
            return env.get(f"REVIEW_{name}", "").strip()

        chosen = value("COMMAND") or "diff"
        if chosen not in COMMANDS:
            raise InputProblem(f"command: {chosen!r} is neither diff nor lifecycle-diff")
        inputs = cls(
            command=chosen,
            version=value("VERSION"),
            python=value("PYTHON") or "python3",
            changed_file=value("RULES_FILE") if chosen == "diff" else value("POLICY_FILE"),
            base_ref=value("BASE_REF"),
            bucket=value("BUCKET"),
            region=value("REGION"),
            snapshot=value("SNAPSHOT"),
            manifests=value("MANIFESTS"),
            repository=value("REPOSITORY"),
            fail_on=parse_fail_on(value("FAIL_ON")),
            on_fork=value("ON_FORK") or "pass",
            github_token=value("GITHUB_TOKEN"),
        )
        inputs.check()
        return inputs

    def check(self) -> None:
        if not VERSION.fullmatch(self.version):
            raise InputProblem(f"version: {self.version!r} is not a release of ecr-retention (such as 0.1.0)")
        if not self.changed_file:
            raise InputProblem("rules-file: empty" if self.command == "diff" else "policy-file: required")
        if bool(self.bucket) == bool(self.snapshot):
            raise InputProblem("give bucket (the registry as the last sweep read it) or snapshot (a file), one of them")
        if not self.base_ref:
            raise InputProblem("base-ref: empty: outside a pull request, name the revision to compare with")
        if self.base_ref.startswith("-"):
            raise InputProblem(f"base-ref: {self.base_ref!r} is not a git revision")
        if self.repository and self.command != "lifecycle-diff":
            raise InputProblem("repository: lifecycle-diff's; diff reviews every repository the rules manage")
        if self.fail_on and self.command != "diff":
            raise InputProblem("fail-on: diff's; lifecycle-diff exits 1 when the change expires an image that runs")
        if self.on_fork not in ("pass", "fail"):
            raise InputProblem(f"on-fork: {self.on_fork!r} is neither pass nor fail")

    @property
    def spec(self) -> str:
        return f"ecr-retention[aws]=={self.version}"


def parse_fail_on(text: str) -> tuple[tuple[str, ...], ...]:
    """Conditions one a line or separated by commas (`deletions-over 100, bytes-over 50GiB`), each its words."""
    items = (item.split() for line in text.splitlines() for item in line.split(","))
    return tuple(tuple(words) for words in items if words)


@dataclass(frozen=True)
class Review:
    code: int
    markdown: str
    skipped: str = ""


def main() -> int:
    workspace = Path(tempfile.mkdtemp(prefix="ecr-retention-", dir=os.environ.get("RUNNER_TEMP")))
    try:
        review = run_review(Inputs.from_env(os.environ), workspace)
    except InputProblem as problem:
        review = did_not_run(f"the action's input: {problem}")
    except Exception as error:
        # Whatever else stops the review is exit code 2 ("did not run") with its outputs set, never a bare traceback
        # and exit 1, which a caller would read as a finding.
        review = did_not_run(f"the action failed: {type(error).__name__}: {error}", details=traceback.format_exc())
    publish(review, workspace)
    return 0


def run_review(inputs: Inputs, workspace: Path) -> Review:
    pull = pull_request_of_event()
    if inputs.bucket and pull is not None and pull.fork is not None:
        return fork_review(inputs, pull.fork)
    base_file = workspace / f"base-{Path(inputs.changed_file).name}"
    problem = write_base_file(inputs, base_file)
    if problem:
        return did_not_run(problem)
    return run_cli(inputs, cli_arguments(inputs, base_file))


def fork_review(inputs: Inputs, fork: str) -> Review:
    line = (
        f"Not reviewed: this pull request comes from {fork}, and GitHub gives a fork's pull request no OIDC token, so "
        f"the review cannot read the inventory bucket. A maintainer can push the branch to this repository, or run "
        f"`ecr-retention {inputs.command}` with a snapshot (docs/review.md)."
    )
    command("notice" if inputs.on_fork == "pass" else "error", line)
    return Review(code=0 if inputs.on_fork == "pass" else 2, markdown=f"{HEADING}\n\n{line}\n", skipped="fork")


def write_base_file(inputs: Inputs, destination: Path) -> str:
    """Writes the base revision's copy of the changed file; a problem's one line, or ''."""
    revision = resolve_revision(inputs)
    if revision is None:
        return f"base-ref: {inputs.base_ref!r} is no revision of this checkout and cannot be fetched from origin"
    shown = git("show", f"{revision}:./{inputs.changed_file}")
    if shown.returncode != 0:
        return f"base-ref {inputs.base_ref}: has no {inputs.changed_file} ({last_line(shown.stderr)})"
    destination.write_text(shown.stdout, encoding="utf-8")
    return ""


def resolve_revision(inputs: Inputs) -> str | None:
    """The base: a revision the checkout has (a commit, HEAD^1 of a merge commit, a branch), origin's branch of that
    name, or that branch fetched (depth 1) with the token passed to this git call alone, never written to disk."""
    for candidate in (inputs.base_ref, f"refs/remotes/origin/{inputs.base_ref}"):
        if git("rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}").returncode == 0:
            return candidate
    refspec = f"+refs/heads/{inputs.base_ref}:refs/remotes/origin/{inputs.base_ref}"
    fetched = git("fetch", "--no-tags", "--depth=1", "origin", refspec, env=token_config(inputs.github_token))
    if fetched.returncode != 0:
        echo_untrusted(fetched.stderr)
        return None
    return f"refs/remotes/origin/{inputs.base_ref}"


def token_config(token: str) -> dict[str, str]:
    """git configuration through the environment (GIT_CONFIG_COUNT), as actions/checkout's header: a private
    repository's base branch can be fetched from a checkout made with `persist-credentials: false`."""
    if not token:
        return {}
    server = os.environ.get("GITHUB_SERVER_URL", "https://github.com")
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"http.{server}/.extraheader",
        "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {basic}",
    }


def git(*arguments: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **(env or {})}
    return subprocess.run(["git", *arguments], capture_output=True, text=True, env=environment, check=False)


def cli_arguments(inputs: Inputs, base_file: Path) -> list[str]:
    changed = "--config" if inputs.command == "diff" else "--policy"
    arguments = [inputs.command, "--base", str(base_file), changed, inputs.changed_file, "--format", "markdown"]
    if inputs.bucket:
        arguments += ["--bucket", inputs.bucket]
    else:
        arguments += ["--snapshot" if inputs.command == "diff" else "--images", inputs.snapshot]
        arguments += ["--manifests", inputs.manifests] if inputs.manifests else []
    arguments += ["--region", inputs.region] if inputs.region else []
    arguments += ["--repository", inputs.repository] if inputs.repository else []
    for condition in inputs.fail_on:
        arguments += ["--fail-on", *condition]
    return arguments


def run_cli(inputs: Inputs, arguments: list[str]) -> Review:
    """Installs the pinned release with no AWS credential in its environment (a package's install code never sees
    them), then runs the review from that installation (pipx run reuses the venv of the same spec)."""
    pipx = shutil.which("pipx")
    if pipx is None:
        return did_not_run("pipx is not on PATH (GitHub-hosted runners have it; install it on a self-hosted runner)")
    tool = [pipx, "run", "--python", inputs.python, "--spec", inputs.spec, "ecr-retention"]
    installed = subprocess.run(
        [*tool, "--version"], capture_output=True, text=True, env=child_environment(aws=False), check=False
    )
    if installed.returncode != 0 or last_line(installed.stdout).split() != ["ecr-retention", inputs.version]:
        echo_untrusted(installed.stderr)
        return did_not_run(f"pipx could not run {inputs.spec}: {last_line(installed.stderr or installed.stdout)}")
    print(f"ecr-retention {' '.join(arguments)}", flush=True)
    ran = subprocess.run(
        [*tool, *arguments], capture_output=True, text=True, env=child_environment(aws=True), check=False
    )
    echo_untrusted(ran.stderr)
    if ran.returncode in (0, 1) and ran.stdout.strip():
        if ran.returncode == 1:
            command("error", f"ecr-retention {inputs.command} exited 1: {FAILURES[inputs.command]} (the job summary)")
        return Review(code=ran.returncode, markdown=ran.stdout)
    return did_not_run(
        f"ecr-retention {inputs.command} exited {ran.returncode}", details=ran.stderr, code=ran.returncode
    )


def child_environment(*, aws: bool) -> dict[str, str]:
    def secret(name: str) -> bool:
        return name in SECRET_NAMES or name.startswith(SECRET_PREFIXES) or (not aws and name.startswith("AWS_"))

    return {name: value for name, value in os.environ.items() if not secret(name)}


def echo_untrusted(text: str) -> None:
    """Print tool output that may quote the pull request's own files to the log, with the runner's workflow commands
    (`::add-mask::`, `::error::`, ...) off while it shows: a line of the rules file must not command the runner."""
    if not text:
        return
    token = uuid.uuid4().hex
    print(f"::stop-commands::{token}", flush=True)
    # one stream for the text and the markers around it: the runner orders lines within a stream, not across two
    print(text, end="" if text.endswith("\n") else "\n", flush=True)
    print(f"::{token}::", flush=True)


def did_not_run(reason: str, *, details: str = "", code: int = 2) -> Review:
    """Exit code 2 (or the tool's own, when above 1): the review did not run, which no caller may read as a finding
    (1) or as a pass (0)."""
    command("error", f"{reason}: {last_line(details)}" if details.strip() else reason)
    fence = "`" * max(3, longest_backtick_run(details) + 1)
    block = f"\n\n{fence}text\n{details.rstrip()}\n{fence}\n" if details.strip() else "\n"
    return Review(code=max(code, 2), markdown=f"{HEADING}\n\nThe review did not run: {reason}.{block}")


def longest_backtick_run(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no message"


def publish(review: Review, workspace: Path) -> None:
    markdown_file = workspace / "review.md"
    markdown_file.write_text(review.markdown, encoding="utf-8")
    summary_cut = append_summary(
        review.markdown,
        f"**Cut here:** a job summary holds 1 MiB. The whole review ({len(review.markdown.encode())} bytes) is the "
        f"file the action's `markdown-file` output names; upload it as an artifact to keep it.",
    )
    comment, comment_cut = cut(
        review.markdown,
        COMMENT_LIMIT - 200,  # the sticky comment's marker goes in front
        f"**Cut here:** a pull-request comment holds 64 KB. The whole review is in the [job summary]({run_url()}).",
    )
    set_outputs(
        {
            "exit-code": str(review.code),
            "markdown-file": str(markdown_file),
            "summary-cut": str(summary_cut).lower(),
            "comment-body": comment,
            "comment-cut": str(comment_cut).lower(),
            "skipped": review.skipped,
        }
    )


if __name__ == "__main__":
    sys.exit(main())
