"""The demo's registry: what a platform team's ECR looks like after a year of CI, and the rules the demo runs.

- `app`: a build every two days or so for ten months. Release builds push `1.12.N` and move `latest`; development
  builds push `1.12.N-dev` and move `dev`, so `dev` shares its image with a version tag, which is how a native
  lifecycle rule keeping the newest three `*.*` images deleted a team's `dev` image. That incident policy is set on
  the repository, so the pipeline's doctor reports what it would break. Some releases carry the tagger's
  `deployed-prod-<unix seconds>` from earlier deployments; some rebuilds lost their tag to the next push.
- `docker.io/library/nginx`: an image-swapper cache. `1.14.2` was cached long ago and is not pulled any more,
  but a pod in `dev` still runs it: deleting it is the outage where the swapper kept rewriting pods to an image
  that was gone. A native `sinceImagePulled` archive rule archived it two days ago (ECR cannot see a pod that has
  run since it pulled), so the pod's next restart would fail with ImagePullBackOff: the sweep restores it.
- `frontend` and `backend`, released together under the same tags: a backend release stays while the frontend
  still has its tag (`tag_in_repositories`).
- `platform/api`: multi-arch indexes (amd64, arm64, a BuildKit attestation), two releases sharing one arm64
  child, cosign signatures under `sha256-<hex>.sig` and OCI SBOM referrers that name their subject.
- `team-payments/worker`: pull-request builds that go to ECR's archive storage class when nobody pulls them.
- `sandbox/experiments`: no policy matches it, so nothing in it is ever touched.
- Replication: `app` replicates to us-east-1 with deleteReplication, so every deletion in `app` here also deletes
  there; the cluster `us-prod` in us-east-1 still runs an old `app` release from its replica, which the rules
  alone would delete.
- A second pruned Region, us-east-1 (`seed_other_region`): its `app` holds the replicas of every `app` image here
  (what replication left: the same manifests, digests and tags) and a few hotfix builds pushed there only, which its
  own rules delete; the replicas are eu-west-1's rules' to decide. `edge/cdn` lives in us-east-1 only: prod, a
  cluster of eu-west-1, runs an old release of it across Regions, and us-prod the newest.
- ECS and Lambda in the same account: the ECS cluster `backoffice` runs the service `app-admin` on an app release
  of months ago, and the container-image function `backend-reports` (a version and an alias) runs a backend
  release the frontend never shipped with. The rules delete both images unless the AWS inventory collector's
  manifest names them; the rules expect that manifest like a cluster's.

Everything is pushed through the ECR API (PutImage with the real manifest text, so digests are sha256 of the
manifest, and tags move as they do in ECR). ECR stamps the push time itself, and no API sets it or the last pull
time: the ages are set in moto's backend after each push (`MotoEcr.set_pushed_at`, `set_last_pull`). Ages are
relative to the demo's start and kept at least an hour away from every threshold of the rules, so that the dry
run and the real run, seconds apart, decide alike.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ecr_retention.domain.inventory.aws import inventory_name
from ecr_retention.domain.inventory.inspector_manifest import inspector_name
from ecr_retention_dev.emulator.manifests import DOCKER_MANIFEST, PushedImage, PushedIndex
from ecr_retention_dev.emulator.seeding import MotoEcr
from ecr_retention_dev.emulator.workloads import MotoWorkloads
from ecr_retention_dev.scenario import DAY, HOUR, MIB, MINUTE, in_use_document, in_use_entry, incident_policy

BUCKET = "ecr-retention-demo"
UNMANAGED = "sandbox/experiments"
ECS_CLUSTER, ECS_SERVICE = "backoffice", "app-admin"
REPLICA_REGION, REPLICA_CLUSTER = "us-east-1", "us-prod"
EDGE = "edge/cdn"  # us-east-1's own repository
FUNCTION, FUNCTION_ALIAS = "backend-reports", "live"

MIN_AGE = DAY  # safety.min_age below
ARCHIVED_AGO = 2 * DAY  # when a native pull-time rule archived the nginx image dev still runs
DEPLOYED_KEPT = 20  # app keeps the 20 newest images deployed to production
# Every duration of the rules below: no seeded age lies within an hour of one.
THRESHOLDS = tuple(days * DAY for days in (1, 3, 7, 14, 30, 45, 60, 90))

RULES = """\
# The demo's rules. The first deployment runs with dry_run: true (retention.yaml); the second with
# dry_run: false (retention-live.yaml). Reference: docs/rules.md
version: 1
dry_run: {dry_run}
safety:
  min_age: 1d                    # an image pushed more recently is never removed
  max_delete_fraction: 0.75      # a first clean-up removes much; a larger share means a mistake
  inventory_max_age: 6h          # an expected cluster's manifest older than this blocks every deletion
  # Each must have a fresh, complete manifest, or nothing is deleted anywhere: the exporters of the EKS clusters
  # prod and dev, of us-prod in us-east-1 (app's deletions replicate there), and the AWS inventory collector of this
  # account and region (ECS and Lambda, docs/aws-inventory.md)
  clusters: [prod, dev, us-prod, {aws_source}]
  # Amazon Inspector's reading of this account and region (inspectorInUse): it protects, never blocks
  optional_clusters: [{inspector_source}]

