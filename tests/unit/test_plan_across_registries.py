"""The planner across registries (SPEC "Several Regions"): a policy's `regions`, and a replica from a registry the run
also prunes, which its source's rules decide (domain/planning/guards.py defer_to_sources)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.planning import build_run_context, plan_repository
from ecr_retention.domain.planning.plan import RepositoryPlan
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from support.builders import ACCOUNT, NOW, config, digest, image, in_use, repository, snapshot

HOME, OTHER = "eu-west-1", "us-east-1"
DELETE_OLD = {"delete": {"tags": ["v*"], "older_than": "30d"}}


def planned(
    cfg: RetentionConfig,
    region: str,
    *images: dict[str, Any],
    replicated: dict[str, str] | None = None,
    inventory: Inventory | None = None,
) -> RepositoryPlan:
    """The plan of `app` in the registry of `region`."""
    run = build_run_context(
        cfg, inventory or Inventory(), NOW, registry=RegistryCoordinates(ACCOUNT, region), tags_by_repository={}
    )
    repo = snapshot(repository("app", *images), region=region).repositories[0]
    return plan_repository(repo, run, replicated).plan


def test_a_policy_scoped_to_a_region_governs_only_that_registry() -> None:
    cfg = config(policies=[{"repositories": ["app"], "regions": [OTHER], "rules": [DELETE_OLD]}])

    here = planned(cfg, HOME, image("a", "v1"))
    there = planned(cfg, OTHER, image("a", "v1"))

    assert here.policy is None
    assert [d.action for d in here.images] == ["keep"]
    assert [d.action for d in there.images] == ["delete"]


def test_the_first_policy_that_takes_in_the_region_applies() -> None:
    keep_all = {"keep": {"tags": ["*"]}}
    cfg = config(
        policies=[
            {"repositories": ["app"], "regions": [OTHER], "rules": [keep_all]},
            {"repositories": ["app"], "rules": [DELETE_OLD]},
        ]
    )

    assert [d.action for d in planned(cfg, HOME, image("a", "v1")).images] == ["delete"]
    assert [d.action for d in planned(cfg, OTHER, image("a", "v1")).images] == ["keep"]


def test_a_replica_is_kept_for_its_source_to_decide_and_its_own_images_follow_the_rules() -> None:
    cfg = config([DELETE_OLD], max_delete_fraction=0.5)
    replicas = {digest(seed): HOME for seed in ("r1", "r2", "r3")}

    plan = planned(
        cfg, OTHER, image("r1", "v1"), image("r2", "v2"), image("r3", "v3"), image("own", "v0"), replicated=replicas
    )

    decided = {d.image_tags[0]: (d.action, d.reasons[0].kind) for d in plan.images}
    assert decided == {
        "v1": ("keep", "replica"),
        "v2": ("keep", "replica"),
        "v3": ("keep", "replica"),
        "v0": ("delete", "delete-rule"),
    }
    # One deletion of four images: within max_delete_fraction 0.5 (the replicas count as kept, not as removals).
    assert plan.skipped is None
    [v1] = [d for d in plan.images if d.image_tags == ("v1",)]
    [reason] = [r for r in v1.reasons if r.kind == "replica"]
    assert reason.detail == (
        "a replica of app in eu-west-1, whose deletions replicate here (deleteReplication): eu-west-1's rules decide it"
    )


def test_what_runs_comes_first_among_a_replicas_reasons() -> None:
    cfg = config([DELETE_OLD])
    host = f"{ACCOUNT}.dkr.ecr.{OTHER}.amazonaws.com"
    inventory = Inventory(manifests=(in_use("edge", (f"{host}/app:v1", None)),))

    plan = planned(
        cfg, OTHER, image("r1", "v1", age=timedelta(days=90)), replicated={digest("r1"): HOME}, inventory=inventory
    )

    assert [r.kind for r in plan.images[0].reasons][:2] == ["in-use", "replica"]
    assert plan.images[0].main_reason.kind == "in-use"
