"""EcrRegistry.replication_configuration against moto's DescribeRegistry: the rules as ECR stores them, and every
way of not reading them is ReplicationUnreadable (a run then deletes nothing), never an empty configuration."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from ecr_retention.aws.ecr_registry import EcrRegistry
from ecr_retention.domain.replication import Replica
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
    with pytest.raises(ReplicationUnreadable, match=r"^DescribeRegistry failed: AccessDeniedException: not author"):
        registry.replication_configuration()


def test_throttling_past_the_retries_is_unreadable(fidelity: EcrFidelity, registry: EcrRegistry) -> None:
    fidelity.throttle("DescribeRegistry", times=100)
    with pytest.raises(ReplicationUnreadable, match="ThrottlingException"):
        registry.replication_configuration()
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
    with pytest.raises(
        ReplicationUnreadable, match=r"DescribeRegistry answered a replication configuration: .*destinations"
    ):
        registry.replication_configuration()
