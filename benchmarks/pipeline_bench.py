"""Pipeline benchmark: the API calls of a dry-run sweep against their minimum, and the sweep's wall time against a
bare paginated DescribeImages listing of the same images, on moto's server in a process of its own.

    make bench        (or: python benchmarks/pipeline_bench.py [--tree CHECKOUT] [--rounds 3] [--fraction 1.0]
                                                          [--against CHECKOUT])

The registry: 20 repositories of 1,000 images and one of 10,000, written straight into moto's backend (through the
ECR API it would take minutes), with moto made to behave like ECR where a sweep depends on it (paging, the
imageStatus filter: ecr_retention_dev.emulator.EcrFidelity). moto runs as a server on 127.0.0.1 in a child process
(this checkout's emulator, whatever tree is measured), so a sweep's process holds only its own heap, as a Lambda
does, and its collector walks nothing of the emulator's.

Each sweep is `ecr-retention run --dry-run` (cli.main in a fresh process, the tree's code), timed from the call of
run_pipeline to its return; its page and sheet (store_page_and_sheet) are timed apart, so the ratio is printed with
and without them. Each bare listing is a fresh process too. A counted sweep comes first (it also warms the server),
then `--rounds` alternated rounds of listing and sweep; each ratio is a round's own pair, their median printed with
the spread. `--against CHECKOUT` adds that checkout's sweep to each round, right after this one's, against the same
listing (a before figure side by side on a busy machine). The calls are counted by the server (every request it answered, retries included); the ratio must be
1.00: a sweep that makes more calls than the minimum is a defect. Prints figures; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from measuring import (
    ROOT,
    CollectorWatch,
    Phases,
    Spread,
    add_tree_argument,
    check_tree,
    figure,
    json_child,
    size_label,
    tree_environment,
    write_result,
)

REGION = "eu-west-1"
ACCOUNT = "123456789012"
BUCKET = "bench-inventory"
NOW = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
RULES = """
version: 1
dry_run: true
safety: {min_age: 1d, max_delete_fraction: 1, inventory_max_age: 6h, clusters: [prod]}
policies:
  - repositories: ["*"]
    rules:
      - keep: {tags: ["bulk-1?"]}
      - delete: {tags: ["bulk-*"], older_than: 30d, keep_newest: 50}
      - delete: {untagged: true, older_than: 7d}
