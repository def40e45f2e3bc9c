"""Engine benchmark: `ecr-retention plan` on files written once, each run a fresh process, medians of 3 with the
spread. Measures only; asserts nothing about time.

    make bench        (or: python benchmarks/plan_bench.py [--tree CHECKOUT] [--rounds 3] [--small 10000 --large 100000])

Scenarios (20 rules, 1,000 in-use references, CI-shaped repositories: versions, dev builds, PRs, shas, multi-arch
indexes, cosign signatures): one repository of 10,000 and of 100,000 images, 1,000 repositories x 100 and
10,000 repositories x 10 images.

Two kinds of process, both running the tree's code:
- phases: `ecr_retention.cli.main(["plan", ...])` in a fresh interpreter, exactly as the command runs (its collector
  guard included, whatever it is), with the loading functions and plan_registry wrapped from outside to time
  them. "load + plan" is from the call of load_config to the return of plan_registry: everything the command
  does before it writes its output. The peak (VmHWM) and the RSS after the imports are this process's.
- the CLI itself: `python -m ecr_retention plan ...`, its whole wall time and its peak RSS (wait4's maxrss of
  that child), for the table and for --format json.
The stdout of every run goes to a file, as a redirection would. The parent stays small: a child's maxrss starts
from the parent's own peak (it is spawned as a vfork of it), so the inputs are written by a child too.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from measuring import (
    ChildRun,
    CollectorWatch,
    Phases,
    Spread,
    add_tree_argument,
    check_tree,
    figure,
    json_child,
    resident_mib,
    run_child,
    size_label,
    tree_environment,
    write_result,
)

NOW = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
HOST = "123456789012.dkr.ecr.eu-west-1.amazonaws.com"
INDEX = "application/vnd.oci.image.index.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
REFERENCES = 1_000

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


# The inputs: written once, by a child ----------------------------------------------------------------------------


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


def in_use_manifest(repositories: list[dict[str, Any]], references: int, rng: random.Random) -> dict[str, Any]:
    """The prod cluster's manifest: `references` images picked at random, by tag or by digest."""
    images = [(repo["repositoryName"], image) for repo in repositories for image in repo["imageDetails"]]
    entries = []
    for n in range(references):
        name, image = rng.choice(images)
        tags = image.get("imageTags") or []
        if tags and n % 2:
            entries.append({"image": f"{HOST}/{name}:{tags[0]}", "digest": None})
        else:
            entries.append({"image": f"{HOST}/{name}@{image['imageDigest']}", "digest": image["imageDigest"]})
    return {
        "schemaVersion": 1,
        "cluster": "prod",
        "generatedAt": (NOW - timedelta(minutes=5)).isoformat(),
        "complete": True,
        "images": [
            {**entry, "namespace": "ns", "workload": f"Deployment/w{i}", "container": "c", "source": "pod"}
            for i, entry in enumerate(entries)
        ],
    }


def snapshot_name(repositories: int, images: int) -> str:
    return f"snap-{repositories}x{images}.json"


def write_inputs(directory: Path, shapes: list[tuple[int, int]]) -> None:
    """rules.yaml, one snapshot per (repositories, images per repository), and manifests/prod.json (references
    into the largest one-repository snapshot). The same seeds always write the same files."""
    (directory / "rules.yaml").write_text(RULES)
    shared = {"repositoryName": "shared", "imageDetails": [], "manifests": {}}
    manifest_source: list[dict[str, Any]] = []
    for count, per_repository in shapes:
        if count == 1:
            repositories = [repository("app", per_repository, random.Random(42)), shared]
            if per_repository >= sum(len(r["imageDetails"]) for r in manifest_source):
                manifest_source = repositories
        else:
            rng = random.Random(7)
            repositories = [repository(f"team/app-{i}" if i else "shared", per_repository, rng) for i in range(count)]
        raw = {"registryId": "123456789012", "region": "eu-west-1", "repositories": repositories}
        (directory / snapshot_name(count, per_repository)).write_text(json.dumps(raw))
    (directory / "manifests").mkdir(exist_ok=True)
    manifest = in_use_manifest(manifest_source, REFERENCES, random.Random(7))
    (directory / "manifests" / "prod.json").write_text(json.dumps(manifest))


# The phases child: the CLI's main, timed from outside ------------------------------------------------------------

WATCHED = (
    ("ecr_retention.loading", "load_config"),
    ("ecr_retention.loading", "load_snapshot"),  # a tree from before the snapshot of several registries
    ("ecr_retention.loading", "load_snapshots"),
    ("ecr_retention.loading", "load_manifests"),
    ("ecr_retention.domain.planning", "plan_registry"),
)


def plan_arguments(directory: Path, snapshot: str, output: str) -> list[str]:
    argv = ["plan", "--config", str(directory / "rules.yaml"), "--snapshot", str(directory / snapshot)]
    argv += ["--manifests", str(directory / "manifests"), "--now", NOW.isoformat()]
    return argv + (["--format", "json"] if output == "json" else [])


