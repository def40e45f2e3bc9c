"""A realistic registry for the pipeline and end-to-end tests: nine repositories seeded into moto (in-process
`mock_aws`, or a ThreadedMotoServer in this process) through the emulator's MotoEcr, the rules file that
governs them, and the in-use manifests of two clusters. Built from ecr_retention_dev.scenario, as the demo's
registry is (its docstring says what the two share).

- `app`: weekly releases `v1.0.0`..`v1.0.11` (`latest` on the newest), a `dev` image, old and young untagged
  builds, pull-request builds `pr-101`..`pr-108` under an archive rule (plus `pr-100`, archived already), cosign
  signatures on the newest release (kept), the oldest (deleted with it) and `pr-101` (archived with it), and a
  native lifecycle policy (the seed-002 incident policy) for the doctor.
- `docker.io/library/nginx`: an image-swapper cache repository with pull times; `1.14.2` still runs in dev.
- `frontend` and `backend`: the same release tags; `backend` keeps what `frontend` still has
  (`tag_in_repositories`), and has hotfix tags of its own.
- `platform/runtime`: three multi-arch indexes (a Docker manifest list, an OCI index with a BuildKit attestation,
  an OCI index sharing its amd64 child with the previous one), each with a cosign signature; the oldest and the
  newest with an SPDX SBOM attached as an OCI 1.1 referrer.
- `release/payments`: IMMUTABLE, two releases running in prod (the tagger's target); nothing is old enough to go.
- `team-data/etl-jobs`: 1,050 hourly builds (more than one DescribeImages page), every second one tagged.
- `team-data/new-service`: empty. `sandbox/scratch`: no policy matches it, so it is never touched.

Every image has a label (`"app v1.0.5"`) so that tests assert on what a person would name. Ages are relative to
`now` and kept at least half an hour away from every threshold, so a plan made seconds before a run (the e2e test
plans with the test's clock, the CLI runs with its own) decides the same.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from moto.core.models import DEFAULT_ACCOUNT_ID

from ecr_retention_dev.emulator.manifests import PushedImage, PushedIndex
from ecr_retention_dev.emulator.seeding import MotoEcr, iter_details
from ecr_retention_dev.scenario import DAY, HOUR, MINUTE, REGION, in_use_document, in_use_entry, incident_policy

ACCOUNT = DEFAULT_ACCOUNT_ID
HOST = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com"
BUCKET = "ecr-retention-inventory"

BULK_REPOSITORY = "team-data/etl-jobs"
BULK_IMAGES = 1_050
UNMANAGED_REPOSITORY = "sandbox/scratch"
EMPTY_REPOSITORY = "team-data/new-service"

RULES = """\
version: 1
dry_run: {dry_run}
safety:
  min_age: 1d
  max_delete_fraction: 0.9
  inventory_max_age: 6h
  clusters: [prod, dev]
tagging:
  - clusters: [prod]
    namespaces: ["*"]
    tag_prefix: deployed-prod-
policies:
  - repositories: [app]
    rules:
      - keep: {{tags: [latest, dev]}}
        description: mutable tags stay with their image
      - delete: {{tags: ["v*"], older_than: 30d, keep_newest: 3}}
        description: releases older than 30 days beyond the 3 newest
      - delete: {{tags: ["pr-*"], older_than: 14d, archive: true}}
        description: pull-request builds go to the archive after 14 days
      - delete: {{untagged: true, older_than: 1d}}
        description: untagged builds
  - repositories: ["docker.io/*"]
    rules:
      - keep: {{pulled_within: 30d}}
      - delete: {{tags: ["*"], not_pulled_within: 90d, keep_newest: 2}}
  - repositories: [backend]
    rules:
      - keep: {{tag_in_repositories: [frontend]}}
        description: releases the frontend still has
      - delete: {{tags: ["v*"], older_than: 60d, keep_newest: 2}}
  - repositories: [frontend]
    rules:
      - delete: {{tags: ["v*"], older_than: 60d, keep_newest: 3}}
  - repositories: ["platform/*"]
    rules:
      - delete: {{tags: ["*.*.*"], older_than: 30d, keep_newest: 1}}
      - delete: {{untagged: true, older_than: 1d}}
  - repositories: ["release/*"]
    rules:
      - keep: {{tags: ["deployed-prod-*"], newest: 5}}
      - delete: {{tags: ["v*"], older_than: 365d}}
  - repositories: ["team-data/*"]
    rules:
      - delete: {{tags: ["build-*"], older_than: 14d, keep_newest: 50}}
      - delete: {{untagged: true, older_than: 14d}}
