"""Report step benchmark: the time and the peak memory (maximum resident set) of the report Lambda's invocation for a
dry run over 30,000 and 100,000 images: read the workers' repository reports, build the run report, write its
JSON, page and sheet. The figures size the report function (infra/constants.py FUNCTION_SIZES). Measures only;
asserts nothing.

    make bench        (or: python benchmarks/report_step.py [--tree CHECKOUT] [--images 30000 100000] [--rounds 3])

The inputs are written once by a child running this checkout's code (tests/support's dry_run_report, stored by
RunFiles.store_report as the workers store them, with the targets step's work items and record), as files of a
bucket on disk. Each measurement is a fresh process shaped like the function: it imports the report handler (the
cold start), builds its wiring over that bucket (a file per object: a read returns one object's bytes, a write
leaves the process, as with S3), then invokes `lambda_handler(record, context)` once; its time is the
invocation's, its peak the process's VmHWM (what Lambda reports as Max Memory Used), beside the RSS before the
invocation. Tracing is off (no X-Ray daemon here). The sizes alternate within each round; medians of the rounds.

The bucket each step reads and writes is a copy in memory (a tmpfs, /dev/shm, where the machine has one): S3 has no
local disk behind a write, and a disk's journal and writeback made the same 130 MB of writes take 0.03 to 0.3 s
from one round to the next. A write still copies its bytes out of the process.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from measuring import (
    ROOT,
    CollectorWatch,
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

from ecr_retention.report_renderers import RENDERERS

RUN_ID = "20261130T060000Z-schedule-0b5e55ed"
# Where each step's copy of the bucket goes: memory, where the machine has a tmpfs for it (see the docstring).
IN_MEMORY = Path("/dev/shm")
STARTED = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
BUCKET = "inventory"
# support.reports.ci_config(): the rules of the dry run whose report is rendered
RULES = """
version: 1
safety: {clusters: [], max_delete_fraction: 1.0, min_age: 1d}
policies:
  - repositories: ["*"]
    rules:
      - keep: {tags: [latest, dev]}
      - delete: {tags: ["pr-*"], not_pulled_within: 14d, archive: true}
      - delete: {tags: ["*.*"], older_than: 30d, keep_newest: 10}
      - delete: {untagged: true, older_than: 1d}
"""
FUNCTION_ENVIRONMENT = {
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_NAMESPACE": "EcrRetention",
    "POWERTOOLS_SERVICE_NAME": "ecr-retention",
    "AWS_REGION": "eu-west-1",
    "AWS_DEFAULT_REGION": "eu-west-1",
}


class LambdaContext:
    """What the Lambda runtime passes the handler (Powertools' logger reads these)."""

    function_name = "ecr-retention-report"
    function_version = "$LATEST"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:ecr-retention-report"
    aws_request_id = "6f1c3a52-0000-4000-8000-000000000000"

    def get_remaining_time_in_millis(self) -> int:
        return 900_000


class FileBucket:
    """The inventory bucket as files under a directory (the Bucket port): each object read when asked for, each
    write gone to disk, so the process holds what the function would."""

    def __init__(self, directory: Path, name: str = BUCKET) -> None:
        self.directory = directory
        self.name = name

    def list_objects(self, prefix: str) -> dict[str, int]:
        found = {}
        for path in sorted(self.directory.rglob("*")):
            key = path.relative_to(self.directory).as_posix()
            if path.is_file() and key.startswith(prefix):
                found[key] = path.stat().st_size
        return found

    def read(self, key: str, *, max_bytes: int) -> bytes | None:
        from ecr_retention.domain.errors import InputError

        path = self.directory / key
        if not path.is_file():
            return None
        if path.stat().st_size > max_bytes:
            raise InputError(f"s3://{self.name}/{key}: larger than the {max_bytes} byte limit")
        return path.read_bytes()

    def delete_marker(self, key: str) -> None:
        """Files keep no versions: a missing key was never written (the first run's empty memory)."""

    def write(self, key: str, body: bytes, *, content_type: str = "application/json") -> None:
        path = self.directory / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)


def write_inputs(count: int, directory: Path) -> None:
    """In a child: the bucket after a dry run's workers over `count` images, and the report step's input."""
    from ecr_retention.layout import targets_key
    from ecr_retention.run_files import RunFiles
    from ecr_retention.run_records import RunRecord
    from ecr_retention.workflow import WorkItem
    from support.reports import dry_run_report

    bucket = FileBucket(directory / "bucket")
    report = dry_run_report(count)
    names = []
    for repository in report.repositories:
        RunFiles(bucket, RUN_ID).store_report(repository)
        names.append(repository.repository_name)
    items = [WorkItem(run_id=RUN_ID, repository=name, trigger="schedule", dry_run=True).to_wire() for name in names]
    bucket.write(targets_key(RUN_ID), json.dumps(items).encode())
    record = RunRecord(
        run_id=RUN_ID,
        trigger="schedule",
        dry_run=True,
        started_at=STARTED,
        targets_key=targets_key(RUN_ID),
        count=len(names),
        bucket=BUCKET,
    )
    (directory / "event.json").write_text(json.dumps(record.to_wire()))
    (directory / "rules.yaml").write_text(RULES)