def phases_child(args: argparse.Namespace) -> None:
    """In this fresh process: the CLI's imports, then `main(["plan", ...])` as the console script calls it."""
    import importlib
    import time

    import ecr_retention.cli as cli

    for name in getattr(cli, "COMMAND_MODULES", ()):  # what main's parser imports: measured as imports
        importlib.import_module(name)
    check_tree(args.tree)
    after_imports = resident_mib()
    phases = Phases()
    for module, name in WATCHED:
        phases.watch(module, name)
    collector = CollectorWatch()
    argv = plan_arguments(args.inputs, args.snapshot, args.output)
    with collector.watching():
        started = time.perf_counter()
        code = cli.main(argv)
        ended = time.perf_counter()
    sys.stdout.flush()
    peak = resident_mib("VmHWM")
    planned = phases.spans["plan_registry"]
    first = min((span for span in phases.spans.values() if span.calls), key=lambda span: span.started)
    begun = first.started
    write_result(
        args.result,
        {
            "exit": code,
            "removed": removed(planned.result),
            "main": ended - started,
            "load_plan": planned.ended - begun,
            "load_plan_cpu": planned.cpu_ended - first.cpu_started,
            "load": phases.seconds("load_snapshots") or phases.seconds("load_snapshot"),
            "plan": phases.seconds("plan_registry"),
            "output": ended - planned.ended,
            "gc_load_plan": collector.within(begun, planned.ended),
            "gc_output": collector.within(planned.ended, ended),
            "after_imports_mib": after_imports,
            "peak_mib": peak,
        },
    )


def removed(plan: Any) -> int | None:
    """The images the plan does not keep (a check that two trees planned alike), if the plan still reads so."""
    try:
        return sum(1 for repository in plan.repositories for decision in repository.images if decision.action != "keep")
    except AttributeError:
        return None


# The parent ------------------------------------------------------------------------------------------------------


def child_command(tree: Path, *options: str) -> list[str]:
    return [sys.executable, __file__, "--tree", str(tree), *options]


def measure_phases(tree: Path, inputs: Path, shapes: list[tuple[int, int]], rounds: int) -> dict[str, list[Any]]:
    """Every shape once per round, the rounds one after another, so that a busy moment weighs on all alike."""
    runs: dict[str, list[Any]] = {snapshot_name(*shape): [] for shape in shapes}
    environment = tree_environment(tree)
    for _ in range(rounds):
        for name in runs:
            options = ["--phases", name, "--inputs", str(inputs), "--output", "table"]
            runs[name].append(json_child(child_command(tree, *options), inputs / "phases.json", env=environment))
    return runs


def measure_cli(tree: Path, inputs: Path, snapshots: list[str], rounds: int) -> dict[tuple[str, str], list[ChildRun]]:
    runs: dict[tuple[str, str], list[ChildRun]] = {}
    environment = tree_environment(tree)
    for _ in range(rounds):
        for name in snapshots:
            for output in ("table", "json"):
                with open(inputs / f"{name}.{output}.out", "w") as stdout:
                    run = run_child(
                        [sys.executable, "-m", "ecr_retention", *plan_arguments(inputs, name, output)],
                        env=environment,
                        stdout=stdout,
                        cwd=inputs,
                    )
                if run.returncode not in (0, 1):
                    raise SystemExit(f"ecr-retention plan {name} --format {output}: exit code {run.returncode}")
                runs.setdefault((name, output), []).append(run)
    return runs


def cold_import(tree: Path, module: str, runs: int = 5) -> Spread:
    walls = [
        run_child([sys.executable, "-c", f"import {module}"], env=tree_environment(tree)).wall for _ in range(runs)
    ]
    return Spread.of(walls)


def shape_label(count: int, per_repository: int) -> str:
    if count == 1:
        return f"1 repository x {per_repository:,}"
    return f"{count:,} repositories x {per_repository:,}"


def report_phases(shapes: list[tuple[int, int]], runs: dict[str, list[Any]]) -> None:
    print("phases of `ecr-retention plan` (table output), each run a fresh process calling cli.main:")
    for count, per_repository in shapes:
        done = runs[snapshot_name(count, per_repository)]
        images = count * per_repository
        load_plan = Spread.of([run["load_plan"] for run in done])
        print(f"  {shape_label(count, per_repository)} ({images:,} images; the plan removes {done[0]['removed']})")
        cpu = Spread.of([run["load_plan_cpu"] for run in done])
        print(f"    load + plan    {load_plan.show(3, ' s')}  ({load_plan.median / images * 1e6:.1f} us per image)")
        print(f"      of CPU       {cpu.show(3, ' s')}")
        for phase in ("load", "plan", "output"):
            values = [run[phase] for run in done if run[phase] is not None]
            print(f"    {phase:<14} {Spread.of(values).show(3, ' s') if values else 'not timed (no such function)'}")
        collections = [run["gc_load_plan"] for run in done]
        print(
            f"    collector during load + plan: {Spread.of([c['seconds'] for c in collections]).show(3, ' s')}, "
            f"full collections {sorted(c['full'] for c in collections)}"
        )
        peak = Spread.of([run["peak_mib"] for run in done])
        after = Spread.of([run["after_imports_mib"] for run in done])
        per_image = Spread.of([(run["peak_mib"] - run["after_imports_mib"]) * 2**20 / images for run in done])
        print(
            f"    peak RSS {peak.show(0, ' MiB')}, after imports {after.median:.0f} MiB; "
            f"(peak - after imports) / images {per_image.show(0, ' B')}"
        )


