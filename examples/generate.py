"""Generate the example registry snapshot and in-use manifests (deterministic; run to refresh them).

    python examples/generate.py

The registry holds what ECR lifecycle policies get wrong: version tags with dev builds and the mutable
`dev`/`latest` tags, an image-swapper cache of docker.io/library/nginx, releases shared between two
repositories and images deployed to production, plus multi-arch indexes with shared
children, cosign signatures and an OCI SBOM referrer.
"""

from __future__ import annotations

import hashlib
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

NOW = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
ACCOUNT = "123456789012"
REGION = "eu-west-1"
HOST = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
HERE = Path(__file__).parent


def digest_of(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def iso(moment: datetime) -> str:
    return moment.isoformat()


class Repository:
    def __init__(self, name: str, rng: random.Random) -> None:
        self.name = name
        self.rng = rng
        self.images: dict[str, dict[str, Any]] = {}
        self.manifests: dict[str, dict[str, Any]] = {}

    def push(
        self,
        seed: str,
        pushed: datetime,
        tags: list[str] | None = None,
        *,
        media_type: str = OCI_MANIFEST,
        pulled: datetime | None = None,
        size: int | None = None,
        **extra: Any,
    ) -> str:
        digest = digest_of(f"{self.name}/{seed}")
        detail: dict[str, Any] = {
            "registryId": ACCOUNT,
            "repositoryName": self.name,
            "imageDigest": digest,
            "imageSizeInBytes": size if size is not None else self.rng.randint(40, 420) * 1024 * 1024,
            "imagePushedAt": iso(pushed),
            "imageManifestMediaType": media_type,
            "imageStatus": "ACTIVE",
            **extra,
        }
        if tags:
            detail["imageTags"] = tags
        if pulled is not None:
            detail["lastRecordedPullTime"] = iso(pulled)
        self.images[digest] = detail
        return digest

    def tag(self, digest: str, tag: str) -> None:
        for detail in self.images.values():
            if tag in detail.get("imageTags", []):
                detail["imageTags"].remove(tag)
                if not detail["imageTags"]:
                    del detail["imageTags"]
        self.images[digest].setdefault("imageTags", []).append(tag)

    def push_index(self, seed: str, pushed: datetime, tags: list[str], children: list[str]) -> str:
        manifest = {
            "schemaVersion": 2,
            "mediaType": OCI_INDEX,
            "manifests": [
                {"mediaType": OCI_MANIFEST, "digest": child, "size": 1234, "platform": platform}
                for child, platform in zip(children, PLATFORMS, strict=False)
            ],
        }
        digest = self.push(
            seed, pushed, tags, media_type=OCI_INDEX, size=0
        )  # ECR reports the largest child; 0 avoids counting layers twice
        self.manifests[digest] = manifest
        return digest

    def snapshot(self) -> dict[str, Any]:
        data: dict[str, Any] = {"repositoryName": self.name, "imageDetails": list(self.images.values())}
        if self.manifests:
            data["manifests"] = self.manifests
        return data


PLATFORMS = [
    {"architecture": "amd64", "os": "linux"},
    {"architecture": "arm64", "os": "linux"},
    {"architecture": "unknown", "os": "unknown"},  # a buildx attestation manifest
]


def build_app(rng: random.Random) -> tuple[Repository, dict[str, str]]:
    """Every build pushes 1.12.N; dev builds push 1.12.N-dev and move `dev`."""
    repo = Repository("app", rng)
    deployed: dict[str, str] = {}
    moment = NOW - timedelta(days=300)
    for n in range(250, 372):
        moment += timedelta(hours=rng.randint(30, 70))
        if moment > NOW - timedelta(hours=3):
            break
        if n % 4 == 3:
            digest = repo.push(f"1.12.{n}-dev", moment, [f"1.12.{n}-dev"])
            repo.tag(digest, "dev")
        else:
            digest = repo.push(f"1.12.{n}", moment, [f"1.12.{n}"])
            repo.tag(digest, "latest")
            deployed[f"1.12.{n}"] = digest
            if n % 3 == 0:
                ts = int((moment + timedelta(hours=2)).timestamp())
                repo.images[digest]["imageTags"].append(f"deployed-prod-{ts}")
        if n % 9 == 0:  # a rebuild that lost its tag to the next push
            repo.push(f"orphan-{n}", moment - timedelta(hours=1))
    # One untagged image pushed an hour ago: young, so min_age keeps it.
    repo.push("fresh-untagged", NOW - timedelta(hours=1))
    return repo, deployed


def build_releases(rng: random.Random) -> tuple[Repository, Repository]:
    """Backend releases are kept while the frontend carries the same tag."""
    frontend, backend = Repository("frontend", rng), Repository("backend", rng)
    moment = NOW - timedelta(days=360)
    for minor in range(40):
        moment += timedelta(days=rng.randint(6, 10))
        tag = f"v2.{minor // 10}.{minor % 10}"
        backend.push(tag, moment, [tag])
        if minor % 3 != 1:  # not every backend release ships a frontend
            frontend.push(tag, moment + timedelta(hours=1), [tag])
        if minor % 5 == 0:
            backend.push(f"ci-{minor}", moment - timedelta(hours=2))
    return frontend, backend


def build_nginx_cache(rng: random.Random) -> Repository:
    """An image-swapper cache repository of docker.io/library/nginx."""
    repo = Repository("docker.io/library/nginx", rng)
    versions = ["1.14.2", "1.16.1", "1.19.0", "1.21.3", "1.23.4", "1.25.3", "1.27.0", "1.27.2"]
    for i, version in enumerate(versions):
        pushed = NOW - timedelta(days=700 - i * 80)
        pulled = pushed + timedelta(days=rng.randint(5, 40))
        if version == "1.14.2":  # cached long ago, pulled last 5 months ago, still runs in dev
            pulled = NOW - timedelta(days=150)
        if version in ("1.27.0", "1.27.2"):
            pulled = NOW - timedelta(days=rng.randint(1, 9))
        repo.push(version, pushed, [version], media_type=DOCKER_MANIFEST, pulled=pulled)
    repo.tag(digest_of("docker.io/library/nginx/1.27.2"), "latest")
    return repo


def build_platform_api(rng: random.Random) -> tuple[Repository, dict[str, str]]:
    """Multi-arch indexes (amd64, arm64, attestation), shared children, cosign signatures, an SBOM."""
    repo = Repository("platform/api", rng)
    releases: dict[str, str] = {}
    moment = NOW - timedelta(days=200)
    previous_arm: str | None = None
    for n in range(1, 16):
        moment += timedelta(days=rng.randint(9, 14))
        if moment > NOW - timedelta(hours=6):
            break
        amd = repo.push(f"v1.{n}-amd64", moment - timedelta(minutes=3), size=rng.randint(80, 90) * 1024 * 1024)
        # Releases 6 and 7 only changed amd64 code: the arm64 manifest is byte-identical and shared.
        if n == 7 and previous_arm is not None:
            arm = previous_arm
        else:
            arm = repo.push(f"v1.{n}-arm64", moment - timedelta(minutes=2), size=rng.randint(78, 88) * 1024 * 1024)
        att = repo.push(
            f"v1.{n}-attestation",
            moment - timedelta(minutes=1),
            size=12 * 1024,
            artifactMediaType="application/vnd.in-toto+json",
        )
        index = repo.push_index(f"v1.{n}", moment, [f"v1.{n}"], [amd, arm, att])
        releases[f"v1.{n}"] = index
        previous_arm = arm
        if n % 2 == 0:  # cosign's default tag scheme: sha256-<hex>.sig, an ordinary tagged image
            repo.push(
                f"v1.{n}-sig",
                moment + timedelta(minutes=5),
                [f"sha256-{index.split(':')[1]}.sig"],
                size=2 * 1024,
            )
        if n % 5 == 0:  # an OCI 1.1 referrer (SBOM) that names its subject
            repo.push(
                f"v1.{n}-sbom",
                moment + timedelta(minutes=6),
                size=300 * 1024,
                artifactMediaType="application/spdx+json",
                subjectManifestDigest=index,
            )
    repo.tag(releases["v1.9"], "stable")
    return repo, releases


def build_team_worker(rng: random.Random) -> Repository:
    repo = Repository("team-payments/worker", rng)
    moment = NOW - timedelta(days=120)
    for n in range(1, 41):
        moment += timedelta(days=rng.randint(1, 4))
        if moment > NOW - timedelta(hours=2):
            break
        pulled = moment + timedelta(days=rng.randint(0, 20)) if n % 2 else None
        if pulled and pulled > NOW:
            pulled = NOW - timedelta(hours=1)
        digest = repo.push(f"pr-{100 + n}", moment, [f"pr-{100 + n}"], pulled=pulled)
        if n % 8 == 0:
            repo.tag(digest, f"release-{n // 8}")
    repo.tag(digest_of("team-payments/worker/pr-138"), "main")
    return repo


def build_sandbox(rng: random.Random) -> Repository:
    repo = Repository("sandbox/experiments", rng)
    for n in range(6):
        repo.push(f"try-{n}", NOW - timedelta(days=400 - n * 30), [f"try-{n}"])
    return repo


def in_use(
    cluster: str, generated: datetime, images: list[tuple[str, str | None, str, str, str, str]]
) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "cluster": cluster,
        "generatedAt": generated.isoformat().replace("+00:00", "Z"),
        "complete": True,
        "images": [
            {
                "image": image,
                **({"digest": digest} if digest else {}),
                "namespace": namespace,
                "workload": workload,
                "container": container,
                "source": source,
            }
            for image, digest, namespace, workload, container, source in images
        ],
    }


