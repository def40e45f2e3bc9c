"""A plan's and a report's reasons (domain/planning/plan.py Reason) are held in slots, as a report's image entries
are: a run report of 100,000 images reads, holds and writes as many reasons, and a model's per-instance dict and
set of the fields given were most of each one's memory. What a reason is to its readers stays as it was: validated
from JSON and from Python alike, compared and hashed by its fields, written with the same keys in the same order."""

from __future__ import annotations

import copy
import json
import pickle

import pytest
from pydantic import ValidationError

from ecr_retention.domain.planning.plan_parts import Reason
from ecr_retention.domain.reporting.report import RepositoryReport

REASON = Reason(kind="delete-rule", rule="policies[0].rules[1]", detail="delete tags *.*, older than 30d")


def test_a_reason_holds_its_fields_and_no_bookkeeping() -> None:
    assert not hasattr(REASON, "__dict__")
    assert not hasattr(REASON, "__pydantic_fields_set__")
    with pytest.raises(AttributeError):
        REASON.kind = "keep-rule"  # type: ignore[misc]


def test_equal_reasons_compare_and_hash_alike_and_survive_a_copy() -> None:
    same = Reason(kind="delete-rule", rule="policies[0].rules[1]", detail="delete tags *.*, older than 30d")
    other = Reason(kind="delete-rule", rule=None, detail="delete tags *.*, older than 30d")

    assert same == REASON
    assert hash(same) == hash(REASON)
    assert {same, REASON} == {REASON}
    assert other != REASON
    for restored in (pickle.loads(pickle.dumps(REASON)), copy.deepcopy(REASON), copy.copy(REASON)):
        assert restored == REASON


def test_a_reason_is_written_with_its_three_keys_in_order() -> None:
    written = RepositoryReport(repository_name="app", outcome="ok").model_dump(mode="json", by_alias=True)
    entry = {
        "imageDigest": "sha256:" + "1" * 64,
        "imageTags": [],
        "imagePushedAt": "2026-11-30T06:00:00Z",
        "kind": "delete-rule",
        "detail": "d",
        "reasons": [{"detail": REASON.detail, "kind": REASON.kind, "rule": REASON.rule}],
    }
    read = RepositoryReport.model_validate({**written, "deleted": [entry]})

    assert read.deleted[0].reasons == (REASON,)
    assert json.dumps(read.model_dump(mode="json", by_alias=True)["deleted"][0]["reasons"]) == (
        '[{"kind": "delete-rule", "rule": "policies[0].rules[1]", "detail": "delete tags *.*, older than 30d"}]'
    )


@pytest.mark.parametrize(
    "reason",
    [
        {"kind": "deleted-by-magic", "detail": "x"},
        {"kind": "delete-rule"},
        {"kind": "delete-rule", "detail": 7},
    ],
)
def test_a_reason_read_from_a_stored_report_is_still_checked(reason: dict[str, object]) -> None:
    document = {
        "repositoryName": "app",
        "outcome": "ok",
        "keptImages": [
            {
                "imageDigest": "sha256:" + "1" * 64,
                "imageTags": [],
                "imagePushedAt": "2026-11-30T06:00:00Z",
                "kind": "keep-rule",
                "detail": "d",
                "reasons": [reason],
            }
        ],
    }
    with pytest.raises(ValidationError, match=r"keptImages\.0\.reasons\.0"):
        RepositoryReport.model_validate_json(json.dumps(document))
    with pytest.raises(ValidationError):
        Reason(**reason)  # type: ignore[arg-type]
