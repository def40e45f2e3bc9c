"""Lifecycle simulator and doctor benchmark: a 10,000-image repository under a 20-rule native policy.
Prints wall time and peak memory; asserts nothing about time.

    make bench        (or: .venv/bin/python benchmarks/lifecycle_bench.py)
"""

from __future__ import annotations

import hashlib
import json
import random
import time
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from ecr_retention.domain.doctor import diagnose
from ecr_retention.domain.inventory import InUseManifest, Inventory
from ecr_retention.domain.lifecycle.parsing import parse_policy
from ecr_retention.domain.lifecycle.preview import preview
from ecr_retention.domain.registry import ImageDetail

NOW = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
HOST = "123456789012.dkr.ecr.eu-west-1.amazonaws.com"
PREFIXES = ["v1.", "v2.", "v3.", "release-", "rc-", "pr-", "feature-", "fix-", "nightly-", "sha-"]


def policy_text() -> str:
    rules = []
    for priority, prefix in enumerate(PREFIXES, start=1):
        rules.append(
            {
                "rulePriority": priority,
                "selection": {"tagStatus": "tagged", "tagPrefixList": [prefix], "countType": "imageCountMoreThan",
                              "countNumber": 20 + priority},
                "action": {"type": "expire"},
            }
        )  # fmt: skip
    for offset, prefix in enumerate(PREFIXES, start=len(PREFIXES) + 1):
        rules.append(
            {
                "rulePriority": offset,
                "selection": {"tagStatus": "tagged", "tagPatternList": [f"*{prefix}*-old"], "countType": "sinceImagePushed",
                              "countUnit": "days", "countNumber": 30 + offset},
                "action": {"type": "expire"},
            }
        )  # fmt: skip
    rules[-1] = {
        "rulePriority": 20,
        "selection": {"tagStatus": "any", "countType": "sinceImagePushed", "countUnit": "days", "countNumber": 365},
        "action": {"type": "expire"},
    }
    return json.dumps({"rules": rules})


def images(count: int, rng: random.Random) -> list[ImageDetail]:
    found = []
    for n in range(count):
        prefix = rng.choice(PREFIXES)
        tags = [f"{prefix}{n}"] if rng.random() < 0.9 else []
        found.append(
            ImageDetail(
                image_digest="sha256:" + hashlib.sha256(str(n).encode()).hexdigest(),
                image_tags=tuple(tags),
                image_size_in_bytes=rng.randint(10**6, 10**9),
                image_pushed_at=NOW - timedelta(hours=n),
            )
        )
    return found


def measure(label: str, action: Callable[[], object]) -> None:
    """Timed once as it runs, then once more under tracemalloc for its peak (tracing slows it twofold)."""
    started = time.perf_counter()
    action()
    elapsed = time.perf_counter() - started
    tracemalloc.start()
    action()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"{label:<52} {elapsed:6.2f} s   traced peak {peak / 2**20:6.1f} MiB")


def main() -> None:
    rng = random.Random(7)
    policy = parse_policy(policy_text(), "bench policy")
    details = images(10_000, rng)
    in_use = InUseManifest.model_validate(
        {
            "schemaVersion": 1,
            "cluster": "prod",
            "generatedAt": NOW.isoformat(),
            "complete": True,
            "images": [
                {"image": f"{HOST}/app:{tag}", "namespace": "prod", "workload": "Deployment/app", "container": "app",
                 "source": "pod"}
                for image in rng.sample(details, 1_000)
                for tag in image.image_tags[:1]
            ],
        }
    )  # fmt: skip
    inventory = Inventory(manifests=(in_use,))
    print(f"10,000 images, {len(policy.rules)} rules, {len(in_use.images)} in-use references")
    measure("lifecycle-preview (evaluate and build the preview)", lambda: preview(policy, details, NOW))
    measure(
        "doctor (every check, one fixed policy)",
        lambda: diagnose(policy, details, now=NOW, repository_name="app", region="eu-west-1",
                         registry_id="123456789012", inventory=inventory),
    )  # fmt: skip


if __name__ == "__main__":
    main()
