"""The events the sentinel's rules match, as AWS documents them (tests/fixtures/sentinel/SOURCES.md), parsed by the
handler's Powertools models into the removals they tell."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ecr_retention.domain.errors import InputError
from ecr_retention.domain.sentinel.trail_events import LifecyclePolicyPut
from ecr_retention.handlers.events import parse_event
from ecr_retention.handlers.sentinel_events import SentinelEvent

FIXTURES = Path(__file__).parents[1] / "fixtures" / "sentinel"


def fixture(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return loaded


def parsed(event: Any) -> Any:
    return parse_event(event, SentinelEvent, "sentinel event").observed()


def test_every_fixture_parses() -> None:
    names = sorted(path.name for path in FIXTURES.glob("*.json"))
    assert len(names) == 5
    for name in names:
        assert parsed(fixture(name)).event_id


def test_an_image_deletion_is_one_removal_of_its_tag() -> None:
    [removal] = parsed(fixture("image-deleted.json")).removals()
    assert (removal.repository_name, removal.image_tags, removal.action, removal.cause) == (
        "my-repository-name",
        ("latest",),
        "deleted",
        "image-action",
    )
    assert removal.image_digest == "sha256:7f5b2640fe6fb4f46592dfd3410c4a79dac4f89e4782432e0378abcd1234"
    assert removal.event_id == "dd3b46cb-2c74-f49e-393b-28286b67279d"
    assert removal.removed_at.isoformat() == "2019-11-16T02:01:05+00:00"


def test_an_archive_action_is_an_archived_removal() -> None:
    [removal] = parsed(fixture("image-archived.json")).removals()
    assert (removal.repository_name, removal.action, removal.image_tags) == ("ubuntu", "archived", ())


def test_a_policy_execution_event_is_one_removal_per_image_with_its_rule() -> None:
    observed = parsed(fixture("policy-execution.json"))
    removals = observed.removals()
    assert [(r.image_tags, r.rule_priority, r.action, r.cause) for r in removals] == [
        (("alpine",), 1, "deleted", "lifecycle"),
        (("centos",), 1, "deleted", "lifecycle"),
    ]
    assert {r.event_id for r in removals} == {"9354dd7f-9aac-4e9d-956d-12561a4923aa"}  # CloudTrail's eventID
    assert observed.repository_name == "testrepo"
    assert removals[0].by_what == "lifecycle rule 1 of testrepo's policy"


def test_a_put_lifecycle_policy_call_carries_the_policy_and_its_author() -> None:
    observed = parsed(fixture("put-lifecycle-policy.json"))
    assert isinstance(observed.detail, LifecyclePolicyPut)
    assert observed.removals() == ()
    assert observed.detail.request_parameters.repository_name == "app"
    assert json.loads(observed.detail.request_parameters.lifecycle_policy_text)["rules"][0]["rulePriority"] == 1
    assert observed.detail.user_identity.who == "arn:aws:sts::123456789012:assumed-role/Admin/mary"


def test_a_batch_delete_tells_one_removal_per_digest_with_its_tags_and_the_principal() -> None:
    removals = parsed(fixture("batch-delete-image.json")).removals()
    assert [(r.image_digest[:15] if r.image_digest else None, r.image_tags) for r in removals] == [
        ("sha256:ddba4d27", ("dev",)),  # asked by tag: the registry tells whether the digest stays
        ("sha256:6ab380c5", ("1.0.0",)),  # asked by digest: the whole image, with the tag it carried
    ]
    assert {r.principal for r in removals} == {"arn:aws:iam::123456789012:user/Mary_Major"}
    assert {r.cause for r in removals} == {"api"}


def test_a_refused_batch_delete_removed_nothing() -> None:
    event = fixture("batch-delete-image.json")
    event["detail"]["errorCode"] = "AccessDenied"
    event["detail"]["responseElements"] = None
    assert parsed(event).removals() == ()


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda e: e.pop("detail"), "sentinel event: "),
        (lambda e: e.update({"detail-type": "ECR Image Scan"}), "sentinel event: "),
        (lambda e: e["detail"].update({"action-type": "PUSH"}), "sentinel event: "),
        (lambda e: e["detail"].pop("repository-name"), "sentinel event: "),
    ],
)
def test_a_malformed_event_is_refused_in_one_line(change: Any, problem: str) -> None:
    event = fixture("image-deleted.json")
    change(event)
    with pytest.raises(InputError) as raised:
        parsed(event)
    assert str(raised.value).startswith(problem)
    assert "\n" not in str(raised.value)