def report_step(args: argparse.Namespace) -> None:
    """In this fresh process: the report function's cold start, then one invocation."""
    import shutil

    from ecr_retention.domain.config import parse_config
    from ecr_retention.handlers import report
    from ecr_retention.handlers.wiring import RunWiring

    try:
        from ecr_retention.run_adapters import Adapters
    except ModuleNotFoundError:  # a checkout from before the workflow's steps had a service each (--tree)
        from ecr_retention.services.run import Adapters  # type: ignore[attr-defined,no-redef]
    from support.fakes import FakeRegistry, RecordingNotifier

    check_tree(args.tree)
    inputs: Path = args.step
    work = Path(tempfile.mkdtemp(prefix="report-step-", dir=IN_MEMORY if IN_MEMORY.is_dir() else None))
    try:
        shutil.copytree(inputs / "bucket", work / "bucket")
        bucket = FileBucket(work / "bucket")
        config = parse_config((inputs / "rules.yaml").read_text(), "report rules")
        adapters = Adapters(
            registry=FakeRegistry(),
            bucket=bucket,
            notifier=RecordingNotifier(),
            clock=lambda: STARTED,
            renderers=RENDERERS,
        )
        wiring = RunWiring(config=config, adapters=adapters)
        event = json.loads((inputs / "event.json").read_text())
        before = resident_mib()
        collector = CollectorWatch()
        with collector.watching():
            started, cpu = time.perf_counter(), time.process_time()
            answer = report.lambda_handler(event, LambdaContext(), wiring=wiring)
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        peak = resident_mib("VmHWM")
        written = {path.suffix.lstrip("."): path.stat().st_size for path in (work / "bucket" / "reports").rglob("*.*")}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    write_result(
        args.result,
        {
            "outcome": answer["outcome"],
            "seconds": seconds,
            "cpu": cpu,
            "peak_mib": peak,
            "before_mib": before,
            "collector": collector.within(started, started + seconds),
            "written": written,
        },
    )


def stored_bytes(directory: Path) -> int:
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_tree_argument(parser)
    parser.add_argument("--images", type=int, nargs="+", default=[30_000, 100_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--write", type=Path, help=argparse.SUPPRESS)  # the child that writes the inputs
    parser.add_argument("--step", type=Path, help=argparse.SUPPRESS)  # the child that runs the step
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write is not None:
        write_inputs(args.images[0], args.write)
        return
    if args.step is not None:
        report_step(args)
        return
    runs: dict[int, list[Any]] = {count: [] for count in args.images}
    with tempfile.TemporaryDirectory(prefix="report-step-bench-") as scratch:
        for count in args.images:
            directory = Path(scratch) / str(count)
            directory.mkdir()
            writer = [sys.executable, __file__, "--write", str(directory), "--images", str(count)]
            if run_child(writer, env=tree_environment(ROOT)).returncode != 0:
                raise SystemExit(f"writing the inputs of {count} images failed")
        environment = tree_environment(args.tree, FUNCTION_ENVIRONMENT)
        for _ in range(args.rounds):
            for count in args.images:
                directory = Path(scratch) / str(count)
                step = [sys.executable, __file__, "--tree", str(args.tree), "--step", str(directory)]
                runs[count].append(json_child(step, Path(scratch) / "result.json", env=environment))
        stored = {count: stored_bytes(Path(scratch) / str(count) / "bucket") for count in args.images}
    print(f"the report function's invocation, each a fresh process after its cold start; medians of {args.rounds}")
    for count, done in runs.items():
        seconds = Spread.of([run["seconds"] for run in done])
        peak = Spread.of([run["peak_mib"] for run in done])
        before = Spread.of([run["before_mib"] for run in done])
        collector = Spread.of([run["collector"]["seconds"] for run in done])
        written = done[0]["written"]
        cpu = Spread.of([run["cpu"] for run in done])
        print(f"  {count:>7,} images: report step {seconds.show(2, ' s')}, peak RSS {peak.show(0, ' MiB')}")
        print(f"           CPU (every thread of the process) {cpu.show(2, ' s')}")
        print(
            f"           before the invocation {before.median:.0f} MiB (imports and wiring); the collector "
            f"{collector.show(2, ' s')}; stored repository reports {stored[count] / 2**20:.0f} MiB; wrote JSON "
            f"{written.get('json', 0) / 2**20:.1f} MiB, page {written.get('html', 0) / 2**20:.1f} MiB, "
            f"sheet {written.get('csv', 0) / 2**20:.1f} MiB"
        )
        label = size_label(count)
        figure(f"report_step_{label}_s", seconds)
        figure(f"report_step_{label}_peak_mib", peak)


if __name__ == "__main__":
    main()
