"""EcrRegistry.replication_configuration against moto's DescribeRegistry: the rules as ECR stores them, and every
way of not reading them is ReplicationUnreadable (a run then deletes nothing), never an empty configuration."""

from __future__ import annotations

from typing import Any

import boto3
import botocore.session
import pytest

from ecr_retention.aws.ecr_registry import EcrRegistry
from ecr_retention.domain.registry.replication import Replica
from ecr_retention.ports import ReplicationUnreadable
from ecr_retention_dev.emulator.fidelity import EcrFidelity
from support.api_calls import ApiCallRecorder

from .conftest import ACCOUNT, REGION

PROD_ACCOUNT = "210987654321"
# moto keeps one rule only ("This feature is disabled" for more); tests/unit/test_replication.py covers several.
RULES = [
    {
        "destinations": [
            {"region": "us-east-1", "registryId": ACCOUNT},
            {"region": "eu-west-1", "registryId": PROD_ACCOUNT},
        ],
        "repositoryFilters": [{"filter": "app", "filterType": "PREFIX_MATCH"}],
        "deleteReplication": {"enabled": True},
    }
]


def test_reads_the_rules_and_their_delete_replication_in_one_call(
    fidelity: EcrFidelity, registry: EcrRegistry, recorder: ApiCallRecorder
) -> None:
    boto3.client("ecr", region_name=REGION).put_replication_configuration(replicationConfiguration={"rules": RULES})

    configuration = registry.replication_configuration()

    assert configuration.deletion_reach("app") == (
        Replica(ACCOUNT, "us-east-1", True),
        Replica(PROD_ACCOUNT, "eu-west-1", True),
    )
    assert configuration.replicas("web") == ()
    assert recorder.counts("ecr") == {"DescribeRegistry": 1}


def test_a_registry_without_replication_has_no_rules(fidelity: EcrFidelity, registry: EcrRegistry) -> None:
    assert registry.replication_configuration().rules == ()


def test_access_denied_is_unreadable_and_names_the_call(fidelity: EcrFidelity, registry: EcrRegistry) -> None:
    fidelity.fail("DescribeRegistry", "AccessDeniedException", message="not authorized to perform ecr:DescribeRegistry")
    with pytest.raises(
        ReplicationUnreadable, match=r"^DescribeRegistry failed: AccessDeniedException: not author"
    ) as caught:
        registry.replication_configuration()
    assert caught.value.denied  # the one failure worth naming the grant for


def test_throttling_past_the_retries_is_unreadable(fidelity: EcrFidelity, registry: EcrRegistry) -> None:
    fidelity.throttle("DescribeRegistry", times=100)
    with pytest.raises(ReplicationUnreadable, match="ThrottlingException") as caught:
        registry.replication_configuration()
    assert not caught.value.denied
    assert fidelity.served["DescribeRegistry"] > 1  # botocore retried first


def test_an_answer_about_another_registry_is_refused(fidelity: EcrFidelity, ecr_client: Any) -> None:
    """DescribeRegistry describes the caller's own registry: credentials of another account are no answer."""
    with pytest.raises(ReplicationUnreadable, match="answered for registry '123456789012', not 210987654321"):
        EcrRegistry(ecr_client, "210987654321", REGION).replication_configuration()


def test_a_configuration_this_release_cannot_read_is_unreadable(
    fidelity: EcrFidelity, registry: EcrRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer = {"registryId": ACCOUNT, "replicationConfiguration": {"rules": [{"destinations": "us-east-1"}]}}
    monkeypatch.setattr(registry._ecr, "describe_registry", lambda: answer)
    with pytest.raises(ReplicationUnreadable) as caught:
        registry.replication_configuration()
    assert str(caught.value) == (
        "DescribeRegistry answered, but its replicationConfiguration cannot be read: rules[0].destinations: "
        "should be a list, not a string"
    )
    assert not caught.value.denied  # the call succeeded: no permission is missing


def test_an_answer_with_a_key_this_release_does_not_know_is_unreadable_naming_it(
    fidelity: EcrFidelity, registry: EcrRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """botocore hands over only its model's members; one this release lacks (a newer botocore) is not guessed at."""
    rule = {**RULES[0], "deleteReplicationScope": "ALL"}
    answer = {"registryId": ACCOUNT, "replicationConfiguration": {"rules": [rule]}}
    monkeypatch.setattr(registry._ecr, "describe_registry", lambda: answer)
    with pytest.raises(ReplicationUnreadable, match=r"rules\[0\]\.deleteReplicationScope: unknown key; did you mean"):
        registry.replication_configuration()


def test_a_rule_the_api_answers_without_delete_replication_replicates_no_deletion(
    fidelity: EcrFidelity, registry: EcrRegistry
) -> None:
    """The API documents a missing deleteReplication as "does not replicate image deletions"."""
    rule = {key: value for key, value in RULES[0].items() if key != "deleteReplication"}
    boto3.client("ecr", region_name=REGION).put_replication_configuration(replicationConfiguration={"rules": [rule]})

    configuration = registry.replication_configuration()

    assert configuration.deletion_reach("app") == ()
    assert configuration.rules_without_delete_replication == ()  # stated, so a snapshot of it warns of nothing
    assert configuration.rules[0].delete_replication is not None
    assert configuration.rules[0].delete_replication.enabled is False


def test_the_pinned_botocore_reads_delete_replication() -> None:
    """The adapter reads a missing deleteReplication as false: true only while botocore's ECR model has the member
    (an older botocore would drop it from the answer, and deletions that do replicate would look unreplicated)."""
    model = botocore.session.get_session().get_service_model("ecr")
    assert "deleteReplication" in model.shape_for("ReplicationRule").members
