"""One sticky pull-request comment: the review, below 64 KB (cut with a line saying so), posted once and then updated in
place. The comment is found again by a hidden marker in its first line, `<!-- ecr-retention-review:KEY -->`, so
two reviews of one pull request (say diff and lifecycle-diff) each keep their own with distinct keys.

Only a comment of COMMENT_AUTHOR (the login the token posts as: `github-actions[bot]` for the workflow's token) is
taken for the review's: anyone may write the marker in a comment of their own, and editing theirs would put the
review in a comment its author can rewrite.

Inputs arrive as COMMENT_* environment variables: COMMENT_BODY_FILE or COMMENT_BODY, COMMENT_KEY, COMMENT_GITHUB_TOKEN,
COMMENT_AUTHOR and COMMENT_PULL_REQUEST (default: the event's). The REST API is GITHUB_API_URL's (GitHub Enterprise Server too)."""

from __future__ import annotations

import json
import os
import re
import sys
import urllib.error
import urllib.request
from typing import Any

from runner_files import COMMENT_LIMIT, PullRequest, command, cut, pull_request_of_event, run_url

KEY = re.compile(r"[A-Za-z0-9._:/ -]{1,100}")
PAGE_SIZE = 100
# The login the workflow's own token (GITHUB_TOKEN) posts as.
DEFAULT_AUTHOR = "github-actions[bot]"


class CommentProblem(Exception):
    """What stops the comment: one line."""


def main() -> int:
    pull = pull_request()
    if pull is None:
        command("notice", "no pull request in this event: no comment (the job summary has the review)")
        return 0
    if pull.fork is not None:
        command("notice", f"a pull request from {pull.fork} gets a read-only token: no comment (see the job summary)")
        return 0
    try:
        url = post_or_update(pull.number, marker(), body())
    except CommentProblem as problem:
        command("error", f"the review's comment: {problem}")
        return 1
    print(f"the review's comment: {url}")
    return 0


def pull_request() -> PullRequest | None:
    number = os.environ.get("COMMENT_PULL_REQUEST", "").strip()
    if number.isdigit():
        return PullRequest(number=int(number), fork=None)
    return pull_request_of_event()


def marker() -> str:
    key = os.environ.get("COMMENT_KEY", "").strip() or "default"
    if not KEY.fullmatch(key) or "--" in key:
        raise CommentProblem(f"key: {key!r}: letters, digits and . _ : / - (no --), at most 100 characters")
    return f"<!-- ecr-retention-review:{key} -->"


def body() -> str:
    path = os.environ.get("COMMENT_BODY_FILE", "").strip()
    if path:
        with open(path, encoding="utf-8") as body_file:
            return body_file.read()
    return os.environ.get("COMMENT_BODY", "")


def post_or_update(number: int, comment_marker: str, review: str) -> str:
    """Updates the comment that starts with `comment_marker`, or posts one; the comment's address."""
    text, _ = cut(
        f"{comment_marker}\n{review}",
        COMMENT_LIMIT,
        f"**Cut here:** a pull-request comment holds 64 KB. The whole review is in the [job summary]({run_url()}).",
    )
    repository = os.environ["GITHUB_REPOSITORY"]
    existing = find(repository, number, comment_marker)
    if existing is None:
        created = call("POST", f"/repos/{repository}/issues/{number}/comments", {"body": text})
        return str(created.get("html_url", ""))
    updated = call("PATCH", f"/repos/{repository}/issues/comments/{existing}", {"body": text})
    return str(updated.get("html_url", ""))


def find(repository: str, number: int, comment_marker: str) -> int | None:
    """The first comment of the pull request that the review's author wrote and that starts with the marker, page by
    page."""
    author = os.environ.get("COMMENT_AUTHOR", "").strip() or DEFAULT_AUTHOR
    page = 1
    while True:
        comments = call("GET", f"/repos/{repository}/issues/{number}/comments?per_page={PAGE_SIZE}&page={page}")
        if not isinstance(comments, list):
            raise CommentProblem("the comments of the pull request: not a list")
        for comment in comments:
            written_by = (comment.get("user") or {}).get("login")
            if written_by == author and str(comment.get("body", "")).startswith(comment_marker):
                return int(comment["id"])
        if len(comments) < PAGE_SIZE:
            return None
        page += 1


def call(method: str, path: str, payload: dict[str, str] | None = None) -> Any:
    api = os.environ.get("GITHUB_API_URL", "https://api.github.com").rstrip("/")
    request = urllib.request.Request(
        f"{api}{path}",
        method=method,
        data=None if payload is None else json.dumps(payload).encode(),
        headers={
            "Accept": "application/vnd.github+json",
            "Authorization": f"Bearer {os.environ.get('COMMENT_GITHUB_TOKEN', '')}",
            "Content-Type": "application/json",
            "User-Agent": "ecr-retention-review",
            "X-GitHub-Api-Version": "2022-11-28",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:
        hint = " (the job needs permissions: pull-requests: write)" if error.code in (403, 404) else ""
        raise CommentProblem(f"{method} {path.split('?')[0]}: HTTP {error.code} {error.reason}{hint}") from None
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise CommentProblem(f"{method} {path.split('?')[0]}: {error}") from None


if __name__ == "__main__":
    sys.exit(main())
