"""Cold start of the functions: bundle the Lambda asset as synth does, then import each handler from it in fresh
interpreters of the runtime's Python, as the Lambda runtime would, with the asset's bytecode and without it.
Prints the asset's size and contents, whether its bytecode is what the runtime reads, the import times, each
handler's import over its floor, and where the time goes; asserts nothing about time.

    .venv/bin/python benchmarks/asset_bench.py [--runs 9] [--profiles 3] [--against CHECKOUT]

Each import runs in `python<runtime> -I -S -B` (the interpreter itself, not a wrapper such as pyenv's shim) with only
the variables Lambda sets and those the stack gives every function (tracing on, as in a function), the asset first on
sys.path and nothing written back (/var/task is read-only). The time is the `import` statement's, wall and CPU: the
interpreter's own start (printed apart) comes on top. Every handler is imported --runs times from each asset, the runs
interleaved (handler after handler, the two assets in alternating order) so that a busy moment of this shared machine
weighs on every figure alike; each figure is the median of its runs, with their spread (min-max). The last line is the
figure that docs/performance.md reports: `FIGURE cold_import_median_s <largest median> <its min> <its max> <runs>`, in
seconds.

An absolute time is this machine's; the goal is a ratio (issue 46): each handler's import over its FLOOR, what a
minimal handler on this stack cannot avoid, imported by the same interpreter from the same asset with its bytecode:
boto3 (with botocore's Config, as ecr_retention.aws.clients imports it), pydantic's BaseModel, PyYAML, and
Powertools' Logger, Metrics and Tracer, built as handlers/observability.py builds them. No client is created,
because no handler creates one at import (handlers/wiring.py does, at the first invocation); the floor creating
one S3 client too is printed beside it, for reference, and so is the floor imported with the cyclic collector off and
what it built frozen, as every handler imports (gc_guard.imports_without_cyclic_gc), with each handler's median import
over it in brackets: what the handler's own modules cost, without what the collector's absence saves the floor's part
of its import. In every round the floor is imported beside each handler,
in the same group of fresh processes (the order alternating from round to round), and each handler's ratio is the
median of its per-round ratios, with their spread. Beside the floor in each group, for reference and not the goal:
the floor defining one trivial model (the floor builds none, and a process's first model loads what pydantic imports
only then), and each handler's ratio over it in a table of its own: how much of a ratio is pydantic's first model.
The goal's figure: `FIGURE cold_import_over_floor <largest median ratio> <its min>
<its max> <runs>`. `--against CHECKOUT` bundles that checkout's ecr_retention into a copy of this asset (the same
wheels and rules file, compiled the same way) and imports its handlers in the same rounds: a before and after
measured side by side. Then `-X importtime` in --profiles more fresh processes per handler says where the time goes (summed
self times per top-level package; the option itself inflates them). Bundling fetches the pinned wheels (pip's cache
or the package index).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # infra/

from ecr_retention.cdk import constants, lambda_asset

HANDLERS = ("targets", "evaluate", "report", "push", "tagger", "collector", "sentinel")
# What the collector imports, besides its handler, when eksClusters lists a cluster (handlers.wiring.collector.eks_clusters):
# measured apart, as the cold start of a collector that reads clusters.
EKS_ADAPTER = "ecr_retention.aws.eks_clusters"
MEASURED = (
    *(f"ecr_retention.handlers.{handler}" for handler in HANDLERS),
    f"ecr_retention.handlers.collector, {EKS_ADAPTER}",
)
LAMBDA_ENVIRONMENT = {
    "AWS_REGION": "eu-west-1",
    "AWS_DEFAULT_REGION": "eu-west-1",
    "AWS_EXECUTION_ENV": f"AWS_Lambda_python{constants.LAMBDA_PYTHON_VERSION}",
    "AWS_LAMBDA_FUNCTION_NAME": "ecr-retention-bench",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
    "AWS_LAMBDA_LOG_FORMAT": "JSON",
    **constants.FUNCTION_ENVIRONMENT,  # as each function has it (the floor builds no model: it changes nothing there)
}
# The floor (see the docstring): the names and arguments handlers/observability.py gives its Logger, Tracer and
# Metrics; boto3 and botocore's Config as ecr_retention.aws.clients imports them.
FLOOR = """import boto3
from botocore.config import Config
from pydantic import BaseModel
import yaml
from aws_lambda_powertools import Logger, Metrics, Tracer
Logger(service="ecr-retention")
Tracer(service="ecr-retention", patch_modules=("botocore",))
Metrics(namespace="EcrRetention", service="ecr-retention")"""
# For reference only, not the floor: the same, creating one client as the example does (no handler does).
FLOOR_WITH_CLIENT = FLOOR + "\nboto3.client('s3', region_name='us-east-1')"
# For reference only, not the floor: the same with the cyclic collector off and what it built frozen, as each handler
# imports (gc_guard.imports_without_cyclic_gc), so that a handler's ratio can be read without what that alone gives.
FLOOR_COLLECTOR_OFF = "import gc\ngc.disable()\n" + FLOOR + "\ngc.freeze()\ngc.enable()"
# For reference only, not the floor: the same defining one trivial model. The floor imports BaseModel but builds none;
# the first model a process builds loads what pydantic imports only then (pydantic.fields and types, annotated_types,
# its plugin loader with importlib.metadata), which every handler pays: each handler's ratio over this one says how much
# of its ratio over the floor is that first model.
FLOOR_WITH_MODEL = FLOOR + "\nclass First(BaseModel):\n    name: str"
# What a floor is printed as.
FLOOR_LABELS = {
    FLOOR: "floor",
    FLOOR_WITH_CLIENT: "floor + an S3 client",
    FLOOR_COLLECTOR_OFF: "floor, collector off",
    FLOOR_WITH_MODEL: "floor + one model",
}
# The handler left out of the goal: a collector that reads eksClusters imports the kubernetes client, which the
# issue's floor does not hold (its ratio is printed all the same).
NOT_IN_THE_GOAL = f"ecr_retention.handlers.collector, {EKS_ADAPTER}"
# The import, timed; and every module the import loader compiled from its source because no usable bytecode was
# there (SourceFileLoader.source_to_code runs only then): with the asset's bytecode, none may be.
IMPORT = """
import importlib.machinery, json, sys, time
sys.path.insert(0, {asset!r})
compiled = []
loader = importlib.machinery.SourceFileLoader
source_to_code = loader.source_to_code
def compiling(self, data, path, *args, **kwargs):
    compiled.append(path)
    return source_to_code(self, data, path, *args, **kwargs)
