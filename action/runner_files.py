"""What the action's scripts share: the runner's files (step outputs, the job summary), workflow commands, the
pull request of the event, and markdown cut to a size GitHub accepts, with a line saying so.

Standard library only: the scripts run on the runner's own `python3`, before ecr-retention is installed."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# GitHub refuses a step's summary over 1 MiB ("supports content up to a size of 1024k") and a comment over 65,536
# characters. Both are kept below, in UTF-8 bytes, so that neither characters nor bytes can exceed them.
SUMMARY_LIMIT = 1024 * 1024
COMMENT_LIMIT = 64_000
# Room for the lines that close what a cut leaves open (a code fence, <details> blocks).
CLOSING_ROOM = 1024


def command(kind: str, message: str, *, title: str = "ecr-retention review") -> None:
    """One workflow command (`::notice::`, `::warning::`, `::error::`): an annotation on the run, one line."""
    escaped = message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    print(f"::{kind} title={title}::{escaped}", flush=True)


def set_outputs(values: Mapping[str, str]) -> None:
    """Step outputs, each in the multi-line form with a delimiter no value contains."""
    with open(os.environ["GITHUB_OUTPUT"], "a", encoding="utf-8") as outputs:
        for name, value in values.items():
            delimiter = f"ghadelimiter_{uuid.uuid4()}"
            outputs.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")


def append_summary(markdown: str, cut_line: str) -> bool:
    """Appends `markdown` to this step's job summary, cut below what is left of 1 MiB; whether it was cut."""
    path = os.environ["GITHUB_STEP_SUMMARY"]
    written = os.path.getsize(path) if os.path.exists(path) else 0
    text, was_cut = cut(markdown, SUMMARY_LIMIT - written, cut_line)
    with open(path, "a", encoding="utf-8") as summary:
        summary.write(text)
    return was_cut


def cut(markdown: str, limit: int, cut_line: str) -> tuple[str, bool]:
    """`markdown` whole when it has at most `limit` UTF-8 bytes; otherwise its first whole lines, what they leave
    open closed, and `cut_line`, all within `limit`."""
    if len(markdown.encode()) <= limit:
        return markdown, False
    tail = f"\n\n{cut_line}\n"
    budget = max(limit - len(tail.encode()) - CLOSING_ROOM, 0)
    kept = markdown.encode()[:budget].decode("utf-8", errors="ignore")
    kept = kept[: kept.rfind("\n") + 1]
    return kept + closers(kept) + tail, True


def closers(kept: str) -> str:
    """What closes the code fence and the <details> blocks that `kept` opens and does not close."""
    fences = sum(1 for line in kept.splitlines() if line.lstrip().startswith("```"))
    open_details = kept.count("<details") - kept.count("</details>")
    return ("```\n" if fences % 2 else "") + "</details>\n" * max(open_details, 0)


@dataclass(frozen=True)
class PullRequest:
    number: int
    fork: str | None  # the fork's name when the head branch is in another repository


def pull_request_of_event() -> PullRequest | None:
    """The event's pull request (GITHUB_EVENT_PATH), or None when the event is not one's."""
    path = os.environ.get("GITHUB_EVENT_PATH", "")
    if not path or not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as event_file:
        event: dict[str, Any] = json.load(event_file)
    pull = event.get("pull_request")
    if not isinstance(pull, dict) or not isinstance(pull.get("number"), int):
        return None
    return PullRequest(number=pull["number"], fork=fork_of(pull))


def fork_of(pull: Mapping[str, Any]) -> str | None:
    """The head repository's name when it is not the base repository: GitHub gives such a pull request's
    `pull_request` workflow no OIDC token and a read-only GITHUB_TOKEN."""
    head = (pull.get("head") or {}).get("repo")
    base = (pull.get("base") or {}).get("repo") or {}
    if head is None:
        return "a deleted fork"
    name = head.get("full_name")
    return None if name == base.get("full_name") else str(name)


def run_url() -> str:
    """This workflow run's page, where the job summary is."""
    server = os.environ.get("GITHUB_SERVER_URL", "https://github.com")
    return f"{server}/{os.environ.get('GITHUB_REPOSITORY', '')}/actions/runs/{os.environ.get('GITHUB_RUN_ID', '')}"