"""

# The policy of the seed-002 incident (ecr_retention_dev.scenario.incident_policy), as a person writes it.
APP_LIFECYCLE_POLICY = incident_policy(description="keep the 3 newest version images", indent=2)


def rules_text(*, dry_run: bool) -> str:
    return RULES.format(dry_run=str(dry_run).lower())


@dataclass
class SeededRegistry:
    """What was pushed: every image by label, and the repositories."""

    now: datetime
    images: dict[str, PushedImage] = field(default_factory=dict)
    indexes: dict[str, PushedIndex] = field(default_factory=dict)
    repositories: list[str] = field(default_factory=list)

    def digest(self, label: str) -> str:
        return self.images[label].digest

    def label_of(self, digest: str) -> str:
        return next(label for label, image in self.images.items() if image.digest == digest)

    def repository_of(self, label: str) -> str:
        return self.images[label].repository

    def add(self, label: str, image: PushedImage) -> PushedImage:
        if label in self.images:
            raise ValueError(f"label {label!r} used twice")
        self.images[label] = image
        return image


def seed_registry(ecr: MotoEcr, now: datetime) -> SeededRegistry:
    seeded = SeededRegistry(now=now)
    for name, immutable in (
        ("app", False),
        ("docker.io/library/nginx", False),
        ("frontend", False),
        ("backend", False),
        ("platform/runtime", False),
        ("release/payments", True),
        (BULK_REPOSITORY, False),
        (EMPTY_REPOSITORY, False),
        (UNMANAGED_REPOSITORY, False),
    ):
        ecr.create_repository(
            name, immutable=immutable, lifecycle_policy=APP_LIFECYCLE_POLICY if name == "app" else None
        )
        seeded.repositories.append(name)
    _seed_app(ecr, seeded)
    _seed_nginx(ecr, seeded)
    _seed_frontend_and_backend(ecr, seeded)
    _seed_platform(ecr, seeded)
    _seed_release(ecr, seeded)
    _seed_unmanaged(ecr, seeded)
    # Hourly builds, the newest 2.5 hours old; every second one tagged build-<n>.
    bulk = ecr.seed_images(
        BULK_REPOSITORY, BULK_IMAGES, newest=now - 2.5 * HOUR, interval=HOUR, tag_every=2, prefix="build"
    )
    for number, image in enumerate(bulk):
        seeded.add(f"{BULK_REPOSITORY} #{number}", image)
    return seeded


def _seed_app(ecr: MotoEcr, seeded: SeededRegistry) -> None:
    now, repo = seeded.now, "app"
    for minor in range(12):  # v1.0.11 is 8 days old, each older release a week older
        tags = (f"v1.0.{minor}", "latest") if minor == 11 else (f"v1.0.{minor}",)
        age = ((12 - minor) * 7 + 1) * DAY
        seeded.add(f"app v1.0.{minor}", ecr.push_image(repo, *tags, seed=f"app:v1.0.{minor}", pushed_at=now - age))
    seeded.add("app dev", ecr.push_image(repo, "v1.1.0-dev.3", "dev", seed="app:dev", pushed_at=now - 33 * DAY))
    for days in (3, 10, 20):
        seeded.add(
            f"app untagged {days}d", ecr.push_image(repo, seed=f"app:untagged:{days}", pushed_at=now - days * DAY)
        )
    seeded.add("app untagged young", ecr.push_image(repo, seed="app:young", pushed_at=now - 2 * HOUR))
    for number, days in zip(range(101, 109), (40, 35, 30, 25, 20, 15, 10, 5), strict=True):
        seeded.add(
            f"app pr-{number}",
            ecr.push_image(repo, f"pr-{number}", seed=f"app:pr-{number}", pushed_at=now - days * DAY),
        )
    archived = seeded.add("app pr-100", ecr.push_image(repo, "pr-100", seed="app:pr-100", pushed_at=now - 60 * DAY))
    ecr.archive(repo, archived.digest, now - 40 * DAY)
    for minor in (11, 0):  # cosign signs right after the push
        pushed = now - ((12 - minor) * 7 + 1) * DAY + 5 * MINUTE
        signature = ecr.push_signature(repo, seeded.images[f"app v1.0.{minor}"], pushed_at=pushed)
        seeded.add(f"app v1.0.{minor} signature", signature)
    signature = ecr.push_signature(repo, seeded.images["app pr-101"], pushed_at=now - 40 * DAY + 5 * MINUTE)
    seeded.add("app pr-101 signature", signature)  # archived with its subject


def _seed_nginx(ecr: MotoEcr, seeded: SeededRegistry) -> None:
    now, repo = seeded.now, "docker.io/library/nginx"
    for version, pushed_days, pulled_days in (
        ("1.14.2", 400, 200),  # still runs in dev: in use
        ("1.19", 300, None),  # never pulled: deleted
        ("1.20", 250, 100),  # deleted
        ("1.21", 200, 10),  # pulled within 30 days: keep rule
        ("1.25", 100, 95),  # deleted
        ("1.26", 50, None),  # the 2 newest are spared
        ("1.27", 20, 3),
    ):
        image = ecr.push_image(
            repo,
            version,
            seed=f"nginx:{version}",
            media_type="application/vnd.docker.distribution.manifest.v2+json",
            pushed_at=now - pushed_days * DAY,
            pulled_at=None if pulled_days is None else now - pulled_days * DAY,
        )
        seeded.add(f"nginx {version}", image)


def _seed_frontend_and_backend(ecr: MotoEcr, seeded: SeededRegistry) -> None:
    now = seeded.now
    for minor in range(10):  # v2.0 is 103 days old, v2.9 13 days
        age = (10 * (10 - minor) + 3) * DAY
        for repo in ("frontend", "backend"):
            seeded.add(
                f"{repo} v2.{minor}",
                ecr.push_image(repo, f"v2.{minor}", seed=f"{repo}:v2.{minor}", pushed_at=now - age),
            )
    for tag, days in (("v2.1.1", 88), ("v2.3.1", 68), ("v2.10.0-rc.1", 5)):  # backend only
        seeded.add(f"backend {tag}", ecr.push_image("backend", tag, seed=f"backend:{tag}", pushed_at=now - days * DAY))


def _seed_platform(ecr: MotoEcr, seeded: SeededRegistry) -> None:
    now, repo = seeded.now, "platform/runtime"
    old = ecr.push_index(repo, "2.0.0", seed="runtime:2.0.0", docker=True, pushed_at=now - 100 * DAY)
    previous = ecr.push_index(repo, "2.1.0", seed="runtime:2.1.0", attestation=True, pushed_at=now - 60 * DAY)
    arm64 = ecr.push_image(repo, seed="runtime:3.0.0:linux/arm64", pushed_at=now - 10 * DAY)
    # The amd64 build did not change between 2.1.0 and 3.0.0: both indexes list the same child.
    current = ecr.push_index(
        repo,
        "3.0.0",
        children=(previous.children[0], arm64),
        platforms=("linux/amd64", "linux/arm64"),
        pushed_at=now - 10 * DAY,
    )
    for version, index in (("2.0.0", old), ("2.1.0", previous), ("3.0.0", current)):
        seeded.indexes[f"runtime {version}"] = index
        seeded.add(f"runtime {version}", index.index)
    seeded.add("runtime 2.0.0 amd64", old.children[0])
    seeded.add("runtime 2.0.0 arm64", old.children[1])
    seeded.add("runtime shared amd64", previous.children[0])
    seeded.add("runtime 2.1.0 arm64", previous.children[1])
    seeded.add("runtime 2.1.0 attestation", previous.children[2])
    seeded.add("runtime 3.0.0 arm64", arm64)
    for version, days in (("2.0.0", 100), ("2.1.0", 60), ("3.0.0", 10)):
        signature = ecr.push_signature(repo, seeded.indexes[f"runtime {version}"], pushed_at=now - days * DAY + HOUR)
        seeded.add(f"runtime {version} signature", signature)
    for version, days in (("2.0.0", 100), ("3.0.0", 10)):  # OCI 1.1 referrers: ECR reports subjectManifestDigest
        sbom = ecr.push_referrer(repo, seeded.indexes[f"runtime {version}"], pushed_at=now - days * DAY + HOUR)
        seeded.add(f"runtime {version} sbom", sbom)


def _seed_release(ecr: MotoEcr, seeded: SeededRegistry) -> None:
    now, repo = seeded.now, "release/payments"
    for version, days in (("v3.0.0", 120), ("v3.1.0", 40), ("v3.2.0", 6)):
        seeded.add(
            f"payments {version}", ecr.push_image(repo, version, seed=f"payments:{version}", pushed_at=now - days * DAY)
        )


def _seed_unmanaged(ecr: MotoEcr, seeded: SeededRegistry) -> None:
    for days in (400, 300, 200):
        image = ecr.push_image(UNMANAGED_REPOSITORY, seed=f"scratch:{days}", pushed_at=seeded.now - days * DAY)
        seeded.add(f"scratch untagged {days}d", image)


def in_use_manifests(
    seeded: SeededRegistry,
    *,
    prod_generated_ago: timedelta = 12 * MINUTE,
    dev_generated_ago: timedelta = 7 * MINUTE,
) -> dict[str, bytes]:
    """`in-use/prod.json` and `in-use/dev.json` as the exporter writes them (key -> body)."""
    payments = {version: seeded.digest(f"payments {version}") for version in ("v3.1.0", "v3.2.0")}
    v109 = seeded.digest("app v1.0.9")
    prod = [
        # a rollout under way: the old and the new release of app, both resolved by the exporter
        in_use_entry(f"{HOST}/app:v1.0.5", "shop", "Deployment/app", digest=seeded.digest("app v1.0.5")),
        in_use_entry(f"{HOST}/app:v1.0.11", "shop", "Deployment/app", digest=seeded.digest("app v1.0.11")),
        # a tag reference without a digest (a template): protects what the tag names at plan time
        in_use_entry(f"{HOST}/platform/runtime:3.0.0", "shop", "Deployment/worker"),
        in_use_entry(f"{HOST}/release/payments:v3.2.0", "payments", "Deployment/payments", digest=payments["v3.2.0"]),
        # a canary still on the previous release, pinned by digest
        in_use_entry(f"{HOST}/release/payments@{payments['v3.1.0']}", "payments", "Deployment/payments-canary"),
        in_use_entry("docker.io/library/redis:7.2", "shop", "StatefulSet/redis"),  # another registry
        # The same image content pulled from another account's and another region's registry: the tagger must
        # not touch this registry's copy (a digest names content, not where it was pulled from).
        in_use_entry(f"210987654321.dkr.ecr.{REGION}.amazonaws.com/app@{v109}", "mirror", "Deployment/app-mirror"),
        in_use_entry(f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/app@{v109}", "dr", "Deployment/app-dr"),
    ]
    dev = [
        in_use_entry(f"{HOST}/app@{seeded.digest('app v1.0.2')}", "qa", "Deployment/app-regression"),
        in_use_entry(f"{HOST}/app:pr-104", "preview-104", "Deployment/app"),
        in_use_entry(f"{HOST}/docker.io/library/nginx:1.14.2", "tcn-personal-1", "Deployment/nginx"),
    ]

    def document(cluster: str, images: list[dict[str, Any]], generated_ago: timedelta) -> bytes:
        body = in_use_document(cluster, (seeded.now - generated_ago).isoformat(), images)
        return json.dumps(body, indent=2).encode()

    return {
        "in-use/prod.json": document("prod", prod, prod_generated_ago),
        "in-use/dev.json": document("dev", dev, dev_generated_ago),
    }


def registry_state(client: Any, repositories: list[str]) -> dict[str, dict[str, dict[str, Any]]]:
    """Every repository's describe-images (any status), digest -> detail, read through the API."""
    state = {}
    existing = {
        repository["repositoryName"]
        for page in client.get_paginator("describe_repositories").paginate()
        for repository in page["repositories"]
    }
    for repository in repositories:
        if repository in existing:
            state[repository] = {
                detail["imageDigest"]: detail
                for detail in iter_details(client, repository, PaginationConfig={"PageSize": 1000})
            }
    return state
