"""The lifecycle doctor on native archive rules (`transition` to `archive`): an archived image cannot be
pulled, so a rule that archives what a cluster runs breaks its next restart (ImagePullBackOff)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from ecr_retention.domain.doctor.diagnosis import comparable_config, diagnose
from ecr_retention.domain.doctor.diagnosis_model import RepositoryDiagnosis
from ecr_retention.domain.doctor.models import Finding, KeepTags
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.lifecycle.parsing import parse_policy
from ecr_retention.domain.lifecycle.policy import LifecyclePolicy
from ecr_retention.domain.planning import plan_registry
from ecr_retention.domain.planning.plan import RepositoryPlan
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.domain.registry.images import ImageDetail
from ecr_retention.domain.registry.replication import ReplicationConfiguration
from support.builders import HOST, NOW, config, digest, image, in_use, repository, snapshot

DAY = timedelta(days=1)
US_HOST = "123456789012.dkr.ecr.us-east-1.amazonaws.com"
TRANSITION = {"type": "transition", "targetStorageClass": "archive"}


def archive_rule(priority: int, count_type: str, days: int, *patterns: str) -> dict[str, Any]:
    return {
        "rulePriority": priority,
        "selection": {"tagStatus": "tagged", "tagPatternList": list(patterns)}
        | {"countType": count_type, "countUnit": "days", "countNumber": days},
        "action": TRANSITION,
    }


def policy(*rules: dict[str, Any]) -> LifecyclePolicy:
    return parse_policy(json.dumps({"rules": list(rules)}, indent=2))


# Archive version images not pulled for 30 days, as AWS's examples do.
PULLED_30D = policy(archive_rule(1, "sinceImagePulled", 30, "*.*"))
PUSHED_30D = policy(archive_rule(1, "sinceImagePushed", 30, "*.*"))

DETAILS = [
    image("v345", "1.12.345", age=90 * DAY, pulled_ago=45 * DAY),  # the long-running pod's image
    image("v352", "1.12.352", age=60 * DAY, pulled_ago=40 * DAY),
    image("v359", "1.12.359", age=40 * DAY),  # never pulled
    image("v362", "latest", "1.12.362", age=2 * DAY, pulled_ago=DAY),
]


def repo(details: list[dict[str, Any]]) -> list[ImageDetail]:
    return [ImageDetail.model_validate({**d, "repositoryName": "app"}) for d in details]


def run(pol: LifecyclePolicy, **kwargs: Any) -> RepositoryDiagnosis:
    return diagnose(
        pol, repo(DETAILS), now=NOW, repository_name="app", registry=registry(kwargs.pop("replication", None)), **kwargs
    )


def registry(replication: Any = None) -> RegistryCoordinates:
    return RegistryCoordinates("123456789012", "eu-west-1", *(() if replication is None else (replication,)))


def findings(diagnosis: RepositoryDiagnosis, code: str) -> list[Finding]:
    return [f for f in diagnosis.findings if f.code == code]


def replicating(delete: bool) -> ReplicationConfiguration:
    return ReplicationConfiguration.model_validate(
        {
            "rules": [
                {
                    "destinations": [{"region": "us-east-1", "registryId": "123456789012"}],
                    "deleteReplication": {"enabled": delete},
                }
            ]
        }
    )


def repository_plan(rules: list[dict[str, Any]]) -> RepositoryPlan:
    cfg = comparable_config(config(rules, clusters=["prod"], max_delete_fraction=1.0))
    return plan_registry(cfg, snapshot(repository("app", *DETAILS)), Inventory(), NOW).repositories[0]


def test_archive_rule_that_takes_an_image_a_cluster_runs_by_tag_is_an_error() -> None:
    inventory = Inventory(manifests=(in_use("prod", (f"{HOST}/app:1.12.345", None)),))
    diagnosis = run(PULLED_30D, inventory=inventory)
    [finding] = findings(diagnosis, "archives-in-use")
    assert finding.severity == "error"
    assert finding.rule_priority == 1
    assert finding.image_digest == digest("v345")
    assert finding.message.startswith(
        f"rule 1 would archive sha256:{digest('v345')[7:19]} [1.12.345], which runs in cluster prod, "
        "namespace default, Deployment/web (pod): "
    )
    assert "fails until it is restored (ImagePullBackOff), and restores take up to 20 minutes" in finding.message
    assert [w.cluster for w in finding.in_use_by] == ["prod"]
    assert finding.policy_edit == KeepTags(tags=("1.12.345",))
    assert "ecr-retention's archive rules" in finding.fix
    assert findings(diagnosis, "expires-in-use") == []
    assert diagnosis.has_errors


def test_archive_rule_that_takes_an_image_a_cluster_runs_by_digest_is_an_error() -> None:
    inventory = Inventory(manifests=(in_use("prod", (f"{HOST}/app@{digest('v352')}", "v352")),))
    [finding] = findings(run(PULLED_30D, inventory=inventory), "archives-in-use")
    assert finding.severity == "error"
    assert finding.image_digest == digest("v352")
    assert finding.policy_edit == KeepTags(tags=("1.12.352",))


def test_since_image_pulled_is_named_with_the_last_pull_and_why_a_running_pod_does_not_count() -> None:
    inventory = Inventory(manifests=(in_use("prod", (f"{HOST}/app:1.12.345", None)),))
    [finding] = findings(run(PULLED_30D, inventory=inventory), "archives-in-use")
    assert (
        "rule 1 counts days since the last recorded pull (sinceImagePulled, more than 30 days), and the image was "
        "last pulled 45 days ago" in finding.message
    )
    assert "a long-running pod pulls only when it starts" in finding.message


def test_never_pulled_image_is_aged_from_its_push() -> None:
    inventory = Inventory(manifests=(in_use("prod", (f"{HOST}/app:1.12.359", None)),))
    [finding] = findings(run(PULLED_30D, inventory=inventory), "archives-in-use")
    assert "has no recorded pull, so ECR counts from its push 40 days ago" in finding.message


def test_an_archive_rule_by_push_time_does_not_talk_about_pulls() -> None:
    inventory = Inventory(manifests=(in_use("prod", (f"{HOST}/app:1.12.345", None)),))
    [finding] = findings(run(PUSHED_30D, inventory=inventory), "archives-in-use")
    assert "ImagePullBackOff" in finding.message
    assert "sinceImagePulled" not in finding.message


def test_nothing_is_reported_when_no_cluster_runs_what_the_rule_archives() -> None:
    inventory = Inventory(manifests=(in_use("prod", (f"{HOST}/app:1.12.362", None)),))
    diagnosis = run(PULLED_30D, inventory=inventory)
    assert findings(diagnosis, "archives-in-use") == []
    assert not diagnosis.has_errors


def test_the_fixed_policy_keeps_the_in_use_image_out_of_the_archive_rule() -> None:
    inventory = Inventory(manifests=(in_use("prod", (f"{HOST}/app:1.12.345", None)),))
    diagnosis = run(PULLED_30D, inventory=inventory)
    assert diagnosis.fixed_policy is not None
    fixed = parse_policy(json.dumps(diagnosis.fixed_policy, indent=2))
    assert fixed.ordered_rules[0].selection.tag_pattern_list == ("1.12.345",)
    again = run(fixed, inventory=inventory)
    assert findings(again, "archives-in-use") == []


def test_a_delete_replicating_destinations_cluster_is_named_with_what_reaches_it() -> None:
    inventory = Inventory(manifests=(in_use("us-prod", (f"{US_HOST}/app:1.12.345", None)),))
    diagnosis = run(PULLED_30D, inventory=inventory, replication=replicating(delete=True))
    [finding] = findings(diagnosis, "archives-in-use")
    # The copy there stays pullable; only the later expiry from archive is repeated there.
    assert finding.severity == "warning"
    assert "cluster us-prod (us-east-1, replicated), namespace default, Deployment/web (pod)" in finding.message
    assert "ECR documents no replication of an archive" in finding.message
    assert "ECR deletes it there too (deleteReplication)" in finding.message
    assert finding.policy_edit == KeepTags(tags=("1.12.345",))


def test_a_cluster_here_and_one_at_a_destination_make_it_an_error() -> None:
    inventory = Inventory(
        manifests=(
            in_use("us-prod", (f"{US_HOST}/app:1.12.345", None)),
            in_use("prod", (f"{HOST}/app@{digest('v345')}", "v345")),
        )
    )
    [finding] = findings(run(PULLED_30D, inventory=inventory, replication=replicating(delete=True)), "archives-in-use")
    assert finding.severity == "error"
    assert "ImagePullBackOff" in finding.message
    assert {w.cluster for w in finding.in_use_by} == {"prod", "us-prod"}


def test_a_destination_without_delete_replication_is_no_concern_of_the_policy() -> None:
    inventory = Inventory(manifests=(in_use("us-prod", (f"{US_HOST}/app:1.12.345", None)),))
    diagnosis = run(PULLED_30D, inventory=inventory, replication=replicating(delete=False))
    assert findings(diagnosis, "archives-in-use") == []


def test_an_archive_rule_that_takes_an_image_the_rules_file_keeps_is_a_warning() -> None:
    plan = repository_plan(
        [{"keep": {"tags": ["1.12.352"]}, "description": "the rollback target"}, {"delete": {"untagged": True}}]
    )
    diagnosis = run(PULLED_30D, plan=plan)
    [finding] = findings(diagnosis, "archives-kept-image")
    assert finding.severity == "warning"  # an archive is undone by a restore, and no cluster is known to run it
    assert finding.image_digest == digest("v352")
    assert "would archive" in finding.message
    assert "which the rules file keeps (the rollback target)" in finding.message
    assert "restored, which takes up to 20 minutes" in finding.message
    assert "sinceImagePulled" in finding.message
    assert finding.policy_edit == KeepTags(tags=("1.12.352",))
    assert findings(diagnosis, "expires-kept-image") == []


def test_json_diagnosis_carries_the_archive_finding() -> None:
    inventory = Inventory(manifests=(in_use("prod", (f"{HOST}/app:1.12.345", None)),))
    data = run(PULLED_30D, inventory=inventory).to_json_dict()
    [finding] = [f for f in data["findings"] if f["code"] == "archives-in-use"]
    assert finding["severity"] == "error"
    assert finding["rulePriority"] == 1
    assert finding["imageTags"] == ["1.12.345"]
    assert finding["inUseBy"] == [
        {"cluster": "prod", "namespace": "default", "workload": "Deployment/web", "source": "pod"}
    ]
    assert finding["policyEdit"] == {"kind": "keep-tags", "tags": ["1.12.345"]}
    assert data["summary"]["errors"] >= 1


def test_a_restored_image_not_pulled_since_is_aged_from_its_restore() -> None:
    restored = {**image("r1", "1.11.0", age=200 * DAY, pulled_ago=150 * DAY)}
    restored["lastActivatedAt"] = (NOW - 35 * DAY).isoformat()
    images = [ImageDetail.model_validate({**restored, "repositoryName": "app"})]
    inventory = Inventory(manifests=(in_use("prod", (f"{HOST}/app:1.11.0", None)),))
    diagnosis = diagnose(
        PULLED_30D,
        images,
        now=NOW,
        repository_name="app",
        registry=registry(),
        inventory=inventory,
    )
    [finding] = findings(diagnosis, "archives-in-use")
    assert "has not been pulled since its restore 35 days ago" in finding.message


def test_a_transition_that_takes_a_mutable_tags_image_says_pulls_of_the_tag_fail_not_that_it_is_removed() -> None:
    details = [image("dev", "1.12.360-dev", "dev", age=50 * DAY, pulled_ago=45 * DAY), *DETAILS]
    diagnosis = diagnose(
        policy(archive_rule(1, "sinceImagePulled", 30, "*.*")),
        repo(details),
        now=NOW,
        repository_name="app",
        registry=registry(),
    )

    [finding] = findings(diagnosis, "mutable-tag-expires")
    assert "would archive" in finding.message
    assert "pulls of the mutable tag dev fail until the image is restored" in finding.message
    assert "goes with it" not in finding.message
