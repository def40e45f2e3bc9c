"""`diff --fail-on`: the conditions under which a rules change fails its review (exit 1).

- `deletions-increase`: the new rules remove (delete or archive) more images in all than the old ones.
- `deletions-over N`: the change newly removes more than N images.
- `bytes-over SIZE`: the images the change newly removes hold more than SIZE (`500MiB`, `2GB`, `1.5 GiB`, bytes).

Each judges what the rules decide, with the brakes off: a repository over `max_delete_fraction` and a blocked run keep
their images today, but those removals happen the day the share falls under the limit, someone raises it, or the
manifests are fresh again. A brake is not a decision; when one holds anything back, the reason says which figure was
judged and what a run on these inputs removes now.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ecr_retention.domain.reporting.sizes import human_bytes
from ecr_retention.domain.review.rules_diff import RulesDiff

ConditionName = Literal["deletions-increase", "deletions-over", "bytes-over"]
CONDITION_NAMES: tuple[ConditionName, ...] = ("deletions-increase", "deletions-over", "bytes-over")

_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]i?B|B)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
_UNITS |= {"KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


@dataclass(frozen=True)
class FailOn:
    name: ConditionName
    limit: int = 0

    def __str__(self) -> str:
        if self.name == "deletions-increase":
            return self.name
        shown = human_bytes(self.limit) if self.name == "bytes-over" else str(self.limit)
        return f"{self.name} {shown}"

    def breach(self, diff: RulesDiff) -> str | None:
        """Why the condition holds for this diff, or None when it does not."""
        reason = self._holds(diff)
        return None if reason is None else reason + judged_figure(diff)

    def _holds(self, diff: RulesDiff) -> str | None:
        totals = diff.totals
        more = totals.removed_more
        if self.name == "deletions-increase" and totals.removals_after > totals.removals_before:
            return f"{self}: the new rules remove {totals.removals_after} images, the old ones {totals.removals_before}"
        if self.name == "deletions-over" and more.images > self.limit:
            return f"{self}: the change removes {more.images} more images"
        if self.name == "bytes-over" and more.bytes > self.limit:
            return f"{self}: the images the change removes hold {human_bytes(more.bytes)}"
        return None


def judged_figure(diff: RulesDiff) -> str:
    """Which figure a condition judged, when a brake makes the two differ."""
    totals = diff.totals
    if not totals.braked:
        return ""
    return (
        f" (judged on what the rules decide, with the brakes off; a run on these inputs removes "
        f"{totals.removals_after_now} now under the new rules, {totals.removals_before_now} under the old)"
    )


def parse_conditions(words: Sequence[str]) -> list[FailOn]:
    """`deletions-increase`, `deletions-over N`, `bytes-over SIZE`, as separate words or joined by `=`. Raises
    ValueError naming what cannot be read."""
    tokens = [part for word in words for part in (word.split("=", 1) if "=" in word else [word])]
    conditions: list[FailOn] = []
    while tokens:
        condition, used = _first_condition(tokens)
        conditions.append(condition)
        tokens = tokens[used:]
    return conditions


def _first_condition(tokens: Sequence[str]) -> tuple[FailOn, int]:
    """The condition the tokens begin with, and how many tokens it takes."""
    name = tokens[0].strip()
    if name == "deletions-increase":
        return FailOn("deletions-increase"), 1
    if name == "deletions-over":
        return FailOn("deletions-over", parse_count(_value_of(name, tokens, "number"))), 2
    if name == "bytes-over":
        return FailOn("bytes-over", parse_size(_value_of(name, tokens, "size"))), 2
    raise ValueError(f"{name!r} is not a condition; use {', '.join(CONDITION_NAMES)}")


def _value_of(name: str, tokens: Sequence[str], what: str) -> str:
    if len(tokens) < 2:
        raise ValueError(f"{name} needs a {what}")
    return tokens[1]


def parse_count(text: str) -> int:
    if not text.strip().isdigit() or not text.strip().isascii():
        raise ValueError(f"deletions-over: {text!r} is not a whole number of images")
    return int(text)


def parse_size(text: str) -> int:
    match = _SIZE.match(text)
    if match is None:
        raise ValueError(f"bytes-over: {text!r} is not a size (e.g. 500MiB, 2GB, 1073741824)")
    return int(float(match[1]) * _UNITS[(match[2] or "").upper()])


def breaches(conditions: Sequence[FailOn], diff: RulesDiff) -> list[str]:
    return [reason for reason in (condition.breach(diff) for condition in conditions) if reason is not None]