"""
FAKE_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "AWS_EC2_METADATA_DISABLED": "true",
    "NO_PROXY": "127.0.0.1,localhost",  # a proxy from the environment must not see loopback requests
    "no_proxy": "127.0.0.1,localhost",
}


def sizes(fraction: float) -> dict[str, int]:
    small, large = max(1, round(1_000 * fraction)), max(1, round(10_000 * fraction))
    return {**{f"team-{i // 5}/svc-{i}": small for i in range(20)}, "monolith": large}


def environment(tree: Path, endpoint: str | None = None) -> dict[str, str]:
    values = dict(FAKE_ENVIRONMENT)
    if endpoint is not None:
        values["AWS_ENDPOINT_URL"] = endpoint
    environ = tree_environment(tree, values)
    environ.pop("AWS_PROFILE", None)
    return environ


# The emulator's process ------------------------------------------------------------------------------------------


def serve(fraction: float) -> None:
    """moto's server with ECR made faithful and the registry seeded; prints its endpoint, then answers `served`
    (the ECR requests answered since the last time, as JSON) on each line of stdin until stdin closes."""
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    from ecr_retention_dev.emulator.fidelity import EcrFidelity
    from ecr_retention_dev.emulator.seeding import MotoEcr

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's server logs every request
    with EcrFidelity() as fidelity:
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        registry = MotoEcr(boto3.client("ecr", region_name=REGION, endpoint_url=endpoint))
        for name, count in sizes(fraction).items():
            registry.create_repository(name)
            registry.seed_images(name, count, newest=NOW - timedelta(hours=2), interval=timedelta(hours=3))
        s3 = boto3.client("s3", region_name=REGION, endpoint_url=endpoint)
        s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
        manifest = {
            "schemaVersion": 1,
            "cluster": "prod",
            "generatedAt": datetime.now(UTC).isoformat(),
            "complete": True,
            "images": [],
        }
        s3.put_object(Bucket=BUCKET, Key="in-use/prod.json", Body=json.dumps(manifest).encode())
        fidelity.served.clear()
        print(endpoint, flush=True)
        for _ in sys.stdin:
            print(json.dumps(dict(fidelity.served)), flush=True)
            fidelity.served.clear()
        server.stop()


class Emulator:
    """The server child: started seeded, asked for its counts, stopped when stdin closes."""

    def __init__(self, fraction: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", "--fraction", str(fraction)],
            env=environment(ROOT),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        if self.process.stdin is None or self.process.stdout is None:
            raise RuntimeError("the emulator's pipes were not opened")
        self._input, self._output = self.process.stdin, self.process.stdout
        self.endpoint = self._output.readline().strip()
        if not self.endpoint.startswith("http://"):
            raise SystemExit("moto's server did not start")

    def served(self) -> Counter[str]:
        self._input.write("served\n")
        self._input.flush()
        return Counter(json.loads(self._output.readline()))

    def stop(self) -> None:
        self._input.close()
        self.process.wait(timeout=60)


# The measured processes ------------------------------------------------------------------------------------------


def bare_listing(args: argparse.Namespace) -> None:
    """What any tool has to do at least: read every image of every repository, page by page."""
    import boto3

    ecr = boto3.client("ecr", region_name=REGION)  # AWS_ENDPOINT_URL: the emulator
    started = time.perf_counter()
    listed = 0
    for name in sizes(args.fraction):
        pages = ecr.get_paginator("describe_images").paginate(
            repositoryName=name, filter={"imageStatus": "ANY"}, PaginationConfig={"PageSize": 1000}
        )
        listed += sum(len(page["imageDetails"]) for page in pages)
    write_result(args.result, {"seconds": time.perf_counter() - started, "images": listed})


def sweep(args: argparse.Namespace) -> None:
    """`ecr-retention run --dry-run` as the console script runs it, run_pipeline and the page and sheet timed."""
    import importlib

    import ecr_retention.cli as cli

    for name in getattr(cli, "COMMAND_MODULES", ()):
        importlib.import_module(name)
    check_tree(args.tree)
    phases = Phases()
    phases.watch("ecr_retention.services.run", "run_pipeline")
    phases.watch("ecr_retention.services.report", "store_page_and_sheet")
    collector = CollectorWatch()
    with collector.watching():
        code = cli.main(["run", "--config", str(args.rules), "--bucket", BUCKET, "--dry-run"])
    swept = phases.spans["run_pipeline"]
    report, swept.result = swept.result, None
    write_result(
        args.result,
        {
            "exit": code,
            "seconds": swept.seconds,
            "cpu": swept.cpu_ended - swept.cpu_started,
            "page_and_sheet": phases.seconds("store_page_and_sheet"),
            "collector": collector.within(swept.started, swept.ended),
            "deleted": report.totals.deleted,
            "kept": report.totals.kept,
        },
    )


def minimum_calls(registry: dict[str, int]) -> Counter[str]:
    """What a dry-run sweep cannot do with less: list the repositories once, every page of every
    repository's images once, read each repository's native lifecycle policy and the registry's repository
    creation templates once (for the report), and read the registry's replication rules once (where deletions
    reach)."""
    return Counter(
        {
            "DescribeRegistry": 1,
            "DescribeRepositories": math.ceil(len(registry) / 1000),
            "DescribeRepositoryCreationTemplates": 1,
            "DescribeImages": sum(math.ceil(count / 1000) for count in registry.values()),
            "GetLifecyclePolicy": len(registry),
        }
    )


# The parent ------------------------------------------------------------------------------------------------------


def child(args: argparse.Namespace, mode: str, endpoint: str, scratch: Path, tree: Path) -> Any:
    argv = [sys.executable, __file__, mode, "--tree", str(tree), "--fraction", str(args.fraction)]
    argv += ["--rules", str(scratch / "rules.yaml")]
    return json_child(argv, scratch / "result.json", env=environment(tree, endpoint))


def api_efficiency(registry: dict[str, int], calls: Counter[str], counted: dict[str, Any]) -> float:
    images = sum(registry.values())
    print(
        f"API calls of a dry-run sweep: {len(registry)} repositories, {images:,} images (largest {max(registry.values()):,})"
    )
    print(f"  plan: {counted['deleted']:,} would be deleted, {counted['kept']:,} kept")
    minimum = minimum_calls(registry)
    for operation in sorted(set(calls) | set(minimum)):
        print(f"  {operation:<36} {calls[operation]:>5} / {minimum[operation]:<5} (actual / minimum)")
    total, least = sum(calls.values()), sum(minimum.values())
    print(f"  {'total':<36} {total:>5} / {least:<5} ratio {total / least:.2f}")
    return total / least


def without_page_and_sheet(swept: dict[str, Any]) -> float:
    return float(swept["seconds"] - swept["page_and_sheet"])


def print_against(
    against: Path, listings: list[dict[str, Any]], sweeps: list[dict[str, Any]], others: list[dict[str, Any]]
) -> None:
    """The other checkout's sweeps beside this one's, each round's pair against the round's listing."""
    print(f"{against}'s sweep in the same rounds, right after this checkout's:")
    for label, runs in (("this checkout", sweeps), (str(against), others)):
        with_page = [s["seconds"] / bare["seconds"] for s, bare in zip(runs, listings, strict=True)]
        without = [without_page_and_sheet(s) / bare["seconds"] for s, bare in zip(runs, listings, strict=True)]
        print(
            f"  {label}: sweep / listing {Spread.of(with_page).show(2)}; without the page and sheet "
            f"{Spread.of(without).show(2)}; CPU {Spread.of([s['cpu'] for s in runs]).show(2, ' s')}"
        )
    print(
        "  this checkout's sweep / the other's, each round: "
        + Spread.of([mine["seconds"] / other["seconds"] for mine, other in zip(sweeps, others, strict=True)]).show(2)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_tree_argument(parser)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--fraction", type=float, default=1.0, help="scale the registry (0.1: 3,000 images)")
    parser.add_argument(
        "--against",
        type=lambda text: Path(text).resolve(),
        metavar="CHECKOUT",
        help="also sweep with this checkout's code in each round, against the same listing",
    )
    modes = parser.add_mutually_exclusive_group()
    for mode in ("--serve", "--listing", "--sweep"):
        modes.add_argument(mode, action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rules", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.fraction)
        return
    if args.listing:
        bare_listing(args)
        return
    if args.sweep:
        sweep(args)
        return
    registry = sizes(args.fraction)
    emulator = Emulator(args.fraction)
    try:
        with tempfile.TemporaryDirectory(prefix="pipeline-bench-") as directory:
            scratch = Path(directory)
            (scratch / "rules.yaml").write_text(RULES)
            counted = child(args, "--sweep", emulator.endpoint, scratch, args.tree)
            calls = emulator.served()
            listings, sweeps, others = [], [], []
            for _ in range(args.rounds):
                listings.append(child(args, "--listing", emulator.endpoint, scratch, args.tree))
                sweeps.append(child(args, "--sweep", emulator.endpoint, scratch, args.tree))
                if args.against is not None:
                    others.append(child(args, "--sweep", emulator.endpoint, scratch, args.against))
    finally:
        emulator.stop()
    ratio_of_calls = api_efficiency(registry, calls, counted)
    if args.against is not None:
        print_against(args.against, listings, sweeps, others)
    label = size_label(sum(registry.values()))
    with_page = Spread.of([s["seconds"] / bare["seconds"] for s, bare in zip(sweeps, listings, strict=True)])
    without = Spread.of([without_page_and_sheet(s) / bare["seconds"] for s, bare in zip(sweeps, listings, strict=True)])
    print(f"end to end against moto's server (its own process) over HTTP ({listings[0]['images']:,} images):")
    rows = [
        ("dry-run sweep, `ecr-retention run --dry-run`'s run_pipeline", [s["seconds"] for s in sweeps]),
        ("  of CPU (the sweep's process, every thread)", [s["cpu"] for s in sweeps]),
        ("  of which the report's page and sheet (rendered, stored)", [s["page_and_sheet"] for s in sweeps]),
        ("  of which the collector", [s["collector"]["seconds"] for s in sweeps]),
        ("bare paginated DescribeImages of the same images", [bare["seconds"] for bare in listings]),
    ]
    for label_of_row, values in rows:
        print(f"  {label_of_row:<60} {Spread.of(values).show(2, ' s')}")
    print(f"  sweep / listing: {with_page.show(2)}; without the page and sheet {without.show(2)} (each round's pair)")
    figure(f"sweep_ratio_{label}", with_page)
    figure(f"sweep_ratio_{label}_without_page_sheet", without)
    figure("api_calls_over_minimum", ratio_of_calls)


if __name__ == "__main__":
    main()