tagging:
  - clusters: [prod]
    namespaces: ["*"]
    tag_prefix: deployed-prod-   # the tagger adds deployed-prod-<unix seconds> once to what runs in prod

policies:
  - repositories: [app]
    regions: [eu-west-1]         # us-east-1 holds app's replicas: eu-west-1's rules decide them (docs/regions.md)
    rules:
      - keep: {{tags: [latest, dev]}}
        description: mutable tags stay with their image
      - keep: {{tags: ["deployed-prod-*"], newest: {deployed_kept}}}
        description: the last {deployed_kept} images deployed to production
      - delete: {{tags: ["*.*"], older_than: 30d, keep_newest: 20}}
        description: version tags older than 30 days beyond the newest 20
      - delete: {{untagged: true, older_than: 1d}}
        description: untagged builds

  - repositories: [backend]
    rules:
      - keep: {{tag_in_repositories: [frontend]}}
        description: releases the frontend still has
      - delete: {{tags: ["v*"], older_than: 60d, keep_newest: 5}}
        description: backend releases older than 60 days beyond the newest 5
      - delete: {{untagged: true, older_than: 1d}}
        description: untagged builds

  - repositories: [frontend]
    rules:
      - delete: {{tags: ["v*"], older_than: 90d, keep_newest: 8}}
        description: frontend releases older than 90 days beyond the newest 8

  - repositories: ["docker.io/*"]
    rules:
      - keep: {{pulled_within: 30d}}
        description: cached images pulled this month
      - delete: {{tags: ["*"], not_pulled_within: 90d, keep_newest: 2}}
        description: cached images nobody pulled for 90 days

  - repositories: ["platform/*"]
    rules:
      - keep: {{tags: [stable]}}
        description: the stable release
      - delete: {{tags: ["v*"], older_than: 45d, keep_newest: 3}}
        description: releases older than 45 days beyond the newest 3
      - delete: {{untagged: true, older_than: 7d}}
        description: untagged manifests

  - repositories: ["team-*/*"]
    rules:
      - keep: {{tags: [main, "release-*"]}}
        description: the main build and releases
      - delete: {{tags: ["pr-*"], not_pulled_within: 14d, archive: true}}
        description: pull-request builds nobody pulled for 14 days go to the archive
      - delete: {{untagged: true, older_than: 3d}}
        description: untagged builds

  # us-east-1, pruned by the same deployment (the stack's context: regions: [eu-west-1, us-east-1])
  - repositories: [app]
    regions: [us-east-1]
    rules:
      - delete: {{tags: ["*-hotfix"], older_than: 14d}}
        description: us-east-1's own hotfix builds after two weeks

  - repositories: ["edge/*"]
    regions: [us-east-1]
    rules:
      - delete: {{tags: ["v*"], older_than: 30d, keep_newest: 3}}
        description: edge releases older than 30 days beyond the newest 3