loader.source_to_code = compiling
wall, cpu = time.perf_counter(), time.process_time()
{statements}
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
print(json.dumps([wall, cpu, len(compiled)]))
"""
PROFILE = "import sys; sys.path.insert(0, {asset!r})\n{statements}"
BYTECODE_CHECK = """
import importlib.util, json, pathlib, sys
pycs = sorted(pathlib.Path({asset!r}).rglob("*.pyc"))
heads = sorted({{path.read_bytes()[:8].hex() for path in pycs}})
unchecked_hash = (importlib.util.MAGIC_NUMBER + (1).to_bytes(4, "little")).hex()
print(json.dumps([len(pycs), heads, unchecked_hash, sys.implementation.cache_tag]))
"""


@dataclass(frozen=True)
class Runs:
    """The runs of one handler from one asset, in seconds."""

    walls: tuple[float, ...]
    cpus: tuple[float, ...]
    compiled: int  # the most modules compiled from source in one run

    @property
    def median(self) -> float:
        return statistics.median(self.walls)

    def line(self) -> str:
        wall = [value * 1000 for value in self.walls]
        cpu = statistics.median(self.cpus) * 1000
        return f"{statistics.median(wall):5.0f} ms ({min(wall):3.0f}-{max(wall):4.0f}), cpu {cpu:4.0f}"


def lambda_run(python: str, asset: Path, code: str, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python, "-I", "-S", "-B", *options, "-c", code],
        env=LAMBDA_ENVIRONMENT | {"LAMBDA_TASK_ROOT": str(asset)},
        cwd=asset,
        capture_output=True,
        text=True,
        check=True,
    )


def statements_of(measured: str) -> str:
    """What a fresh process runs for a handler (`import <modules>`) or a floor (its statements)."""
    return measured if measured in FLOOR_LABELS else f"import {measured}"


def cold_import(python: str, asset: Path, measured: str) -> tuple[float, float, int]:
    """The wall and the CPU time of a handler's `import <modules>` (or of a floor's statements), in seconds, and how
    many modules were compiled."""
    code = IMPORT.format(asset=str(asset), statements=statements_of(measured))
    wall, cpu, compiled = json.loads(lambda_run(python, asset, code).stdout)
    return wall, cpu, compiled


def interpreter_start(python: str, asset: Path) -> float:
    started = time.perf_counter()
    lambda_run(python, asset, "pass")
    return time.perf_counter() - started


@dataclass(frozen=True)
class Rounds:
    """Every measurement of the interleaved rounds: each handler (and floor) from each asset, in seconds; each
    handler's ratio to the floor imported beside it, per round and asset, of the wall times and of the CPU times (less
    sensitive to the other processes of a shared machine); the same over the floor + one model imported beside it
    (for reference); the interpreter's bare starts."""

    measured: dict[tuple[str, Path], Runs]
    ratios: dict[tuple[str, Path], tuple[float, ...]]
    cpu_ratios: dict[tuple[str, Path], tuple[float, ...]]
    model_ratios: dict[tuple[str, Path], tuple[float, ...]]
    model_cpu_ratios: dict[tuple[str, Path], tuple[float, ...]]
    starts: list[float]


