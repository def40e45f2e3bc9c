"""Report step benchmark: the peak memory (maximum resident set) and the time of the report Lambda's work for a run
over 30,000 and 100,000 images: read the workers' repository reports, build the run report, write its JSON, page and
sheet. Each size runs in a fresh process, so its peak is its own; the figures size the report function
(infra/constants.py FUNCTION_SIZES). Measures only; asserts nothing.

    make bench        (or: .venv/bin/python benchmarks/report_step.py [--images 30000 100000])
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the report builders live in tests/support


def write_repository_reports(count: int, directory: Path) -> None:
    """The repository reports a dry run's workers would store for `count` images, one file each."""
    from support.reports import dry_run_report

    for number, repository in enumerate(dry_run_report(count).repositories):
        (directory / f"{number}.json").write_text(repository.model_dump_json(by_alias=True))


def peak_rss_mib() -> float:
    """This process's peak resident set: VmHWM, which a new program starts afresh (getrusage's maxrss survives
    execve, so a child would report its parent's peak at the fork)."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux, bytes on macOS: a fallback


def report_step(directory: Path) -> None:
    """In this process: what the report Lambda does with the stored repository reports, then the figures."""
    from ecr_retention.domain.cost import StoragePrice
    from ecr_retention.services.report import load_repository_reports, report_run, repository_report_key
    from support.builders import NOW
    from support.fakes import MemoryBucket
    from support.reports import RUN_ID

    bucket = MemoryBucket()
    for path in sorted(directory.glob("*.json")):
        bucket.objects[repository_report_key(RUN_ID, path.stem)] = path.read_bytes()
    stored = sum(len(body) for body in bucket.objects.values())
    baseline = peak_rss_mib()
    started = time.perf_counter()
    repositories = load_repository_reports(bucket, RUN_ID)
    report = report_run(
        run_id=RUN_ID,
        trigger="schedule",
        dry_run=True,
        started_at=NOW,
        finished_at=NOW,
        repositories=repositories,
        bucket=bucket,
        notifier=None,
        price=StoragePrice.for_region("eu-west-1"),
        region="eu-west-1",
    )
    seconds = time.perf_counter() - started
    peak = peak_rss_mib()
    written = {key.rsplit(".", 1)[-1]: len(body) for key, body in bucket.objects.items() if key.startswith("reports/")}
    print(
        f"{report.totals.images:>7,} images: report step {seconds:5.1f} s, peak RSS {peak:5.0f} MiB "
        f"(of which {baseline:.0f} MiB before it started: imports and the {stored / 2**20:.0f} MiB of "
        f"stored repository reports); JSON {written['json'] / 2**20:.1f} MiB, page {written['html'] / 2**20:.1f} MiB, "
        f"sheet {written['csv'] / 2**20:.1f} MiB"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--images", type=int, nargs="+", default=[30_000, 100_000])
    parser.add_argument("--step", type=Path, help=argparse.SUPPRESS)  # the child process: run the step on this dir
    args = parser.parse_args()
    if args.step is not None:
        report_step(args.step)
        return
    for count in args.images:
        with tempfile.TemporaryDirectory(prefix="ecr-retention-bench-") as directory:
            write_repository_reports(count, Path(directory))
            subprocess.run([sys.executable, __file__, "--step", directory], check=True)


if __name__ == "__main__":
    main()
