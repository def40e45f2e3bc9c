"""A composite GitHub Action run as the runner runs it, for tests (tests/action, tests/e2e/test_review_workflow.py):
each `run:` with `bash --noprofile --norc -eo pipefail`, its `env:` and `if:` evaluated from the inputs and the earlier
steps' outputs (the implicit success() included), fresh GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files per step. The
expressions this repository's actions use are evaluated; any other is refused, so the runner cannot pass what it does
not understand. Also: a stub `pipx` that runs the installed ecr-retention, and GitHub's pull_request event."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPOSITORY = "acme/platform-config"  # the repository the events and the API stubs speak of
STUB_PIPX = """#!/usr/bin/env bash
# Records each call (whether AWS credentials or the OIDC token request were in its environment, and its arguments),
# then runs ecr-retention as `pipx run --python PY --spec SPEC ecr-retention ARGS...` would.
printf '%s\\t%s\\t%s\\n' "${AWS_SECRET_ACCESS_KEY:+aws}" "${ACTIONS_ID_TOKEN_REQUEST_TOKEN:+oidc}" "$*" >> "$PIPX_CALLS"
[ "$1" = run ] && [ "$2" = --python ] && [ "$4" = --spec ] && [ "$6" = ecr-retention ] || {
  echo "unexpected pipx call: $*" >&2; exit 64; }
shift 6
exec "$ECR_RETENTION_BIN" "$@"
"""


EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
COMPARISON = re.compile(r"^([\w.-]+)\s*(==|!=)\s*'([^']*)'$")


@dataclass
class StepRun:
    name: str
    code: int | None  # None: skipped by its `if:`
    outputs: dict[str, str]
    summary: str
    log: str
    # `continue-on-error: true`: a failure of this step fails neither the steps after it nor the action (its outcome
    # is failure, its conclusion success).
    continued: bool = False

    @property
    def failed(self) -> bool:
        return bool(self.code) and not self.continued


@dataclass
class ActionRun:
    steps: list[StepRun]
    outputs: dict[str, str]

    @property
    def code(self) -> int:
        return next((step.code or 0 for step in self.steps if step.failed), 0)

    @property
    def summary(self) -> str:
        return "".join(step.summary for step in self.steps)

    @property
    def log(self) -> str:
        return "".join(step.log for step in self.steps)

    def step(self, name: str) -> StepRun:
        return next(step for step in self.steps if step.name == name)


@dataclass
class Contexts:
    inputs: dict[str, str]
    github: dict[str, str]
    steps: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    vars: dict[str, str] = field(default_factory=dict)

    def value(self, path: str) -> str:
        head, *rest = path.split(".")
        node: Any = {"inputs": self.inputs, "github": self.github, "steps": self.steps, "vars": self.vars}[head]
        for part in rest:
            node = node.get(part, "") if isinstance(node, dict) else ""
        return str(node)

    def condition(self, expression: str) -> bool:
        """`a == 'x' && b != 'y'`: what this repository's actions use in `if:`; anything else is refused."""
        result = True
        for term in expression.split("&&"):
            match = COMPARISON.match(term.strip())
            assert match, f"the test's runner does not evaluate {term!r}"
            left, operator, right = match.groups()
            result = result and ((self.value(left) == right) == (operator == "=="))
        return result

    def substitute(self, text: str) -> str:
        return EXPRESSION.sub(lambda match: self.value(match.group(1)), text)


def parse_outputs(text: str) -> dict[str, str]:
    outputs: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        if "<<" in line:
            name, delimiter = line.split("<<", 1)
            value: list[str] = []
            for body_line in lines:
                if body_line == delimiter:
                    break
                value.append(body_line)
            outputs[name] = "\n".join(value)
        elif "=" in line:
            name, value_text = line.split("=", 1)
            outputs[name] = value_text
    return outputs