def interleaved_cold_imports(python: str, assets: Sequence[Path], runs: int) -> Rounds:
    """Every handler from every asset, `runs` times, interleaved, the floor and the floor + one model beside each
    (from the first asset, the one with bytecode: every asset holds the same wheels); the floor creating a client once
    a round; and as many bare interpreter starts."""
    samples: dict[tuple[str, Path], list[tuple[float, float, int]]] = defaultdict(list)
    over: dict[str, dict[tuple[str, Path], list[float]]] = {
        name: defaultdict(list) for name in ("ratios", "cpu_ratios", "model_ratios", "model_cpu_ratios")
    }
    starts = []
    for round_number in range(runs):
        starts.append(interpreter_start(python, assets[0]))
        samples[FLOOR_WITH_CLIENT, assets[0]].append(cold_import(python, assets[0], FLOOR_WITH_CLIENT))
        samples[FLOOR_COLLECTOR_OFF, assets[0]].append(cold_import(python, assets[0], FLOOR_COLLECTOR_OFF))
        for modules in MEASURED:
            group = [(FLOOR, assets[0]), (FLOOR_WITH_MODEL, assets[0]), *((modules, asset) for asset in assets)]
            walls, cpus = {}, {}
            for measured_name, asset in group if round_number % 2 == 0 else reversed(group):
                samples[measured_name, asset].append(cold_import(python, asset, measured_name))
                walls[measured_name, asset], cpus[measured_name, asset], _ = samples[measured_name, asset][-1]
            for asset in assets:
                over["ratios"][modules, asset].append(walls[modules, asset] / walls[FLOOR, assets[0]])
                over["cpu_ratios"][modules, asset].append(cpus[modules, asset] / cpus[FLOOR, assets[0]])
                over["model_ratios"][modules, asset].append(walls[modules, asset] / walls[FLOOR_WITH_MODEL, assets[0]])
                over["model_cpu_ratios"][modules, asset].append(
                    cpus[modules, asset] / cpus[FLOOR_WITH_MODEL, assets[0]]
                )
    measured = {
        key: Runs(tuple(s[0] for s in runs_), tuple(s[1] for s in runs_), max(s[2] for s in runs_))
        for key, runs_ in samples.items()
    }
    tuples = {name: {key: tuple(values) for key, values in by_key.items()} for name, by_key in over.items()}
    return Rounds(measured, **tuples, starts=starts)


