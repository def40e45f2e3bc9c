"""Markdown for a pull-request comment and the job summary, shared by `diff` and `lifecycle-diff`: text from a
snapshot, a manifest or a rules file made inert (no HTML, no markup, no mention), and a comment kept under GitHub's
size limit however large the change."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence

from ecr_retention.tables import printable

# GitHub refuses a comment over 65,536 characters; the rest of the budget is the workflow's marker and header.
MARKDOWN_BUDGET = 60_000
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|~])")  # parentheses are inert once brackets are escaped
# `@user` and `@org/team` notify people when the comment is posted: a rule's description or a workload name must not.
# A zero-width space after every `@` (as the entity, which survives any editor) breaks the mention; GitHub renders
# `@&#8203;user` as the plain text `@user`.
_MENTION_BREAK = "@&#8203;"


def md(text: str) -> str:
    """Text from a snapshot or a rules file, inert in Markdown: no control character, no HTML, no markup, no
    mention."""
    escaped = _MARKDOWN_SPECIAL.sub(r"\\\1", html.escape(printable(text), quote=False))
    return escaped.replace("@", _MENTION_BREAK)


def plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else (many or one + 's')}"


def within_budget(head: Sequence[str], sections: Iterable[str], budget: int) -> tuple[list[str], int]:
    """`head` whole, then each section that still fits under `budget` characters (with room for the closing line the
    caller adds), and how many were left out."""
    parts = list(head)
    size = sum(len(part) + 1 for part in parts)  # each part and the newline that joins it
    left_out = 0
    for section in sections:
        if size + len(section) + 1 > budget - 200:
            left_out += 1
            continue
        parts.append(section)
        size += len(section) + 1
    return parts, left_out
