"""Lifecycle simulator and doctor benchmark: a 10,000-image repository under a 20-rule native policy. Each run is a
fresh process (the tree's code) that builds the images, then times the preview and the doctor once each, then runs
them again under tracemalloc for their peak; medians of 3 with the spread. Asserts nothing about time.

    make bench        (or: python benchmarks/lifecycle_bench.py [--tree CHECKOUT] [--rounds 3])
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from measuring import Spread, add_tree_argument, check_tree, json_child, tree_environment, write_result

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


def images(count: int, rng: random.Random) -> list[Any]:
    from ecr_retention.domain.registry.images import ImageDetail

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


def measure(action: Callable[[], object]) -> dict[str, float]:
    """Timed once as it runs, then once more under tracemalloc for its peak (tracing slows it twofold)."""
    started = time.perf_counter()
    action()
    elapsed = time.perf_counter() - started
    tracemalloc.start()
    action()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"seconds": elapsed, "traced_peak_mib": peak / 2**20}


def run_once(args: argparse.Namespace) -> None:
    """In a fresh process: the inputs, then each of the two measured once."""
    from ecr_retention.domain.doctor.diagnosis import diagnose
    from ecr_retention.domain.inventory.manifest import InUseManifest, Inventory
    from ecr_retention.domain.lifecycle.parsing import parse_policy
    from ecr_retention.domain.lifecycle.preview import preview
    from ecr_retention.domain.registry.coordinates import RegistryCoordinates

    check_tree(args.tree)
    rng = random.Random(7)
    policy = parse_policy(policy_text(), "bench policy")
    details = images(args.images, rng)
    in_use = InUseManifest.model_validate(
        {
            "schemaVersion": 1,
            "cluster": "prod",
            "generatedAt": NOW.isoformat(),
            "complete": True,
            "images": [
                {"image": f"{HOST}/app:{tag}", "namespace": "prod", "workload": "Deployment/app", "container": "app",
                 "source": "pod"}
                for image in rng.sample(details, min(1_000, len(details) // 10))
                for tag in image.image_tags[:1]
            ],
        }
    )  # fmt: skip
    inventory = Inventory(manifests=(in_use,))
    figures = {
        "rules": len(policy.rules),
        "references": len(in_use.images),
        "preview": measure(lambda: preview(policy, details, NOW)),
        "doctor": measure(
            lambda: diagnose(policy, details, now=NOW, repository_name="app",
                             registry=RegistryCoordinates("123456789012", "eu-west-1"), inventory=inventory)
        ),
    }  # fmt: skip
    write_result(args.result, figures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_tree_argument(parser)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--images", type=int, default=10_000, help="images of the repository")
    parser.add_argument("--once", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.once:
        run_once(args)
        return
    with tempfile.TemporaryDirectory(prefix="lifecycle-bench-") as scratch:
        command = [sys.executable, __file__, "--tree", str(args.tree), "--once", "--images", str(args.images)]
        runs = [
            json_child(command, Path(scratch) / "result.json", env=tree_environment(args.tree))
            for _ in range(args.rounds)
        ]
    print(
        f"{args.images:,} images, {runs[0]['rules']} rules, {runs[0]['references']} in-use references, each run a fresh process"
    )
    for key, label in (("preview", "lifecycle-preview (evaluate and build the preview)"),
                       ("doctor", "doctor (every check, one fixed policy)")):  # fmt: skip
        seconds = Spread.of([run[key]["seconds"] for run in runs])
        peak = Spread.of([run[key]["traced_peak_mib"] for run in runs])
        print(f"{label:<52} {seconds.show(2, ' s')}   traced peak {peak.median:6.1f} MiB")


if __name__ == "__main__":
    main()
