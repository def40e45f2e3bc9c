"""main_reason_of names an image's only reason without scanning for it (most images have one): what the rules that
scan the reasons name for every action and every kind of reason."""

from __future__ import annotations

from typing import get_args

import pytest

from ecr_retention.domain.planning.plan import REMOVALS, Action, main_reason_of
from ecr_retention.domain.planning.plan_parts import Reason
from ecr_retention.domain.planning.reasons import PROTECTION_ORDER, ReasonKind


def named_by_the_rules(action: Action, reasons: tuple[Reason, ...]) -> Reason:
    """The rules of main_reason_of, each applied by scanning the reasons."""
    kinds = [reason.kind for reason in reasons]
    if action == "restore":
        return reasons[kinds.index("in-use")] if "in-use" in kinds else reasons[0]
    if action in REMOVALS:
        for wanted in ("quarantine", "delete-rule"):
            if wanted in kinds:
                return reasons[kinds.index(wanted)]
        return reasons[0]
    ranks = [PROTECTION_ORDER.index(kind) if kind in PROTECTION_ORDER else len(PROTECTION_ORDER) for kind in kinds]
    return reasons[ranks.index(min(ranks))]


@pytest.mark.parametrize("action", get_args(Action))
@pytest.mark.parametrize("kind", get_args(ReasonKind))
def test_the_only_reason_is_the_one_the_rules_name(action: Action, kind: ReasonKind) -> None:
    reasons = (Reason(kind=kind, rule="a rule", detail="why"),)

    assert main_reason_of(action, reasons) is named_by_the_rules(action, reasons) is reasons[0]


@pytest.mark.parametrize("action", get_args(Action))
def test_of_several_reasons_the_rules_choose(action: Action) -> None:
    reasons = tuple(
        Reason(kind=kind, detail=kind) for kind in ("min-age", "in-use", "quarantine", "delete-rule", "keep-rule")
    )

    assert main_reason_of(action, reasons) is named_by_the_rules(action, reasons)