def self_times_by_package(python: str, asset: Path, measured: str, profiles: int) -> dict[str, float]:
    """`-X importtime`'s self time of each top-level package, the median over `profiles` fresh processes, in
    milliseconds."""
    totals: dict[str, list[float]] = defaultdict(list)
    for _ in range(profiles):
        code = PROFILE.format(asset=str(asset), statements=statements_of(measured))
        done = lambda_run(python, asset, code, "-X", "importtime")
        summed: dict[str, float] = defaultdict(float)
        for line in done.stderr.splitlines():
            fields = line.removeprefix("import time:").split("|")
            if len(fields) == 3 and fields[0].strip().isdigit():
                summed[fields[2].strip().split(".")[0]] += int(fields[0]) / 1000
        for package, milliseconds in summed.items():
            totals[package].append(milliseconds)
    return {package: statistics.median(values + [0.0] * (profiles - len(values))) for package, values in totals.items()}


def bytecode_check(python: str, asset: Path) -> str:
    """Whether every .pyc of the asset is what this interpreter reads without looking at the source: its magic
    number and the unchecked-hash flag (PEP 552)."""
    count, heads, expected, tag = json.loads(lambda_run(python, asset, BYTECODE_CHECK.format(asset=str(asset))).stdout)
    verdict = "all of them" if heads == [expected] else f"NOT all: headers {heads}, expected {expected}"
    return f"{count} .pyc files ({tag}); unchecked-hash with this interpreter's magic number: {verdict}"


def mebibytes(directory: Path) -> float:
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file()) / 2**20


def zipped_mebibytes(directory: Path, archive: Path) -> float:
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        for path in sorted(directory.rglob("*")):
            zipped.write(path, path.relative_to(directory))
    return archive.stat().st_size / 2**20


def label_of(measured: str) -> str:
    if measured in FLOOR_LABELS:
        return FLOOR_LABELS[measured]
    return measured.removeprefix("ecr_retention.handlers.").replace(f", {EKS_ADAPTER}", " + eksClusters")


def load() -> str:
    return ", ".join(f"{value:.1f}" for value in os.getloadavg())


def bundle(work: Path, python: str) -> tuple[Path, Path]:
    """The asset as synth bundles it, and a copy without its bytecode."""
    compiled, sources = work / "bytecode", work / "sources"
    compiled.mkdir()
    version = constants.LAMBDA_PYTHON_VERSION
    bundler = lambda_asset.PipBundler(
        Path(constants.DEFAULT_RULES_FILE).read_bytes(), constants.LAMBDA_ARCHITECTURE, version, python
    )
    bundler.try_bundle(str(compiled))
    shutil.copytree(compiled, sources, ignore=shutil.ignore_patterns("__pycache__"))
    return compiled, sources


def bundle_against(work: Path, compiled: Path, checkout: Path, python: str) -> Path:
    """A copy of the asset whose ecr_retention is the checkout's (what its handlers import), compiled as synth
    compiles it: the same wheels and rules file, so that only the package differs."""
    against = work / "against"
    shutil.copytree(
        compiled, against, ignore=lambda directory, _: ["ecr_retention"] if directory == str(compiled) else []
    )
    lambda_asset.copy_package(against, root=checkout.resolve() / "lambdas" / lambda_asset.PACKAGE_NAME)
    lambda_asset.compile_bytecode(python, against)
    return against


def print_asset(work: Path, compiled: Path, sources: Path, python: str) -> None:
    package = sorted(path.name for path in (compiled / "ecr_retention").iterdir() if path.name != "__pycache__")
    print(
        f"asset for python {constants.LAMBDA_PYTHON_VERSION} ({constants.LAMBDA_ARCHITECTURE}), "
        f"ecr_retention/: {', '.join(package)}"
    )
    for label, directory in (("with bytecode", compiled), ("sources only", sources)):
        size, zipped = mebibytes(directory), zipped_mebibytes(directory, work / f"{directory.name}.zip")
        print(f"  {label:<14} {size:5.1f} MiB unzipped, {zipped:5.1f} MiB zipped")
    print(f"  bytecode: {bytecode_check(python, compiled)}")