"""

# The native lifecycle policy of the `dev` incident (ecr_retention_dev.scenario.incident_policy).
INCIDENT_POLICY = incident_policy(description="keep 3 version images", untagged_after_days=1)


def rules_text(*, dry_run: bool, aws_source: str, inspector_source: str) -> str:
    """`aws_source`: the collector's manifest, `aws-<account>-<region>`, expected like a cluster's;
    `inspector_source`: Amazon Inspector's reading, `inspector-<account>-<region>`, optional."""
    return RULES.format(
        dry_run=str(dry_run).lower(),
        deployed_kept=DEPLOYED_KEPT,
        aws_source=aws_source,
        inspector_source=inspector_source,
    )


def settle(age: timedelta) -> timedelta:
    """The age moved at least an hour away from every threshold of the rules."""
    while any(abs(age - threshold) < HOUR for threshold in THRESHOLDS):
        age += 2 * HOUR
    return age


@dataclass(frozen=True)
class SeededImage:
    repository: str
    digest: str
    label: str  # what a person calls it: "app 1.12.370-dev"
    pushed_at: datetime
    children: tuple[str, ...] = ()  # an index's child manifests
    subject: str | None = None  # what a signature or referrer is about


@dataclass(frozen=True)
class InUseEntry:
    cluster: str
    image: str
    namespace: str
    workload: str
    container: str
    source: str
    digest: str | None = None

    def to_json(self) -> dict[str, Any]:
        return in_use_entry(
            self.image,
            self.namespace,
            self.workload,
            container=self.container,
            source=self.source,
            digest=self.digest,
        )


@dataclass(frozen=True)
class AwsWorkload:
    """An ECS service or a Lambda function of the demo's account and the registry image it runs: what the AWS
    inventory collector must find, and the pipeline keep although the rules alone would delete that image."""

    kind: str  # "ECS service", "Lambda function"
    name: str  # "backoffice/app-admin" (cluster/service), "backend-reports"
    repository: str
    digest: str
    reference: str  # the image as deployed: the task definition's image, the function's Code.ImageUri
    detail: str  # what else the collector reads of it: the task definition and tasks, versions and aliases


