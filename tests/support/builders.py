"""Realistic test data: describe-images shapes, OCI index manifests, in-use manifests, rules files."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

import yaml

from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.inventory.manifest import InUseManifest, Inventory
from ecr_retention.domain.patterns import matches_any
from ecr_retention.domain.planning import (
    PlannedRepository,
    build_run_context,
    plan_registry,
    plan_repository,
    tag_sources,
)
from ecr_retention.domain.planning.plan import Decision, Plan
from ecr_retention.domain.planning.run import repo_tags
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.domain.registry.images import Snapshot
from ecr_retention.domain.registry.replication import NO_REPLICATION

NOW = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
ACCOUNT = "123456789012"
REGION = "eu-west-1"
HOST = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"


def digest(seed: str) -> str:
    return "sha256:" + hashlib.sha256(seed.encode()).hexdigest()


def image(
    seed: str,
    *tags: str,
    age: timedelta = timedelta(days=100),
    pulled_ago: timedelta | None = None,
    media_type: str = OCI_MANIFEST,
    subject: str | None = None,
    status: str = "ACTIVE",
    size: int = 100 * 1024 * 1024,
    archived_ago: timedelta | None = None,
) -> dict[str, Any]:
    """One describe-images entry; `seed` names the image (its digest is derived from it). `archived_ago` makes it
    ARCHIVED since then."""
    detail: dict[str, Any] = {
        "registryId": ACCOUNT,
        "imageDigest": digest(seed),
        "imageSizeInBytes": size,
        "imagePushedAt": (NOW - age).isoformat(),
        "imageManifestMediaType": media_type,
        "imageStatus": status,
    }
    if tags:
        detail["imageTags"] = list(tags)
    if pulled_ago is not None:
        detail["lastRecordedPullTime"] = (NOW - pulled_ago).isoformat()
    if subject is not None:
        detail["subjectManifestDigest"] = digest(subject)
    if archived_ago is not None:
        detail["imageStatus"] = "ARCHIVED"
        detail["lastArchivedAt"] = (NOW - archived_ago).isoformat()
    return detail


def index_manifest(*children: str) -> dict[str, Any]:
    return {
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": [
            {"mediaType": OCI_MANIFEST, "digest": digest(child), "size": 500, "platform": {"os": "linux"}}
            for child in children
        ],
    }


def repository(name: str, *images: dict[str, Any], manifests: dict[str, Any] | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"repositoryName": name, "imageDetails": [{**i, "repositoryName": name} for i in images]}
    if manifests:
        data["manifests"] = {digest(seed): manifest for seed, manifest in manifests.items()}
    return data


def snapshot(
    *repositories: dict[str, Any],
    registry_id: str | None = ACCOUNT,
    region: str | None = REGION,
    replication: dict[str, Any] | None = None,
) -> Snapshot:
    data: dict[str, Any] = {"registryId": registry_id, "region": region, "repositories": list(repositories)}
    if replication is not None:
        data["replication"] = replication
    return Snapshot.model_validate(data)


def replication_rule(
    *destinations: tuple[str, str], prefixes: tuple[str, ...] = (), delete: bool | None = True
) -> dict[str, Any]:
    """One rule of describe-registry's replicationConfiguration: destinations as (region, registry id)."""
    rule: dict[str, Any] = {
        "destinations": [{"region": region, "registryId": account} for region, account in destinations]
    }
    if prefixes:
        rule["repositoryFilters"] = [{"filter": prefix, "filterType": "PREFIX_MATCH"} for prefix in prefixes]
    if delete is not None:
        rule["deleteReplication"] = {"enabled": delete}
    return rule


def config(
    rules: list[dict[str, Any]] | None = None,
    *,
    repositories: tuple[str, ...] = ("app",),
    policies: list[dict[str, Any]] | None = None,
    **safety: Any,
) -> RetentionConfig:
    safety.setdefault("clusters", [])
    safety.setdefault("max_delete_fraction", 1.0)
    data = {
        "version": 1,
        "safety": safety,
        "policies": policies if policies is not None else [{"repositories": list(repositories), "rules": rules}],
    }
    return RetentionConfig.model_validate(yaml.safe_load(yaml.safe_dump(data)))


def in_use(
    cluster: str,
    *entries: tuple[str, str | None],
    age: timedelta = timedelta(minutes=5),
    complete: bool = True,
) -> InUseManifest:
    """entries: (image reference, digest seed or None)."""
    return InUseManifest.model_validate(
        {
            "schemaVersion": 1,
            "cluster": cluster,
            "generatedAt": (NOW - age).isoformat(),
            "complete": complete,
            "images": [
                {
                    "image": ref,
                    "digest": digest(seed) if seed else None,
                    "namespace": "default",
                    "workload": "Deployment/web",
                    "container": "web",
                    "source": "pod",
                }
                for ref, seed in entries
            ],
        }
    )


def manifest_bytes(manifest: InUseManifest) -> bytes:
    """A manifest as the exporter stores it."""
    return manifest.model_dump_json(by_alias=True, exclude_none=True).encode()


def plan(
    cfg: RetentionConfig,
    snap: Snapshot,
    *manifests: InUseManifest,
    problems: dict[str, str] | None = None,
    now: datetime = NOW,
) -> Plan:
    return plan_registry(cfg, snap, Inventory(manifests=manifests, problems=problems or {}), now)


def plan_one_by_one(cfg: RetentionConfig, snap: Snapshot, inventory: Inventory, now: datetime = NOW) -> Plan:
    """As the pipeline does it: a run context per worker, holding only the tags of the repositories the
    repository's policy names in tag_in_repositories."""
    planned: list[PlannedRepository] = []
    run_warnings: list[str] = []
    blocked: tuple[str, ...] = ()
    for repo in sorted(snap.repositories, key=lambda r: r.repository_name):
        sources = tag_sources(cfg, repo.repository_name, None)
        tags = {
            other.repository_name: repo_tags(other)
            for other in snap.repositories
            if matches_any(other.repository_name, sources)
        }
        run = build_run_context(
            cfg,
            inventory,
            now,
            registry=RegistryCoordinates(snap.effective_registry_id, snap.region, snap.replication or NO_REPLICATION),
            tags_by_repository=tags,
        )
        planned.append(plan_repository(repo, run))
        run_warnings, blocked = list(run.warnings), run.blocked
    warnings = [*run_warnings, *(w for p in planned for w in p.warnings)]
    return Plan(
        generated_at=now,
        dry_run=cfg.dry_run,
        registry_id=snap.effective_registry_id,
        region=snap.region,
        blocked=blocked,
        warnings=tuple(dict.fromkeys(warnings)),
        repositories=tuple(p.plan for p in planned),
    )


def decision_of(result: Plan, repo: str, seed: str) -> Decision:
    for repository in result.repositories:
        if repository.repository_name == repo:
            for decision in repository.images:
                if decision.image_digest == digest(seed):
                    return decision
    raise AssertionError(f"{seed} not planned in {repo}")


def action_of(result: Plan, repo: str, seed: str) -> str:
    return decision_of(result, repo, seed).action


def kinds_of(result: Plan, repo: str, seed: str) -> list[str]:
    return [reason.kind for reason in decision_of(result, repo, seed).reasons]


def removed(result: Plan) -> set[str]:
    return {d.image_digest for repo in result.repositories for d in repo.images if d.removes}