def print_cold_imports(measured: dict[tuple[str, Path], Runs], compiled: Path, sources: Path) -> None:
    print(f"  {'handler':<24} {'with bytecode: median (min-max), cpu':<40} {'sources only':<40} compiled")
    for modules in MEASURED:
        fast, slow = measured[modules, compiled], measured[modules, sources]
        print(f"  {label_of(modules):<24} {fast.line():<40} {slow.line():<40} {fast.compiled} / {slow.compiled}")
    print("  (compiled: the most modules one import compiled from source, with bytecode / sources only)")


def ratio_line(rounds: Rounds, modules: str, asset: Path) -> str:
    """A handler's median wall-time ratio (min-max), its median CPU-time ratio, its median import, and that over the
    median of the floor imported with the collector off."""
    walls, cpus = rounds.ratios[modules, asset], rounds.cpu_ratios[modules, asset]
    shown = (
        f"{statistics.median(walls):4.2f}x ({min(walls):4.2f}-{max(walls):4.2f}), cpu {statistics.median(cpus):4.2f}x"
    )
    median = rounds.measured[modules, asset].median
    collector_off = next(runs.median for (name, _), runs in rounds.measured.items() if name == FLOOR_COLLECTOR_OFF)
    return f"{shown} {median * 1000:4.0f} ms [{median / collector_off:4.2f}x]"


def model_ratio_line(rounds: Rounds, modules: str, asset: Path) -> str:
    """A handler's median wall-time ratio over the floor + one model imported beside it (min-max), and of the CPU
    times."""
    walls, cpus = rounds.model_ratios[modules, asset], rounds.model_cpu_ratios[modules, asset]
    return (
        f"{statistics.median(walls):4.2f}x ({min(walls):4.2f}-{max(walls):4.2f}), cpu {statistics.median(cpus):4.2f}x"
    )


def print_ratios(rounds: Rounds, compiled: Path, against: tuple[Path, str] | None) -> tuple[float, float, float]:
    """Each handler's import over the floor imported beside it, with bytecode (and the other checkout's, beside);
    returns the goal's figure: the largest median ratio of the wall times, with its spread."""
    floor, with_client = rounds.measured[FLOOR, compiled], rounds.measured[FLOOR_WITH_CLIENT, compiled]
    print(
        "each handler's cold import over its floor (boto3 with botocore's Config, pydantic's BaseModel, PyYAML, "
        "Powertools' Logger, Metrics and Tracer as handlers/observability.py builds them; no client, as no handler "
        "creates one at import), with bytecode, the floor imported beside each handler in every round; the median of "
        "the per-round ratios of the wall times (min-max), of the CPU times, and the handler's median import:"
    )
    print(f"  {'floor':<24} {floor.line()}")
    print(
        f"  {'floor + an S3 client':<24} {with_client.line()}  (for reference: no handler creates a client at import)"
    )
    collector_off = rounds.measured[FLOOR_COLLECTOR_OFF, compiled]
    print(
        f"  {'floor, collector off':<24} {collector_off.line()}  (for reference: the floor imported as the handlers "
        "import, the cyclic collector off; each handler's median import over its median below, in brackets)"
    )
    with_model = rounds.measured[FLOOR_WITH_MODEL, compiled]
    print(
        f"  {'floor + one model':<24} {with_model.line()}  (for reference: the floor defining one trivial BaseModel, "
        "imported beside each handler in every round; each handler's ratio over it in the second table)"
    )
    print(f"  {'handler':<24} {'this checkout':<40}" + (f" {against[1]}" if against else ""))
    for modules in MEASURED:
        line = f"  {label_of(modules):<24} {ratio_line(rounds, modules, compiled):<40}"
        print(line + (f" {ratio_line(rounds, modules, against[0])}" if against else ""))
    print(f"  ({label_of(NOT_IN_THE_GOAL)}: not in the goal, its kubernetes client is no part of the floor)")
    print(
        "for reference, not the goal: each handler's import over the floor + one model imported beside it (what is "
        "left once pydantic's own imports at a process's first model are counted in the floor); median of the "
        "per-round ratios of the wall times (min-max), of the CPU times:"
    )
    print(f"  {'handler':<24} {'this checkout':<40}" + (f" {against[1]}" if against else ""))
    for modules in MEASURED:
        line = f"  {label_of(modules):<24} {model_ratio_line(rounds, modules, compiled):<40}"
        print(line + (f" {model_ratio_line(rounds, modules, against[0])}" if against else ""))
    goal = [rounds.ratios[modules, compiled] for modules in MEASURED if modules != NOT_IN_THE_GOAL]
    largest = max(goal, key=statistics.median)
    return statistics.median(largest), min(largest), max(largest)


