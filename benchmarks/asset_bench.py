"""Cold start of the functions: bundle the Lambda asset as synth does, then import each handler from it in a fresh
interpreter of the runtime's Python, as the Lambda runtime would, with the asset's bytecode and without it.
Prints the asset's size and contents and the import times; asserts nothing about time.

    .venv/bin/python benchmarks/asset_bench.py [--runs 9]

Each import runs in `python<runtime> -I -S -B` with only the variables Lambda sets (tracing on, as in a
function), the asset first on sys.path and nothing written back (/var/task is read-only). The time is the
`import` statement's, wall and CPU, best of the runs (interleaved): the interpreter's own start (about 15 ms)
comes on top. Bundling fetches the pinned wheels (pip's cache or the package index).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # infra/

from infra import constants, lambda_asset

HANDLERS = ("targets", "evaluate", "report", "push", "tagger", "collector")
# What the collector imports, besides its handler, when eksClusters lists a cluster (handlers.wiring.eks_clusters):
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
}
IMPORT = """
import json, sys, time
sys.path.insert(0, {asset!r})
wall, cpu = time.perf_counter(), time.process_time()
import {modules}
print(json.dumps([time.perf_counter() - wall, time.process_time() - cpu]))
"""


def cold_import(python: str, asset: Path, modules: str) -> tuple[float, float]:
    """The wall and the CPU time of `import <modules>`, in seconds."""
    done = subprocess.run(
        [python, "-I", "-S", "-B", "-c", IMPORT.format(asset=str(asset), modules=modules)],
        env=LAMBDA_ENVIRONMENT | {"LAMBDA_TASK_ROOT": str(asset)},
        cwd=asset,
        capture_output=True,
        text=True,
        check=True,
    )
    wall, cpu = json.loads(done.stdout)
    return wall, cpu


def best_cold_imports(python: str, assets: list[Path], runs: int) -> dict[tuple[str, Path], tuple[float, float]]:
    """The best wall and the best CPU time of each handler from each asset, the runs interleaved so that a busy
    moment of the machine weighs on every figure alike."""
    best: dict[tuple[str, Path], tuple[float, float]] = {}
    for _ in range(runs):
        for modules in MEASURED:
            for asset in assets:
                wall, cpu = cold_import(python, asset, modules)
                previous = best.get((modules, asset), (wall, cpu))
                best[modules, asset] = (min(wall, previous[0]), min(cpu, previous[1]))
    return best


def mebibytes(directory: Path) -> float:
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file()) / 2**20


def zipped_mebibytes(directory: Path, archive: Path) -> float:
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        for path in sorted(directory.rglob("*")):
            zipped.write(path, path.relative_to(directory))
    return archive.stat().st_size / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    runs = parser.parse_args().runs
    version = constants.LAMBDA_PYTHON_VERSION
    python = lambda_asset.runtime_python(version)
    if python is None:
        print(f"no python{version} on this machine: the asset cannot be compiled or imported here")
        return
    with tempfile.TemporaryDirectory(prefix="asset-bench-") as work:
        compiled, sources = Path(work) / "bytecode", Path(work) / "sources"
        compiled.mkdir()
        bundler = lambda_asset.PipBundler(
            Path(constants.DEFAULT_RULES_FILE), constants.LAMBDA_ARCHITECTURE, version, python
        )
        bundler.try_bundle(str(compiled))
        shutil.copytree(compiled, sources, ignore=shutil.ignore_patterns("__pycache__"))
        package = sorted(path.name for path in (compiled / "ecr_retention").iterdir() if path.name != "__pycache__")
        print(f"asset for python {version} ({constants.LAMBDA_ARCHITECTURE}), ecr_retention/: {', '.join(package)}")
        for label, directory in (("with bytecode", compiled), ("sources only", sources)):
            size, zipped = mebibytes(directory), zipped_mebibytes(directory, Path(work) / f"{directory.name}.zip")
            print(f"  {label:<14} {size:5.1f} MiB unzipped, {zipped:5.1f} MiB zipped")
        print(
            f"cold import of each handler from the asset, {Path(python).name} {python_version(python)}, best of {runs}:"
        )
        print(f"  {'handler':<34} {'with bytecode':>22} {'sources only':>22}")
        best = best_cold_imports(python, [compiled, sources], runs)
        for modules in MEASURED:
            fast, slow = best[modules, compiled], best[modules, sources]
            label = modules.replace(f", {EKS_ADAPTER}", " + eksClusters")
            print(
                f"  {label:<34} "
                f"{fast[0] * 1000:5.0f} ms (cpu {fast[1] * 1000:4.0f} ms) {slow[0] * 1000:5.0f} ms (cpu {slow[1] * 1000:4.0f} ms)"
            )


def python_version(python: str) -> str:
    done = subprocess.run([python, "-c", "import platform; print(platform.python_version())"], capture_output=True)
    return done.stdout.decode().strip()


if __name__ == "__main__":
    main()