@dataclass
class DemoRegistry:
    """What was seeded, kept independently of the pipeline so that the demo can check what it did."""

    ecr: MotoEcr
    now: datetime
    repositories: list[str] = field(default_factory=list)
    images: dict[tuple[str, str], SeededImage] = field(default_factory=dict)
    tags: dict[str, dict[str, str]] = field(default_factory=dict)  # repository -> tag -> digest, as tags moved
    in_use: list[InUseEntry] = field(default_factory=list)
    aws_workloads: list[AwsWorkload] = field(default_factory=list)  # seeded in ECS and Lambda
    # In-use images a native pull-time rule archived before the demo (repository, digest): the sweep restores them.
    archived_in_use: list[tuple[str, str]] = field(default_factory=list)
    pushed: dict[tuple[str, str], PushedImage] = field(default_factory=dict)  # each image as pushed, its manifest

    @property
    def host(self) -> str:
        return f"{self.ecr.account_id}.dkr.ecr.{self.ecr.region}.amazonaws.com"

    @property
    def replica_host(self) -> str:
        return f"{self.ecr.account_id}.dkr.ecr.{REPLICA_REGION}.amazonaws.com"

    @property
    def aws_source(self) -> str:
        """The name of the collector's manifest of this account and region: `aws-<account>-<region>`."""
        return inventory_name(self.ecr.account_id, self.ecr.region)

    @property
    def inspector_source(self) -> str:
        """The name of Amazon Inspector's reading of this account and region: `inspector-<account>-<region>`."""
        return inspector_name(self.ecr.account_id, self.ecr.region)

    def create(self, name: str, *, lifecycle_policy: str | None = None) -> str:
        self.ecr.create_repository(name, lifecycle_policy=lifecycle_policy)
        self.repositories.append(name)
        self.tags[name] = {}
        return name

    def record(self, image: PushedImage, label: str, pushed_at: datetime, **relations: Any) -> PushedImage:
        self.images[(image.repository, image.digest)] = SeededImage(
            image.repository, image.digest, label, pushed_at, **relations
        )
        self.pushed[(image.repository, image.digest)] = image
        for tag in image.tags:
            self.tags[image.repository][tag] = image.digest
        return image

    def push(
        self,
        repository: str,
        label: str,
        age: timedelta,
        *tags: str,
        pulled: timedelta | None = None,
        media_type: str | None = None,
        size: int = 120 * MIB,
    ) -> PushedImage:
        pushed_at = self.now - settle(age)
        options: dict[str, Any] = {"media_type": media_type} if media_type else {}
        image = self.ecr.push_image(
            repository,
            *tags,
            seed=f"{repository}:{label}",
            layer_sizes=layers(size),
            pushed_at=pushed_at,  # set in moto's backend: ECR stamps push time itself
            pulled_at=None if pulled is None else self.now - settle(pulled),
            **options,
        )
        return self.record(image, f"{repository} {label}", pushed_at)

    def retag(self, image: PushedImage, tag: str) -> None:
        """Move a tag onto an image, as `docker push` of the same image under another tag does (PutImage)."""
        self.ecr.client.put_image(
            repositoryName=image.repository,
            imageManifest=image.manifest,
            imageManifestMediaType=image.media_type,
            imageTag=tag,
            imageDigest=image.digest,
        )
        self.tags[image.repository][tag] = image.digest

    def uses(self, cluster: str, reference: str, workload: str, *, digest: str | None = None, **where: str) -> None:
        self.in_use.append(
            InUseEntry(
                cluster=cluster,
                image=reference,
                namespace=where.get("namespace", "default"),
                workload=workload,
                container=where.get("container", workload.rsplit("/", 1)[-1]),
                source=where.get("source", "pod"),
                digest=digest,
            )
        )

    def labelled(self, repository: str, digest: str) -> str:
        seeded = self.images.get((repository, digest))
        return seeded.label if seeded else f"{repository} {digest[:19]}"

    def count(self, repository: str) -> int:
        return sum(1 for repo, _ in self.images if repo == repository)

    def in_use_digests(self) -> dict[tuple[str, str], list[InUseEntry]]:
        """(repository, digest) -> the entries that run it: a digest as given, a tag as it points now."""
        found: dict[tuple[str, str], list[InUseEntry]] = {}
        prefix = self.host + "/"
        for entry in self.in_use:
            if not entry.image.startswith(prefix):
                continue  # another registry
            name = entry.image.removeprefix(prefix)
            repository, _, pinned = name.partition("@")
            repository, _, tag = repository.partition(":")
            digest = entry.digest or (pinned or None) or self.tags.get(repository, {}).get(tag)
            if digest is not None:
                found.setdefault((repository, digest), []).append(entry)
        return found

    def replicated_in_use(self) -> dict[tuple[str, str], list[InUseEntry]]:
        """(repository, digest) -> the entries that run its replica in REPLICA_REGION, by tag as it points here."""
        found: dict[tuple[str, str], list[InUseEntry]] = {}
        prefix = self.replica_host + "/"
        for entry in self.in_use:
            if entry.image.startswith(prefix):
                repository, _, tag = entry.image.removeprefix(prefix).partition(":")
                if repository not in self.tags:
                    continue  # a repository of that Region's own, not a replica of one here
                digest = entry.digest or self.tags[repository][tag]
                found.setdefault((repository, digest), []).append(entry)
        return found

    def manifests(self) -> Iterator[tuple[str, bytes]]:
        """`in-use/<cluster>.json` as the exporters write them: prod eight minutes ago, us-prod six, dev four."""
        for cluster, written in (("prod", 8 * MINUTE), (REPLICA_CLUSTER, 6 * MINUTE), ("dev", 4 * MINUTE)):
            generated_at = (self.now - written).isoformat().replace("+00:00", "Z")
            document = in_use_document(
                cluster, generated_at, [entry.to_json() for entry in self.in_use if entry.cluster == cluster]
            )
            yield f"in-use/{cluster}.json", (json.dumps(document, indent=2) + "\n").encode()