def print_profiles(python: str, asset: Path, profiles: int) -> None:
    print(f"where the time goes: `-X importtime` self time by top-level package, ms, median of {profiles} (inflated):")
    for measured in (FLOOR, *MEASURED):
        times = self_times_by_package(python, asset, measured, profiles)
        heaviest = sorted(times.items(), key=lambda item: -item[1])[:9]
        shown = ", ".join(f"{package} {milliseconds:.0f}" for package, milliseconds in heaviest)
        print(f"  {label_of(measured):<24} total {sum(times.values()):4.0f}: {shown}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="fresh imports of each handler from each asset")
    parser.add_argument("--profiles", type=int, default=3, help="-X importtime runs of each handler (0: none)")
    parser.add_argument(
        "--against", type=Path, metavar="CHECKOUT", help="also import the handlers of this checkout's ecr_retention"
    )
    arguments = parser.parse_args()
    version = constants.LAMBDA_PYTHON_VERSION
    python = lambda_asset.runtime_python(version)
    if python is None:
        print(f"no python{version} on this machine: the asset cannot be compiled or imported here")
        return
    with tempfile.TemporaryDirectory(prefix="asset-bench-") as scratch:
        work = Path(scratch)
        compiled, sources = bundle(work, python)
        print_asset(work, compiled, sources, python)
        against = None if arguments.against is None else bundle_against(work, compiled, arguments.against, python)
        before = load()
        rounds = interleaved_cold_imports(python, [compiled, sources, *([against] if against else [])], arguments.runs)
        measured, starts = rounds.measured, rounds.starts
        after = load()
        print(
            f"cold import of each handler from the asset, {python} ({python_version(python)}), "
            f"{arguments.runs} fresh processes each, interleaved; load average {before} before, {after} after "
            "(a shared machine: read the spread before the median):"
        )
        print_cold_imports(measured, compiled, sources)
        start = [value * 1000 for value in starts]
        print(
            f"  the interpreter's own start, on top: {statistics.median(start):.0f} ms ({min(start):.0f}-{max(start):.0f})"
        )
        over_floor = print_ratios(rounds, compiled, None if against is None else (against, str(arguments.against)))
        if arguments.profiles > 0:
            print_profiles(python, compiled, arguments.profiles)
        slowest = max((measured[modules, compiled] for modules in MEASURED), key=lambda runs: runs.median)
        print(
            f"FIGURE cold_import_median_s {slowest.median:.3f} {min(slowest.walls):.3f} {max(slowest.walls):.3f} "
            f"{arguments.runs}"
        )
        print("FIGURE cold_import_over_floor {:.2f} {:.2f} {:.2f} {}".format(*over_floor, arguments.runs))


def python_version(python: str) -> str:
    done = subprocess.run([python, "-c", "import platform; print(platform.python_version())"], capture_output=True)
    return done.stdout.decode().strip()


if __name__ == "__main__":
    main()
