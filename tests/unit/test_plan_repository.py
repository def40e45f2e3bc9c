"""One repository planned alone (what a Lambda worker does) gets the plan it gets inside plan_registry."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.planning import build_run_context, plan_registry, plan_repository, tag_sources
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.domain.timestamps import parse_timestamp
from ecr_retention.loading import load_config, load_manifests, load_snapshots
from support.builders import NOW, config, digest, image, in_use, plan_one_by_one, repository, snapshot

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
DELETE_OLD = {"delete": {"tags": ["*"], "older_than": "30d"}}


def test_plan_registry_equals_plan_repository_per_repository_for_the_examples() -> None:
    cfg = load_config(ROOT / "retention.yaml")
    snap = load_snapshots(EXAMPLES / "snapshot.json")[0]
    inventory = load_manifests(EXAMPLES / "in-use")
    now = parse_timestamp("2026-11-30T06:00:00Z")
    whole = plan_registry(cfg, snap, inventory, now)
    assert any(tag_sources(cfg, repo.repository_name, None) for repo in snap.repositories)  # the example uses them
    assert plan_one_by_one(cfg, snap, inventory, now) == whole


def test_blocked_examples_are_blocked_one_repository_at_a_time_too() -> None:
    cfg = load_config(ROOT / "retention.yaml")
    snap = load_snapshots(EXAMPLES / "snapshot.json")[0]
    inventory = load_manifests(EXAMPLES / "in-use")
    late = parse_timestamp("2026-12-30T06:00:00Z")  # every manifest is stale by then
    whole = plan_registry(cfg, snap, inventory, late)
    assert whole.blocked
    assert plan_one_by_one(cfg, snap, inventory, late) == whole


def test_a_blocked_run_yields_a_blocked_repository_plan() -> None:
    cfg = config([DELETE_OLD], clusters=["prod"])
    run = build_run_context(cfg, Inventory(), NOW, registry=RegistryCoordinates(), tags_by_repository={})
    planned = plan_repository(snapshot(repository("app", image("a", "v1"))).repositories[0], run)
    assert run.blocked == ("cluster prod: no in-use manifest",)
    assert [(d.action, [r.kind for r in d.reasons]) for d in planned.plan.images] == [
        ("keep", ["blocked", "delete-rule"])
    ]


def test_run_context_holds_the_in_use_index_and_run_warnings() -> None:
    cfg = config([DELETE_OLD], clusters=["prod"])
    inventory = Inventory(manifests=(in_use("prod", ("not a reference!", "a")),))
    run = build_run_context(
        cfg,
        inventory,
        NOW,
        registry=RegistryCoordinates("123456789012", "eu-west-1"),
        tags_by_repository={},
    )
    assert run.blocked == ()
    assert run.in_use.by_digest[digest("a")][0].cluster == "prod"
    assert run.warnings == ("cluster prod: 'not a reference!' is not an image reference; protected by its digest only",)


def test_a_repository_missing_from_tags_by_repository_is_not_known() -> None:
    cfg = config(
        [{"keep": {"tag_in_repositories": ["frontend"]}}, {"delete": {"tag_in_repositories": ["web"]}}, DELETE_OLD],
        repositories=("backend",),
    )
    backend = snapshot(
        repository("backend", image("b1", "v1"), image("b2", "v2", age=timedelta(days=90)))
    ).repositories[0]
    known = build_run_context(
        cfg,
        Inventory(),
        NOW,
        registry=RegistryCoordinates(),
        tags_by_repository={"frontend": frozenset({"v2"})},
    )
    unknown = build_run_context(cfg, Inventory(), NOW, registry=RegistryCoordinates(), tags_by_repository={})
    assert [d.action for d in plan_repository(backend, known).plan.images] == ["keep", "delete"]
    planned = plan_repository(backend, unknown)
    assert [d.action for d in planned.plan.images] == ["keep", "keep"]
    assert planned.warnings[0].startswith("backend: tag_in_repositories 'frontend' names no other repository")


def test_tag_sources_are_the_patterns_of_the_matching_policy() -> None:
    cfg = config(
        policies=[
            {
                "repositories": ["backend"],
                "rules": [
                    {"keep": {"tag_in_repositories": ["frontend", "team-*/web"]}},
                    {"delete": {"tags": ["v*"], "tag_in_repositories": ["frontend", "archive"]}},
                    {"delete": {"untagged": True}},
                ],
            },
            {"repositories": ["*"], "rules": [DELETE_OLD]},
        ]
    )
    assert tag_sources(cfg, "backend", None) == ("frontend", "team-*/web", "archive")
    assert tag_sources(cfg, "frontend", None) == ()
    assert tag_sources(config([DELETE_OLD], repositories=("app",)), "other", None) == ()
