"""Every reason kind, one row each: whether it can be a kept image's main reason and in what order (the rows' order),
whether a removal carrying it contradicts itself, and its words where they are the same for every image.

A new reason kind, a new protection source's for one, is one name in `ReasonKind` and one row in `REASON_KINDS`; the
plan's one-line summaries (plan.py), the planner's fixed reasons (explain.py) and the page's removals check
(report_page/checks.py) read them from here. A reason whose detail names the image's own facts (its workloads, its
age, its parent) is worded in explain.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ReasonKind = Literal[
    "delete-rule",
    "keep-rule",
    "keep-newest",
    "in-use",
    "hold",
    "index-child",
    "referrer",
    "min-age",
    "no-delete-rule",
    "no-policy",
    "blocked",
    "skipped",
    "tag-changed",
    "delete-failed",
    "restoring",
    "in-use-archived",
    "restore-failed",
    "quarantine",
    "replica",
]


@dataclass(frozen=True, slots=True)
class ReasonKindRow:
    kind: ReasonKind
    # A kept image's main reason may be of this kind: the ranked rows, in the table's order, are the order in which
    # it is chosen for one-line summaries; an unranked kind comes after every ranked one.
    ranked: bool = True
    # How the page's removals check names what this kind protects, when a removal carrying it contradicts itself (the
    # planner never removes what it protects); None when a removal may carry it.
    protects: str | None = None
    # False for a state of the run or the repository (blocked, skipped) rather than a fact of the image.
    of_the_image: bool = True
    # The detail of every reason of this kind, when it names nothing of the image; None when explain.py words it.
    words: str | None = None


REASON_KINDS: tuple[ReasonKindRow, ...] = (
    ReasonKindRow("blocked", protects="blocked", of_the_image=False),
    ReasonKindRow("skipped", protects="skipped", of_the_image=False),
    ReasonKindRow("in-use", protects="in use"),
    ReasonKindRow("hold"),
    ReasonKindRow("restoring", words="being restored from archive (ACTIVATING)"),
    ReasonKindRow("replica"),
    ReasonKindRow("keep-rule", protects="kept by a rule"),
    ReasonKindRow("min-age", protects="younger than min_age"),
    ReasonKindRow("index-child"),
    ReasonKindRow("referrer"),
    ReasonKindRow("keep-newest"),
    ReasonKindRow("tag-changed"),
    ReasonKindRow("delete-failed"),
    ReasonKindRow("quarantine"),
    ReasonKindRow("no-delete-rule"),
    ReasonKindRow("no-policy", words="no policy's repositories match this repository"),
    ReasonKindRow(
        "in-use-archived", words="archived while in use; safety.restore_in_use is false, so it is not restored"
    ),
    ReasonKindRow("delete-rule", ranked=False),
    ReasonKindRow("restore-failed", ranked=False),
)
_ROWS = {row.kind: row for row in REASON_KINDS}

# The order in which a kept image's main reason is chosen for one-line summaries.
PROTECTION_ORDER: tuple[ReasonKind, ...] = tuple(row.kind for row in REASON_KINDS if row.ranked)
# A removal carrying one of these reasons contradicts itself: the planner never removes what they protect. Each with
# the words the page's check names it by: the image's own facts first, then the run's and the repository's state.
PROTECTING: dict[ReasonKind, str] = {
    row.kind: row.protects
    for row in sorted(REASON_KINDS, key=lambda row: not row.of_the_image)
    if row.protects is not None
}


def words_of(kind: ReasonKind) -> str:
    """The detail of every reason of this kind (a kind whose row has words)."""
    words = _ROWS[kind].words
    if words is None:
        raise ValueError(f"reason kind {kind} has no fixed words: explain.py words it")
    return words