def main(out: Path = HERE) -> None:
    rng = random.Random(20261130)
    app, app_builds = build_app(rng)
    frontend, backend = build_releases(rng)
    nginx = build_nginx_cache(rng)
    api, api_releases = build_platform_api(rng)
    worker = build_team_worker(rng)
    sandbox = build_sandbox(rng)
    repositories = [app, backend, frontend, nginx, api, worker, sandbox]
    snapshot = {"registryId": ACCOUNT, "region": REGION, "repositories": [r.snapshot() for r in repositories]}
    (out / "snapshot.json").write_text(json.dumps(snapshot, indent=1) + "\n")

    prod_app = sorted(app_builds)[-14]  # production runs a build well behind latest
    rollback = sorted(app_builds)[-40]  # an old ReplicaSet that `kubectl rollout undo` returns to
    prod = in_use(
        "prod",
        NOW - timedelta(minutes=8),
        [
            (f"{HOST}/app:{prod_app}", app_builds[prod_app], "shop", "Deployment/app", "app", "pod"),
            (f"{HOST}/app:{rollback}", None, "shop", "ReplicaSet/app-6d9f7c", "app", "replicaset"),
            (f"{HOST}/backend:v2.0.4", digest_of("backend/v2.0.4"), "shop", "Deployment/backend", "api", "pod"),
            (f"{HOST}/frontend:v2.3.0", None, "shop", "Deployment/frontend", "web", "template"),
            (f"{HOST}/platform/api:v1.4", api_releases["v1.4"], "platform", "Deployment/api", "api", "pod"),
            ("quay.io/prometheus/node-exporter:v1.8.2", None, "monitoring", "DaemonSet/node-exporter", "node", "pod"),
        ],
    )
    dev = in_use(
        "dev",
        NOW - timedelta(minutes=4),
        [
            (f"{HOST}/app:dev", None, "dev", "Deployment/app", "app", "pod"),
            (f"{HOST}/app:1.12.287-dev", None, "dev", "CronJob/report", "report", "cronjob"),
            (f"{HOST}/docker.io/library/nginx:1.14.2", None, "tcn-personal-1", "Deployment/nginx", "nginx", "pod"),
            ("docker.io/library/busybox:1.36", None, "tcn-personal-1", "Deployment/nginx", "init", "pod"),
        ],
    )
    (out / "in-use").mkdir(exist_ok=True)
    for manifest in (prod, dev):
        (out / "in-use" / f"{manifest['cluster']}.json").write_text(json.dumps(manifest, indent=2) + "\n")
    total = sum(len(r.images) for r in repositories)
    print(f"wrote {out}/snapshot.json ({total} images in {len(repositories)} repositories) and {out}/in-use/")


if __name__ == "__main__":
    main()