def layers(size: int) -> tuple[int, ...]:
    """Layer sizes adding up to the image's size (ECR reports their sum): a base, the application, a config."""
    if size < 64 * 1024:
        return (size,)
    return (size * 6 // 10, size * 4 // 10 - 2048, 2048)


def seed_registry(ecr: MotoEcr, now: datetime, workloads: MotoWorkloads) -> DemoRegistry:
    """The registry and the two clusters' in-use lists, and the account's ECS and Lambda workloads."""
    registry = DemoRegistry(ecr=ecr, now=now)
    rng = random.Random(20261130)  # the same registry every time, relative to now
    app = seed_app(registry, rng)
    releases = seed_releases(registry, rng)
    backend = releases["prod"]
    seed_nginx_cache(registry, rng)
    api = seed_platform_api(registry, rng)
    seed_team_worker(registry, rng)
    seed_sandbox(registry, rng)
    host = registry.host
    # prod runs a release well behind latest (by the digest its pods resolved) and keeps an older one as the
    # ReplicaSet `kubectl rollout undo` returns to (by tag).
    registry.uses(
        "prod", f"{host}/app:{app['prod'].tags[0]}", "Deployment/app", digest=app["prod"].digest, namespace="shop"
    )
    registry.uses(
        "prod", f"{host}/app:{app['rollback'].tags[0]}", "ReplicaSet/app-6d9f7c", namespace="shop", source="replicaset"
    )
    registry.uses(
        "prod", f"{host}/backend:v2.0.4", "Deployment/backend", digest=backend.digest, namespace="shop", container="api"
    )
    registry.uses("prod", f"{host}/frontend:v2.3.0", "Deployment/frontend", namespace="shop", source="template")
    registry.uses(
        "prod", f"{host}/platform/api@{api.digest}", "Deployment/api", digest=api.digest, namespace="platform"
    )
    registry.uses("prod", "quay.io/prometheus/node-exporter:v1.8.2", "DaemonSet/node-exporter", namespace="monitoring")
    registry.uses("dev", f"{host}/app:dev", "Deployment/app", namespace="dev")
    registry.uses("dev", f"{host}/app:{app['cronjob'].tags[0]}", "CronJob/report", namespace="dev", source="cronjob")
    registry.uses("dev", f"{host}/docker.io/library/nginx:1.14.2", "Deployment/nginx", namespace="tcn-personal-1")
    registry.uses(
        "dev", "docker.io/library/busybox:1.36", "Deployment/nginx", namespace="tcn-personal-1", container="init"
    )
    seed_workloads(registry, workloads, service_image=app["backoffice"], function_image=releases["reports"])
    seed_replication(registry, app["replica"])
    return registry


def seed_replication(registry: DemoRegistry, running: PushedImage) -> None:
    """app replicates to us-east-1, deletions included; the cluster there runs an old release from its replica."""
    rule = {
        "destinations": [{"region": REPLICA_REGION, "registryId": registry.ecr.account_id}],
        "repositoryFilters": [{"filter": "app", "filterType": "PREFIX_MATCH"}],
        "deleteReplication": {"enabled": True},
    }
    registry.ecr.client.put_replication_configuration(replicationConfiguration={"rules": [rule]})
    reference = f"{registry.replica_host}/{running.repository}:{running.tags[0]}"
    registry.uses(REPLICA_CLUSTER, reference, "Deployment/app", digest=running.digest, namespace="shop")


def seed_other_region(registry: DemoRegistry, ecr: MotoEcr) -> DemoRegistry:
    """us-east-1, the second Region the deployment prunes: app's replicas as replication left them (every image of
    app here, under the tags it has now, pushed when it was pushed here) and hotfix builds of its own, and edge/cdn,
    a repository of its own. prod, a cluster of eu-west-1, runs an old edge release from there (across Regions), and
    us-prod the newest. Its in-use references are the same list as the home registry's (one set of manifests)."""
    other = DemoRegistry(ecr=ecr, now=registry.now, in_use=registry.in_use)
    rng = random.Random(20261203)
    repo = other.create("app")
    tags_now: dict[str, list[str]] = {}
    for tag, digest in registry.tags["app"].items():
        tags_now.setdefault(digest, []).append(tag)
    for (repository, digest), image in registry.pushed.items():
        if repository == "app":
            seeded = registry.images[(repository, digest)]
            copy = ecr.copy_image(image, sorted(tags_now.get(digest, [])), pushed_at=seeded.pushed_at)
            other.record(copy, seeded.label, seeded.pushed_at)
    for n, days in enumerate((75, 40, 21, 5)):
        other.push(
            repo, f"1.12.{380 + n}-hotfix", days * DAY, f"1.12.{380 + n}-hotfix", size=rng.randint(150, 420) * MIB
        )
    edge = other.create(EDGE)
    releases = [
        other.push(edge, f"v3.{n}", (120 - n * 9) * DAY, f"v3.{n}", size=rng.randint(30, 60) * MIB) for n in range(12)
    ]
    registry.uses("prod", f"{other.host}/{EDGE}:{releases[2].tags[0]}", "Deployment/cdn", namespace="edge")
    registry.uses(REPLICA_CLUSTER, f"{other.host}/{EDGE}:{releases[-1].tags[0]}", "Deployment/cdn", namespace="edge")
    return other


def seed_workloads(
    registry: DemoRegistry, workloads: MotoWorkloads, *, service_image: PushedImage, function_image: PushedImage
) -> None:
    """ECS and Lambda in the registry's own account, through their APIs: the back office still runs an app
    release of months ago as an ECS service, and a container-image Lambda function runs a backend release the
    frontend never shipped with. No cluster runs either image and no keep rule names them: the rules alone delete
    both, and only the AWS inventory collector's manifest keeps them."""
    service_reference = f"{registry.host}/{service_image.repository}:{service_image.tags[0]}"
    workloads.cluster(ECS_CLUSTER)
    definition = workloads.task_definition(ECS_SERVICE, {"app": service_reference})
    workloads.service(ECS_CLUSTER, ECS_SERVICE, definition)
    # The service's two tasks, with the digest ECS resolved when they started (moto's RunTask reports none).
    workloads.run_tasks(
        ECS_CLUSTER, definition, group=f"service:{ECS_SERVICE}", digests={"app": service_image.digest}, count=2
    )
    registry.aws_workloads.append(
        AwsWorkload(
            kind="ECS service",
            name=f"{ECS_CLUSTER}/{ECS_SERVICE}",
            repository=service_image.repository,
            digest=service_image.digest,
            reference=service_reference,
            detail=f"task definition {definition.rsplit('/', 1)[-1]}, 2 tasks running",
        )
    )
    function_reference = f"{registry.host}/{function_image.repository}:{function_image.tags[0]}"
    workloads.image_function(FUNCTION, function_reference, function_image.digest)
    version = workloads.publish(FUNCTION)
    workloads.alias(FUNCTION, FUNCTION_ALIAS, version)
    registry.aws_workloads.append(
        AwsWorkload(
            kind="Lambda function",
            name=FUNCTION,
            repository=function_image.repository,
            digest=function_image.digest,
            reference=function_reference,
            detail=f"PackageType Image, $LATEST and version {version}, alias {FUNCTION_ALIAS} -> {version}",
        )
    )


def seed_app(registry: DemoRegistry, rng: random.Random) -> dict[str, PushedImage]:
    repo = registry.create("app", lifecycle_policy=INCIDENT_POLICY)
    releases: list[PushedImage] = []
    dev_builds: list[PushedImage] = []
    age = 200 * DAY
    for n in range(270, 400):
        age -= rng.randint(30, 70) * HOUR
        if age < 3 * HOUR:
            break
        build = push_app_build(registry, repo, rng, n, age)
        (dev_builds if is_dev_build(n) else releases).append(build)
    registry.push(repo, "fresh build", 1 * HOUR, size=233 * MIB)  # untagged, an hour old: min_age keeps it
    registry.push(repo, "yesterday's build", 20 * HOUR, size=229 * MIB)  # untagged, young too
    return app_images_in_use(registry, releases, dev_builds)


def is_dev_build(n: int) -> bool:
    return n % 4 == 3


def push_app_build(registry: DemoRegistry, repo: str, rng: random.Random, n: int, age: timedelta) -> PushedImage:
    """app's build `n`, pushed `age` ago: a dev build (tagged dev when pushed) or a release (tagged latest), every
    ninth after a rebuild whose tag it took."""
    if n % 9 == 0:  # a rebuild whose tag the next push took: untagged
        registry.push(repo, f"rebuild {n}", age + HOUR, size=rng.randint(150, 420) * MIB)
    if is_dev_build(n):
        build = registry.push(repo, f"1.12.{n}-dev", age, f"1.12.{n}-dev", size=rng.randint(150, 420) * MIB)
        registry.retag(build, "dev")
        return build
    tags = [f"1.12.{n}"]
    if n % 3 == 0:  # deployed to production back then: the tagger marked it two hours after the push
        tags.append(f"deployed-prod-{int((registry.now - settle(age) + 2 * HOUR).timestamp())}")
    build = registry.push(repo, f"1.12.{n}", age, *tags, size=rng.randint(150, 420) * MIB)
    registry.retag(build, "latest")
    return build


def app_images_in_use(
    registry: DemoRegistry, releases: list[PushedImage], dev_builds: list[PushedImage]
) -> dict[str, PushedImage]:
    """The app images something runs, each the one closest to an age."""

    def aged(images: Iterable[PushedImage], age: timedelta) -> PushedImage:
        return min(images, key=lambda image: abs(age_of(registry, image) - age))

    deployed = [image for image in releases if len(image.tags) > 1]
    never_deployed = [image for image in releases if len(image.tags) == 1]
    return {
        # A release about six weeks old, deployed (tagged back then) and still running: in use.
        "prod": aged(deployed, 42 * DAY),
        # An older release kept as the rollback target, referred to by tag.
        "rollback": aged(releases, 75 * DAY),
        # A dev build a CronJob still runs, by tag.
        "cronjob": aged(dev_builds, 120 * DAY),
        # A release of about three and a half months ago, never deployed to production (no keep rule names it),
        # that the back office still runs as an ECS service.
        "backoffice": aged(never_deployed, 108 * DAY),
        # A release of about three months ago, never deployed to production here, that the cluster in the Region
        # app replicates to still runs.
        "replica": aged(never_deployed, 94 * DAY),
    }


def age_of(registry: DemoRegistry, image: PushedImage) -> timedelta:
    return registry.now - registry.images[(image.repository, image.digest)].pushed_at


def seed_releases(registry: DemoRegistry, rng: random.Random) -> dict[str, PushedImage]:
    """frontend and backend, released together; not every backend release ships a frontend. Returns the backend
    release prod runs, and the one a Lambda function runs: about four and a half months old, without a frontend
    (so `tag_in_repositories` does not keep it)."""
    frontend, backend = registry.create("frontend"), registry.create("backend")
    running: PushedImage | None = None
    backend_only: list[PushedImage] = []
    age = 360 * DAY
    for minor in range(40):
        age -= rng.randint(6, 10) * DAY
        tag = f"v2.{minor // 10}.{minor % 10}"
        if minor % 5 == 0:  # a CI build that was never tagged
            registry.push(backend, f"ci-{minor}", age + 2 * HOUR, size=rng.randint(80, 200) * MIB)
        image = registry.push(backend, tag, age, tag, size=rng.randint(80, 200) * MIB)
        if tag == "v2.0.4":
            running = image
        if minor % 3 != 1:
            registry.push(frontend, tag, age - HOUR, tag, size=rng.randint(20, 60) * MIB)
        else:
            backend_only.append(image)
    assert running is not None
    reports = min(backend_only, key=lambda image: abs(age_of(registry, image) - 135 * DAY))
    return {"prod": running, "reports": reports}


def seed_nginx_cache(registry: DemoRegistry, rng: random.Random) -> None:
    """An image-swapper cache: Docker manifests copied from Docker Hub, with the pull times ECR records."""
    repo = registry.create("docker.io/library/nginx")
    versions = ["1.14.2", "1.16.1", "1.19.0", "1.21.3", "1.23.4", "1.25.3", "1.27.0", "1.27.2"]
    for number, version in enumerate(versions):
        age = (700 - number * 80) * DAY
        pulled = age - rng.randint(5, 40) * DAY
        if version == "1.14.2":  # cached long ago, last pulled five months ago, still runs in dev
            pulled = 150 * DAY
        if version in ("1.27.0", "1.27.2"):
            pulled = rng.randint(1, 9) * DAY + 3 * HOUR
        tags = [version, "latest"] if version == versions[-1] else [version]
        size = rng.randint(55, 75) * MIB
        image = registry.push(repo, version, age, *tags, pulled=pulled, media_type=DOCKER_MANIFEST, size=size)
        if version == "1.14.2":  # archived by a native sinceImagePulled rule: the dev pod has not pulled since
            registry.ecr.archive(repo, image.digest, registry.now - ARCHIVED_AGO)
            registry.archived_in_use.append((repo, image.digest))


def seed_platform_api(registry: DemoRegistry, rng: random.Random) -> PushedImage:
    """Multi-arch releases: each index lists amd64, arm64 and an attestation; v1.6 and v1.7 share arm64."""
    repo = registry.create("platform/api")
    ecr = registry.ecr
    releases: dict[str, PushedIndex] = {}
    shared_arm: PushedImage | None = None
    age = 200 * DAY
    for n in range(1, 16):
        age -= rng.randint(9, 14) * DAY
        if age < 6 * HOUR:
            break
        pushed = settle(age)
        amd = registry.push(repo, f"v1.{n} linux/amd64", pushed + 3 * MINUTE, size=rng.randint(80, 90) * MIB)
        if n == 7 and shared_arm is not None:  # only amd64 code changed: the same arm64 manifest, listed again
            arm = shared_arm
        else:
            arm = registry.push(repo, f"v1.{n} linux/arm64", pushed + 2 * MINUTE, size=rng.randint(78, 88) * MIB)
        proof = registry.push(repo, f"v1.{n} attestation", pushed + MINUTE, size=12 * 1024)
        index = ecr.push_index(
            repo,
            f"v1.{n}",
            children=(amd, arm, proof),
            platforms=("linux/amd64", "linux/arm64", "unknown/unknown"),
            pushed_at=registry.now - pushed,
        )
        children = tuple(child.digest for child in index.children)
        registry.record(index.index, f"{repo} v1.{n}", registry.now - pushed, children=children)
        releases[f"v1.{n}"] = index
        shared_arm = arm if n == 6 else shared_arm
        if n % 2 == 0:  # cosign's default tag scheme: sha256-<hex>.sig, an ordinary tagged image
            signed_at = registry.now - pushed + 5 * MINUTE
            signature = ecr.push_signature(repo, index, pushed_at=signed_at)
            registry.record(signature, f"{repo} v1.{n} signature", signed_at, subject=index.digest)
        if n % 5 == 0:  # an OCI 1.1 referrer (an SBOM) that names its subject
            made_at = registry.now - pushed + 6 * MINUTE
            sbom = ecr.push_referrer(repo, index, pushed_at=made_at)
            registry.record(sbom, f"{repo} v1.{n} SBOM", made_at, subject=index.digest)
    registry.retag(releases["v1.9"].index, "stable")
    return releases["v1.4"].index


def seed_team_worker(registry: DemoRegistry, rng: random.Random) -> None:
    """Pull-request builds of an active team; some are pulled by previews, main and releases are kept."""
    repo = registry.create("team-payments/worker")
    age = 60 * DAY
    for n in range(1, 41):
        age -= rng.randint(20, 40) * HOUR
        if age < 2 * HOUR:
            break
        pulled = max(age - rng.randint(0, 20) * DAY, 2 * HOUR) if n % 2 else None
        tags = [f"pr-{100 + n}"]
        if n % 8 == 0:
            tags.append(f"release-{n // 8}")
        build = registry.push(repo, f"pr-{100 + n}", age, *tags, pulled=pulled, size=rng.randint(100, 300) * MIB)
        if n == 30:
            registry.retag(build, "main")


def seed_sandbox(registry: DemoRegistry, rng: random.Random) -> None:
    repo = registry.create(UNMANAGED)
    for n in range(6):
        registry.push(repo, f"try-{n}", (400 - n * 30) * DAY, f"try-{n}", size=rng.randint(500, 900) * MIB)
