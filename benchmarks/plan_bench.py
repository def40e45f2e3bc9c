"""Engine benchmark: plan a 10,000-image repository (20 rules, 1,000 in-use references) and 100
repositories of 1,000 images. Prints wall time, CPU time and peak memory; asserts nothing about time.

    make bench        (or: .venv/bin/python benchmarks/plan_bench.py)
"""

from __future__ import annotations

import gc
import hashlib
import random
import resource
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from ecr_retention.domain.config import RetentionConfig, parse_config
from ecr_retention.domain.inventory import InUseManifest, Inventory
from ecr_retention.domain.planner import plan_registry
from ecr_retention.domain.registry import Snapshot

NOW = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
HOST = "123456789012.dkr.ecr.eu-west-1.amazonaws.com"
INDEX = "application/vnd.oci.image.index.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"

RULES = """
version: 1
safety: {clusters: [prod], max_delete_fraction: 1.0}
policies:
  - repositories: ["*"]
    rules:
      - keep: {tags: [latest, dev, main, stable]}
      - keep: {tags: ["deployed-prod-*"], newest: 20}
      - keep: {tags: ["release-*"], pulled_within: 30d}
      - keep: {tags: ["hotfix-*"], newest: 5}
      - keep: {tags: ["v1.0.*", "v2.0.*"]}
      - keep: {tag_in_repositories: ["shared"]}
      - keep: {tags: ["lts-*"]}
      - keep: {pulled_within: 3d}
      - keep: {tags: ["*-pinned"]}
      - keep: {tags: ["canary-*"], newest: 3}
      - delete: {tags: ["*.*.*"], older_than: 30d, keep_newest: 50}
      - delete: {tags: ["*-dev"], older_than: 14d, keep_newest: 10}
      - delete: {tags: ["pr-*"], not_pulled_within: 14d, archive: true}
      - delete: {tags: ["sha-*"], older_than: 7d, keep_newest: 20}
      - delete: {tags: ["nightly-*"], older_than: 10d}
      - delete: {tags: ["feature-*", "fix-*"], older_than: 21d, keep_newest: 5}
      - delete: {tags: ["sha256-*"], older_than: 60d}
      - delete: {untagged: true, older_than: 1d}
      - delete: {tags: ["canary-*"], older_than: 5d}
      - delete: {older_than: 365d, keep_newest: 100}
"""


def digest(seed: str) -> str:
    return "sha256:" + hashlib.sha256(seed.encode()).hexdigest()


def repository(name: str, count: int, rng: random.Random) -> dict[str, Any]:
    """A CI repository: versions, dev builds, PRs, shas, multi-arch indexes, cosign signatures."""
    images: list[dict[str, Any]] = []
    manifests: dict[str, Any] = {}
    moment = NOW - timedelta(days=500)
    step = timedelta(days=500) / count
    n = 0
    while len(images) < count:
        n += 1
        moment += step
        kind = rng.random()
        pulled = (NOW - timedelta(hours=rng.randint(1, 24 * 200))).isoformat() if rng.random() < 0.5 else None
        base: dict[str, Any] = {
            "imageDigest": digest(f"{name}/{n}"),
            "imagePushedAt": moment.isoformat(),
            "imageSizeInBytes": rng.randint(10, 500) * 1_000_000,
            "imageManifestMediaType": MANIFEST,
        }
        if pulled:
            base["lastRecordedPullTime"] = pulled
        if kind < 0.35:
            base["imageTags"] = [f"1.{n // 100}.{n % 100}"] + ([f"deployed-prod-{n}"] if n % 7 == 0 else [])
        elif kind < 0.5:
            base["imageTags"] = [f"1.{n // 100}.{n % 100}-dev"]
        elif kind < 0.65:
            base["imageTags"] = [f"pr-{n}"]
        elif kind < 0.8:
            base["imageTags"] = [f"sha-{n:07x}"]
        elif kind < 0.88 and len(images) + 3 <= count:
            children = [digest(f"{name}/{n}/amd64"), digest(f"{name}/{n}/arm64")]
            for child in children:
                images.append({**base, "imageDigest": child, "imageTags": []})
            base["imageManifestMediaType"] = INDEX
            base["imageTags"] = [f"v{n // 100}.{n % 100}.0"]
            manifests[base["imageDigest"]] = {"manifests": [{"digest": c} for c in children]}
        elif kind < 0.93:
            base["imageTags"] = [f"nightly-{n}"]
        else:
            base["imageTags"] = []
        images.append(base)
        if n % 25 == 0 and base["imageTags"] and len(images) < count:
            sig = {**base, "imageDigest": digest(f"{name}/{n}/sig"), "imageSizeInBytes": 2000}
            sig["imageTags"] = [f"sha256-{base['imageDigest'].split(':')[1]}.sig"]
            sig["imageManifestMediaType"] = MANIFEST
            images.append(sig)
    images[-1]["imageTags"] = [*images[-1].get("imageTags", []), "latest"]
    return {"repositoryName": name, "imageDetails": images[:count], "manifests": manifests}


