"""The reason kinds' one table (domain/planning/reasons.py): every kind has one row, and what the plan, the planner's
fixed reasons and the page read from it is what they held before the table (issue 44, change amplification)."""

from __future__ import annotations

from collections import Counter
from typing import get_args

from ecr_retention.domain.planning import explain
from ecr_retention.domain.planning.plan import PROTECTION_ORDER
from ecr_retention.domain.planning.reasons import PROTECTING, REASON_KINDS, ReasonKind
from ecr_retention.report_page.checks import removals_check
from ecr_retention.report_page.text import line
from tests.unit.report_page.reports import mixed_run


def test_every_reason_kind_has_exactly_one_row() -> None:
    kinds = [row.kind for row in REASON_KINDS]

    assert sorted(kinds) == sorted(get_args(ReasonKind))
    assert len(kinds) == len(set(kinds))


def test_the_ranked_rows_are_the_protection_order() -> None:
    assert PROTECTION_ORDER == (
        "blocked",
        "skipped",
        "in-use",
        "hold",
        "restoring",
        "replica",
        "keep-rule",
        "min-age",
        "index-child",
        "referrer",
        "keep-newest",
        "tag-changed",
        "delete-failed",
        "quarantine",
        "no-delete-rule",
        "no-policy",
        "in-use-archived",
    )


def test_the_protecting_rows_are_what_a_removal_never_carries() -> None:
    assert list(PROTECTING) == ["in-use", "keep-rule", "min-age", "blocked", "skipped"]


def test_the_removals_check_names_every_protecting_kind_in_words() -> None:
    check = removals_check(mixed_run(), Counter({(("delete-rule", "policies[0].rules[1]"),): 5}))

    assert check.summary == line(
        "5 removals checked: none is in use, kept by a rule, younger than min_age, blocked or skipped"
    )


def test_the_fixed_reasons_read_their_words_from_the_table() -> None:
    assert explain.RESTORING_REASON.detail == "being restored from archive (ACTIVATING)"
    assert explain.RESTORE_OFF_REASON.detail == (
        "archived while in use; safety.restore_in_use is false, so it is not restored"
    )
    assert explain.no_policy_reason().detail == "no policy's repositories match this repository"
