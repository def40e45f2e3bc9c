"""What every benchmark shares: the tree whose code is measured, fresh child processes (wall, CPU, peak RSS), medians
with their spread, the phases of a command timed from outside its functions, and the `FIGURE <id> <value>` lines
that write_performance.py turns into the table of goals.

Stdlib only, and nothing of ecr_retention at import: a child imports this before the code it measures, so the
RSS it reads after its imports is the product's.
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"


# The tree whose code is measured ---------------------------------------------------------------------------------


def add_tree_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tree",
        type=lambda text: Path(text).resolve(),
        default=ROOT,
        help="a checkout whose lambdas/ (and tests/support) are measured instead of this one's (default: this one)",
    )


def tree_environment(tree: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment with the tree's code first on the path: its lambdas/ (ecr_retention, and the
    development package) and its tests/ (the fakes of tests/support), ahead of whatever the venv installed."""
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join([str(tree / "lambdas"), str(tree / "tests")])
    environment.pop("PYTHONSTARTUP", None)
    environment.update(extra or {})
    return environment


def check_tree(tree: Path) -> None:
    """Fail loudly when the ecr_retention imported is not the tree's: a figure of the wrong code is worse than none."""
    import ecr_retention

    where = Path(ecr_retention.__file__).resolve()
    if not where.is_relative_to(tree / "lambdas"):
        raise SystemExit(f"measuring {tree}, but ecr_retention was imported from {where}")


def in_tree(tree: Path) -> None:
    """Re-run this script with the tree's code on the path unless it already is (for benchmarks that measure
    in their own process)."""
    wanted = tree_environment(tree)["PYTHONPATH"]
    if os.environ.get("PYTHONPATH") != wanted:
        os.execve(sys.executable, [sys.executable, *sys.argv], tree_environment(tree))


def revision(tree: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(tree), "describe", "--always", "--dirty"], capture_output=True, text=True, check=False
    )
    return done.stdout.strip() or "not a git checkout"


# Fresh processes -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChildRun:
    """One child process: its wall time from the spawn to its exit, its CPU time (user + system) and its peak
    resident set (the kernel's maxrss of that child alone, from wait4)."""

    wall: float
    cpu: float
    peak_rss_mib: float
    returncode: int


def run_child(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    stdout: IO[Any] | int | None = None,
    cwd: Path | None = None,
) -> ChildRun:
    """Run a process to its end. The peak is the child's own: wait4 reports the rusage of that one process (the
    parent's RSS could only show through if it were the larger, and this parent stays small)."""
    started = time.perf_counter()
    process = subprocess.Popen(list(argv), env=env, stdout=stdout, cwd=cwd)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    return ChildRun(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, process.returncode)


def json_child(argv: Sequence[str], result: Path, *, env: Mapping[str, str], stdout: Path | None = None) -> Any:
    """Run a child that writes its figures as JSON to `result`; its own output goes to `stdout` (a file, as a
    user's redirection would) or is discarded with the scratch directory."""
    result.unlink(missing_ok=True)
    with open(stdout or result.with_suffix(".out"), "w") as output:
        done = subprocess.run([*argv, "--result", str(result)], env=env, stdout=output, check=False)
    if done.returncode not in (0, 1) or not result.exists():  # 1: a plan with problems is still a plan
        raise SystemExit(f"{' '.join(argv)} failed with exit code {done.returncode}")
    return json.loads(result.read_text())


def write_result(path: Path, figures: Mapping[str, Any]) -> None:
    path.write_text(json.dumps(figures))


def resident_mib(field_name: str = "VmRSS") -> float:
    """This process's resident set now (VmRSS) or at its peak (VmHWM, which a new program starts afresh)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field_name}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field_name} in /proc/self/status")


# Medians and spreads ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Spread:
    median: float
    low: float
    high: float
    count: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        return cls(statistics.median(values), min(values), max(values), len(values))

    def show(self, digits: int = 3, unit: str = "") -> str:
        return f"{self.median:.{digits}f}{unit} ({self.low:.{digits}f}-{self.high:.{digits}f}, median of {self.count})"


def figure(identifier: str, value: float | Spread) -> None:
    """One line for the table of goals: `FIGURE <id> <median> [<min> <max> <runs>]`."""
    if isinstance(value, Spread):
        print(f"FIGURE {identifier} {value.median!r} {value.low!r} {value.high!r} {value.count}")
    else:
        print(f"FIGURE {identifier} {value!r}")


def size_label(images: int) -> str:
    """100000 -> 100k, for figure ids and headings."""
    return f"{images // 1000}k" if images % 1000 == 0 and images >= 1000 else str(images)


# Phases of a command, timed from outside its functions -----------------------------------------------------------


@dataclass
class Span:
    started: float = 0.0
    ended: float = 0.0
    cpu_started: float = 0.0  # time.process_time(): every thread's CPU, less noisy than wall time on a busy machine
    cpu_ended: float = 0.0
    calls: int = 0
    result: Any = None  # what the last call returned (kept only until the measuring process reads it)
    _depth: int = 0

    @property
    def seconds(self) -> float:
        return self.ended - self.started


@dataclass
class Phases:
    """Wraps named functions of ecr_retention wherever a module holds them (so a `from x import f` sees the
    wrapper too), and records when the first call began and the last ended. The command runs as it always does:
    whatever it does around these functions (the collector's guard, say) is measured with them."""

    spans: dict[str, Span] = field(default_factory=dict)

    def watch(self, module: str, name: str) -> bool:
        original = getattr(importlib.import_module(module), name, None)
        if original is None:
            return False
        span = self.spans.setdefault(name, Span())

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            span._depth += 1
            if span._depth == 1:
                span.calls += 1
                if not span.started:
                    span.started, span.cpu_started = time.perf_counter(), time.process_time()
            try:
                span.result = original(*args, **kwargs)
                return span.result
            finally:
                span._depth -= 1
                if span._depth == 0:
                    span.ended, span.cpu_ended = time.perf_counter(), time.process_time()

        for loaded in list(sys.modules.values()):
            if getattr(loaded, "__name__", "").startswith("ecr_retention") and getattr(loaded, name, None) is original:
                setattr(loaded, name, timed)
        return True

    def seconds(self, name: str) -> float | None:
        span = self.spans.get(name)
        return span.seconds if span is not None and span.calls else None


@dataclass
class CollectorWatch:
    """The cyclic garbage collector's work while watched (gc.callbacks): each collection's start, time and
    generation. Observing adds a callback per collection and changes nothing else."""

    collections: list[tuple[float, float, int]] = field(default_factory=list)
    _started: float = 0.0

    def _callback(self, phase: str, info: Mapping[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.collections.append((self._started, time.perf_counter() - self._started, info["generation"]))

    @contextmanager
    def watching(self) -> Iterator[CollectorWatch]:
        gc.callbacks.append(self._callback)
        try:
            yield self
        finally:
            gc.callbacks.remove(self._callback)

    def within(self, start: float, end: float) -> dict[str, float]:
        """The collections that began between start and end: their seconds, and how many were full ones."""
        chosen = [(seconds, generation) for began, seconds, generation in self.collections if start <= began < end]
        return {
            "seconds": sum(seconds for seconds, _ in chosen),
            "full": sum(1 for _, generation in chosen if generation == 2),
            "all": len(chosen),
        }
