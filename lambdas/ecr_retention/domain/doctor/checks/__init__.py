"""The doctor's checks, one function each: a policy evaluation in, findings out."""

from __future__ import annotations

from collections.abc import Callable

from ecr_retention.domain.doctor.checks.and_lists import check_and_lists
from ecr_retention.domain.doctor.checks.in_use import check_in_use
from ecr_retention.domain.doctor.checks.multi_arch import check_untagged_with_multi_arch
from ecr_retention.domain.doctor.checks.mutable_tags import check_mutable_tags
from ecr_retention.domain.doctor.checks.rule_order import check_count_reduced, check_shadowed_rules
from ecr_retention.domain.doctor.checks.rules_file import check_against_plan, check_plan_keeps
from ecr_retention.domain.doctor.checks.self_naming import check_rules_naming_mutable_tags
from ecr_retention.domain.doctor.context import DoctorContext
from ecr_retention.domain.doctor.models import SEVERITY_ORDER, Finding

CHECKS: tuple[Callable[[DoctorContext], list[Finding]], ...] = (
    check_plan_keeps,
    check_in_use,
    check_mutable_tags,
    check_rules_naming_mutable_tags,
    check_and_lists,
    check_shadowed_rules,
    check_count_reduced,
    check_untagged_with_multi_arch,
    check_against_plan,
)


def run_checks(context: DoctorContext) -> list[Finding]:
    """Every check's findings: errors first, then by rule priority, code and image."""
    findings = [finding for check in CHECKS for finding in check(context)]
    return sorted(
        findings,
        key=lambda f: (SEVERITY_ORDER.index(f.severity), f.rule_priority or 0, f.code, f.image_digest or ""),
    )