def inventory(snapshot: Snapshot, references: int, rng: random.Random) -> Inventory:
    entries = []
    all_images = [(repo.repository_name, image) for repo in snapshot.repositories for image in repo.image_details]
    for n in range(references):
        repo, image = rng.choice(all_images)
        if image.image_tags and n % 2:
            entries.append({"image": f"{HOST}/{repo}:{image.image_tags[0]}", "digest": None})
        else:
            entries.append({"image": f"{HOST}/{repo}@{image.image_digest}", "digest": image.image_digest})
    manifest = InUseManifest.model_validate(
        {
            "schemaVersion": 1,
            "cluster": "prod",
            "generatedAt": (NOW - timedelta(minutes=5)).isoformat(),
            "complete": True,
            "images": [
                {**e, "namespace": "ns", "workload": f"Deployment/w{i}", "container": "c", "source": "pod"}
                for i, e in enumerate(entries)
            ],
        }
    )
    return Inventory(manifests=(manifest,))


def measure(label: str, images: int, action: Callable[[], object]) -> float:
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    action()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    tracemalloc.start()
    action()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    per_10k = wall / images * 10_000
    print(
        f"{label:<44} {images:>7} images  wall {wall:6.3f} s  cpu {cpu:6.3f} s  "
        f"peak {peak / 2**20:6.1f} MiB  ({per_10k:.3f} s per 10,000 images)"
    )
    return wall / images


def case(label: str, repositories: list[dict[str, Any]], references: int, config: RetentionConfig) -> float:
    rng = random.Random(7)
    raw = {"registryId": "123456789012", "region": "eu-west-1", "repositories": repositories}
    images = sum(len(r["imageDetails"]) for r in repositories)
    measure(f"{label}: parse snapshot (pydantic)", images, lambda: Snapshot.model_validate(raw))
    snapshot = Snapshot.model_validate(raw)
    inv = inventory(snapshot, references, rng)
    result = plan_registry(config, snapshot, inv, NOW)
    removed = sum(1 for r in result.repositories for d in r.images if d.action != "keep")
    per_image = measure(f"{label}: plan", images, lambda: plan_registry(config, snapshot, inv, NOW))
    print(f"{'':<44} {removed} of {images} images removed by the plan; blocked: {bool(result.blocked)}")
    return per_image


# (images, repositories): every size in one repository, and spread over 100 repositories.
CASES = [(1_000, 1), (1_000, 100), (10_000, 1), (10_000, 100), (100_000, 1), (100_000, 100)]


def run_case(name: str) -> None:
    images, count = (int(part) for part in name.split("x"))
    config = parse_config(RULES, "benchmark rules")
    rng = random.Random(42)
    shared = {"repositoryName": "shared", "imageDetails": [], "manifests": {}}
    per_repository = images // count
    if count == 1:
        repositories = [repository("app", images, rng)]
    else:
        repositories = [repository(f"team-{i // 10}/svc-{i}", per_repository, rng) for i in range(count)]
    label = f"{count} repositor{'y' if count == 1 else 'ies'} x {per_repository:,}"
    per_image = case(label, [*repositories, shared], 1_000, config)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{'':<44} process peak RSS {rss:.0f} MiB (inputs, plan and interpreter)")
    print(f"PER_IMAGE {per_image!r}")


def main() -> None:
    """Each case runs in its own process, so that its peak RSS is its own."""
    if len(sys.argv) > 1:
        run_case(sys.argv[1])
        return
    rules = sum(len(p.rules) for p in parse_config(RULES, "benchmark rules").policies)
    print(f"python {sys.version.split()[0]}, {rules} rules, 1,000 in-use references")
    per_image = {}
    for images, count in CASES:
        name = f"{images}x{count}"
        done = subprocess.run([sys.executable, __file__, name], capture_output=True, text=True, check=True)
        for line in done.stdout.splitlines():
            if line.startswith("PER_IMAGE "):
                per_image[name] = float(line.split()[1])
            else:
                print(line)
    for count in (1, 100):
        ratio = per_image[f"100000x{count}"] / per_image[f"10000x{count}"]
        small = per_image[f"1000x{count}"] / per_image[f"10000x{count}"]
        print(
            f"time per image over {count} repositor{'y' if count == 1 else 'ies'}: 1,000 / 10,000 images {small:.2f}, "
            f"100,000 / 10,000 images {ratio:.2f} (1.00 = linear)"
        )
    for module in ("ecr_retention.domain.planner", "ecr_retention.cli"):
        print(f"cold import of {module}: {import_time(module) * 1000:.0f} ms (best of 5, interpreter start included)")
    # The handlers' cold imports are measured from the bundled Lambda asset: benchmarks/asset_bench.py.


def import_time(module: str) -> float:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
        best = min(best, time.perf_counter() - start)
    return best


if __name__ == "__main__":
    main()