def run_action(
    action_file: Path, inputs: Mapping[str, str], *, env: Mapping[str, str], cwd: Path, github: Mapping[str, str]
) -> ActionRun:
    action = yaml.safe_load(action_file.read_text())
    declared: dict[str, dict[str, Any]] = action["inputs"]
    assert set(inputs) <= set(declared), f"undeclared inputs: {set(inputs) - set(declared)}"
    contexts = Contexts(inputs={}, github=dict(github))
    contexts.inputs = {
        name: inputs.get(name, contexts.substitute(str(spec.get("default", "")))) for name, spec in declared.items()
    }
    steps: list[StepRun] = []
    for index, step in enumerate(action["runs"]["steps"]):
        failed = any(done.failed for done in steps)
        condition = step.get("if")
        if failed or (condition is not None and not contexts.condition(condition)):
            steps.append(StepRun(step.get("name", str(index)), None, {}, "", ""))
            continue
        ran = run_step(step, index, contexts, env=env, cwd=cwd, action_path=action_file.parent)
        ran.continued = step.get("continue-on-error") is True
        steps.append(ran)
        if "id" in step:
            contexts.steps[step["id"]] = {"outputs": steps[-1].outputs}
    outputs = {name: contexts.substitute(spec["value"]) for name, spec in action.get("outputs", {}).items()}
    return ActionRun(steps, outputs)


def run_step(
    step: Mapping[str, Any], index: int, contexts: Contexts, *, env: Mapping[str, str], cwd: Path, action_path: Path
) -> StepRun:
    assert step["shell"] == "bash"
    assert "${{" not in step["run"], "inputs reach a script through env: only"
    files = Path(env["RUNNER_TEMP"]) / f"step-{index}-{os.urandom(4).hex()}"
    files.mkdir()
    output_file, summary_file = files / "output", files / "summary"
    output_file.touch()
    summary_file.touch()
    step_env = {name: contexts.substitute(str(value)) for name, value in step.get("env", {}).items()}
    process = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        cwd=cwd,
        env={
            **env,
            "GITHUB_ACTION_PATH": str(action_path),
            "GITHUB_OUTPUT": str(output_file),
            "GITHUB_STEP_SUMMARY": str(summary_file),
            **step_env,
        },
        capture_output=True,
        text=True,
        check=False,
    )
    return StepRun(
        step.get("name", str(index)),
        process.returncode,
        parse_outputs(output_file.read_text()),
        summary_file.read_text(),
        process.stdout + process.stderr,
    )


def pull_request_event(head_repository: str | None = REPOSITORY) -> dict[str, Any]:
    """The fields of GitHub's pull_request webhook payload the action reads, as GitHub sends them."""
    base_repo = {"full_name": REPOSITORY, "fork": False, "id": 718293645}
    head_repo = (
        None if head_repository is None else {"full_name": head_repository, "fork": head_repository != REPOSITORY}
    )
    return {
        "action": "synchronize",
        "number": 7,
        "pull_request": {
            "number": 7,
            "state": "open",
            "head": {"ref": "tighter", "sha": "0" * 40, "repo": head_repo},
            "base": {"ref": "main", "sha": "1" * 40, "repo": base_repo},
        },
        "repository": base_repo,
    }


def install_stub_pipx(directory: Path) -> Path:
    """STUB_PIPX as `directory/pipx`; put the directory first on PATH, with PIPX_CALLS and ECR_RETENTION_BIN set."""
    pipx = directory / "pipx"
    pipx.write_text(STUB_PIPX)
    pipx.chmod(0o755)
    return pipx


def evaluated_step(step: Mapping[str, Any], contexts: Contexts) -> tuple[dict[str, str], dict[str, str]]:
    """A workflow step's `with:` and `env:`, their expressions evaluated in `contexts` (vars, steps, github)."""
    inputs = {name: contexts.substitute(str(value)) for name, value in step.get("with", {}).items()}
    env = {name: contexts.substitute(str(value)) for name, value in step.get("env", {}).items()}
    return inputs, env