def report_cli(runs: dict[tuple[str, str], list[ChildRun]], images: dict[str, int]) -> None:
    print("`python -m ecr_retention plan` end to end (interpreter start to exit), stdout to a file:")
    for (name, output), done in runs.items():
        wall = Spread.of([run.wall for run in done])
        peak = Spread.of([run.peak_rss_mib for run in done])
        label = f"{images[name]:,} images, --format {output}" if output == "json" else f"{images[name]:,} images, table"
        print(f"  {label:<30} wall {wall.show(2, ' s')}, peak RSS {peak.show(0, ' MiB')}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_tree_argument(parser)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--small", type=int, default=10_000, help="images of the small one-repository case")
    parser.add_argument("--large", type=int, default=100_000, help="images of the large one-repository case")
    parser.add_argument("--many", type=int, nargs=2, default=[10_000, 10], metavar=("REPOSITORIES", "IMAGES"))
    parser.add_argument("--spread", type=int, nargs=2, default=[1_000, 100], metavar=("REPOSITORIES", "IMAGES"))
    parser.add_argument("--write-inputs", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--phases", help=argparse.SUPPRESS)
    parser.add_argument("--inputs", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--output", choices=("table", "json"), default="table", help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    shapes = [(1, args.small), (1, args.large), tuple(args.spread), tuple(args.many)]
    if args.write_inputs is not None:
        write_inputs(args.write_inputs, shapes)
        return
    if args.phases is not None:
        args.snapshot = args.phases
        phases_child(args)
        return
    print(f"{sum(1 for line in RULES.splitlines() if '- keep' in line or '- delete' in line)} rules, "
          f"{REFERENCES:,} in-use references, medians of {args.rounds} fresh processes (min-max)")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="plan-bench-") as scratch:
        inputs = Path(scratch)
        done = run_child([sys.executable, __file__, "--write-inputs", scratch, *sys.argv[1:]])
        if done.returncode != 0:
            raise SystemExit("writing the inputs failed")
        phases = measure_phases(args.tree, inputs, shapes, args.rounds)
        one_repository = [snapshot_name(1, args.small), snapshot_name(1, args.large)]
        cli = measure_cli(args.tree, inputs, one_repository, args.rounds)
    report_phases(shapes, phases)
    report_cli(cli, {snapshot_name(1, args.small): args.small, snapshot_name(1, args.large): args.large})
    ratio = linearity(args.small, args.large, phases)
    print(f"load + plan per image, {args.large:,} / {args.small:,} images: {ratio.show(2)} (1.00 = linear)")
    cli_import = cold_import(args.tree, "ecr_retention.cli")
    print(f"cold import of ecr_retention.cli: {cli_import.show(3, ' s')}, interpreter start included")
    figures(args, phases, cli, cli_import)


def linearity(small: int, large: int, phases: dict[str, list[Any]]) -> Spread:
    """Load + plan per image, large over small: each round's own pair (the two ran one after the other)."""
    pairs = zip(phases[snapshot_name(1, small)], phases[snapshot_name(1, large)], strict=True)
    return Spread.of([(big["load_plan"] / large) / (little["load_plan"] / small) for little, big in pairs])


def figures(
    args: argparse.Namespace, phases: dict[str, list[Any]], cli: dict[tuple[str, str], list[ChildRun]], imports: Spread
) -> None:
    small, large = size_label(args.small), size_label(args.large)
    count, per_repository = args.many
    big = phases[snapshot_name(1, args.large)]
    figure(f"load_plan_{large}_s", Spread.of([run["load_plan"] for run in big]))
    figure(f"load_plan_ratio_{large}_{small}", linearity(args.small, args.large, phases))
    figure(f"plan_{count}x{per_repository}_s", Spread.of([run["plan"] for run in phases[snapshot_name(*args.many)]]))
    per_image = [(run["peak_mib"] - run["after_imports_mib"]) * 2**20 / args.large for run in big]
    figure(f"plan_bytes_per_image_{large}", Spread.of(per_image))
    for output in ("table", "json"):
        done = cli[snapshot_name(1, args.large), output]
        figure(f"cli_plan_{large}_{output}_s", Spread.of([run.wall for run in done]))
        figure(f"cli_plan_{large}_{output}_peak_mib", Spread.of([run.peak_rss_mib for run in done]))
    figure("cli_import_s", imports)


if __name__ == "__main__":
    main()
