"""A run's own files, `runs/<runId>/`, in one place: what the targets step writes for the evaluations and the report
step, and what they write for each other (keys: layout.py). One model each:

- `targets.json`: the work items, `workflow.WorkItem`, written and read back as `run_records.WorkItems`;
- `replication.json`: every pruned registry's replication as the targets step read it, by Region
  (`RunReplication`), read once by each evaluation and once by the report step;
- `deletions/<hash>.json`: what a source's evaluation deletes, told before it acts to the evaluations of the pruned
  destinations its deletions replicate to (services/replicas.py);
- `repositories/<hash>.json`: each repository's report (`RepositoryReport`), keyed by its name and its registry's key
  (registries.PrunedRegistry.key: none for the home Region's, so a deployment of one Region keeps its keys);
- `repositories/batch-<hash>-<n>.json`: a batch's reports of the repositories that changed nothing (`BatchReports`:
  each by the key its own object would have), in parts of at most about MAX_BATCH_REPORTS_PART_BYTES each
  (`HeldReports`; services.evaluate_step.run_work_batch)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import ValidationError

from ecr_retention.domain.errors import InputError, parse_json
from ecr_retention.domain.registry.replication import RegistryReplication, RunReplication, unknown_replication
from ecr_retention.layout import (
    BATCH_REPORTS_PREFIX,
    batch_reports_key,
    batches_key,
    replicated_deletions_key,
    replication_key,
    repository_report_key,
    repository_reports_prefix,
    targets_key,
)
from ecr_retention.loading import validate_as
from ecr_retention.ports import Bucket
from ecr_retention.workflow import WorkItem

if TYPE_CHECKING:
    # The reports' models load where a report is read (repository_report_of, batch_reports_of): the targets step,
    # which writes the run's files and reads none, loads none of them (issue 46: its cold start). The Map's batches
    # are built by the targets step, which writes them here (write_batches): the report step builds none.
    from ecr_retention.domain.reporting.report import RepositoryReport
    from ecr_retention.workflow_batches import WorkBatch

# A run's work items: 10,000 repositories are about 1.5 MB.
MAX_TARGETS_BYTES = 64 * 1024 * 1024
MAX_REPLICATION_BYTES = 1024 * 1024  # ECR allows 10 rules of 25 destinations and 100 filters: a few KiB
MAX_DELETIONS_BYTES = 16 * 1024 * 1024  # 100,000 digests of 71 characters, quoted
MAX_REPOSITORY_REPORT_BYTES = 64 * 1024 * 1024
# A batch's part of held reports is written once it passes this (so it stays far under the read cap above, whatever
# the batch's repositories hold: keptImages lists every image), and the invocation holds no more than this of them.
MAX_BATCH_REPORTS_PART_BYTES = 8 * 1024 * 1024
READ_THREADS = 16


@dataclass(frozen=True)
class StoredReplication:
    """What the targets step read for this run, as an evaluation or the report step reads it back (one read): the
    record, or why there is none (then every registry's replication is unknown)."""

    source: str
    record: RunReplication | None = None
    problem: str | None = None

    def of(self, region: str) -> RegistryReplication:
        """The registry's of `region`. A record that is missing, cannot be read or names no such Region blocks the
        evaluation: the reach of its deletions would be unknown."""
        if self.record is None:
            return unknown_replication(str(self.problem))
        found = self.record.registries.get(region)
        return found if found is not None else unknown_replication(f"{self.source} names no registry of {region}")


@dataclass(frozen=True)
class RunFiles:
    """The files of one run in the bucket. Every method raises StorageUnavailable when its call fails."""

    bucket: Bucket
    run_id: str

    def _where(self, key: str) -> str:
        return f"s3://{self.bucket.name}/{key}"

    # --- targets.json

    def write_targets(self, items: Sequence[WorkItem]) -> str:
        key = targets_key(self.run_id)
        self.bucket.write(key, json.dumps([item.to_wire() for item in items]).encode())
        return key

    def write_batches(self, batches: Sequence[WorkBatch]) -> str:
        key = batches_key(self.run_id)
        self.bucket.write(key, json.dumps([batch.to_wire() for batch in batches]).encode())
        return key

    def read_targets(self, key: str) -> tuple[WorkItem, ...]:
        """The run's work items (at the run record's `targets_key`); InputError when they are missing or unreadable."""
        body = self.bucket.read(key, max_bytes=MAX_TARGETS_BYTES)
        if body is None:
            raise InputError(f"{self._where(key)}: the run's targets are missing")
        where = self._where(key)
        # The targets and the report steps' model (run_records.py), loaded by both at their import: not the evaluate
        # step's, which reads no targets.
        from ecr_retention.run_records import WorkItems

        return tuple(validate_as(WorkItems, parse_json(body.decode("utf-8", errors="replace"), where), where).root)

    # --- replication.json

    def store_replication(self, replication: Mapping[str, RegistryReplication]) -> str:
        """The run's one replication record: every pruned registry's, by Region."""
        key = replication_key(self.run_id)
        self.bucket.write(key, RunReplication(registries=dict(replication)).model_dump_json(by_alias=True).encode())
        return key

    def load_replication(self) -> StoredReplication:
        """The run's replication record, read once."""
        key = replication_key(self.run_id)
        source = self._where(key)
        try:
            body = self.bucket.read(key, max_bytes=MAX_REPLICATION_BYTES)
            if body is None:
                return StoredReplication(source, problem=f"{source} is missing (the targets step stores it)")
            record = validate_as(RunReplication, parse_json(body.decode("utf-8", errors="replace"), source), source)
        except InputError as error:
            return StoredReplication(source, problem=str(error))
        return StoredReplication(source, record)

    # --- deletions/

    def tell_deletions(self, repository: str, key: str | None, digests: Sequence[str]) -> None:
        self.bucket.write(replicated_deletions_key(self.run_id, repository, key), json.dumps(list(digests)).encode())

    def told_deletions(self, repository: str, key: str | None) -> list[str]:
        """What the evaluation of the repository of the registry of that key said it deletes (none when it said
        nothing)."""
        stored = replicated_deletions_key(self.run_id, repository, key)
        body = self.bucket.read(stored, max_bytes=MAX_DELETIONS_BYTES)
        if body is None:
            return []
        return _digests(parse_json(body.decode("utf-8", errors="replace"), self._where(stored)), self._where(stored))

    # --- repositories/

    def store_report(self, report: RepositoryReport, key: str | None = None) -> str:
        """`key`: its registry's (registries.PrunedRegistry.key; the report's key names it)."""
        stored = repository_report_key(self.run_id, report.repository_name, key)
        self.bucket.write(stored, json.dumps(report.model_dump(mode="json", by_alias=True)).encode())
        return stored

    def has_report(self, repository: str, key: str | None = None) -> bool:
        """Whether the repository's own report object is stored (an evaluation of it ended)."""
        stored = repository_report_key(self.run_id, repository, key)
        return stored in self.bucket.list_objects(stored)

    def reported(self, repositories: Sequence[str], key: str | None = None) -> frozenset[str]:
        """Those of `repositories` (of the registry of `key`) whose own report object is stored: one listing."""
        stored = self.bucket.list_objects(repository_reports_prefix(self.run_id))
        return frozenset(name for name in repositories if repository_report_key(self.run_id, name, key) in stored)

    def load_reports(self) -> list[RepositoryReport]:
        """Every repository report a run's workers stored. A report that cannot be read is an error: the run
        report must not leave out what a worker did. Read by many threads, parsed by this one as they arrive: parsing
        holds the interpreter, and parsers in many threads each keep memory of their own (+70 MiB, and twice the
        time, for 100,000 images)."""
        prefix = repository_reports_prefix(self.run_id)
        keys = sorted(self.bucket.list_objects(prefix))

        def read(key: str) -> bytes:
            body = self.bucket.read(key, max_bytes=MAX_REPOSITORY_REPORT_BYTES)
            if body is None:
                raise InputError(f"{self._where(key)}: listed but missing")
            return body

        reports: dict[str, RepositoryReport] = {}
        own: dict[str, RepositoryReport] = {}
        with ThreadPoolExecutor(max_workers=READ_THREADS) as pool:
            for key, body in zip(keys, pool.map(read, keys), strict=True):
                if key.startswith(f"{prefix}{BATCH_REPORTS_PREFIX}"):
                    reports.update(batch_reports_of(body, self._where(key)))
                else:
                    own[key] = repository_report_of(body, self._where(key))
        # A repository's own object is the later word: its batch's invocation ended after storing the batch's object
        # and the workflow evaluated it again alone (services.evaluate_step.run_batch_member).
        reports.update(own)
        return [reports[key] for key in sorted(reports)]


class HeldReports:
    """A batch's reports of the repositories that changed nothing, on their way to the bucket: `pending` (where an
    evaluation appends its report) is serialized after each repository (`take`), and once the serialized reports pass
    `max_bytes` they are written as one part, `batch-<hash>-<n>.json`: the invocation holds at most about `max_bytes`
    of them, and no part outgrows what load_reports reads."""

    def __init__(
        self, files: RunFiles, first_repository: str, key: str | None, *, max_bytes: int = MAX_BATCH_REPORTS_PART_BYTES
    ) -> None:
        self.pending: list[RepositoryReport] = []
        self._files, self._first, self._key, self._max_bytes = files, first_repository, key, max_bytes
        self._serialized: dict[str, bytes] = {}
        self._size = 0
        self._parts = 0

    def take(self) -> None:
        """Serialize the pending reports; write them as a part once the held ones pass the bound."""
        self._serialize_pending()
        if self._size > self._max_bytes:
            self.store()

    def store(self) -> None:
        """Write the held reports as the batch's next part (nothing when none is held)."""
        self._serialize_pending()
        if not self._serialized:
            return
        part = batch_reports_key(self._files.run_id, self._first, self._key, self._parts)
        body = b"{" + b", ".join(json.dumps(key).encode() + b": " + each for key, each in self._serialized.items())
        self._files.bucket.write(part, body + b"}")
        self._serialized, self._size, self._parts = {}, 0, self._parts + 1

    def store_each(self) -> None:
        """Write each held report in its own object, where an invocation of the repository's own looks (has_report)."""
        self._serialize_pending()
        for key, body in self._serialized.items():
            self._files.bucket.write(key, body)
        self._serialized, self._size = {}, 0

    def _serialize_pending(self) -> None:
        for report in self.pending:
            body = json.dumps(report.model_dump(mode="json", by_alias=True)).encode()  # as store_report writes it
            self._serialized[repository_report_key(self._files.run_id, report.repository_name, self._key)] = body
            self._size += len(body)
        self.pending.clear()


def _digests(data: object, source: str) -> list[str]:
    if isinstance(data, list) and all(isinstance(digest, str) for digest in data):
        return data
    raise InputError(f"{source}: not a list of image digests")


def batch_reports_of(body: bytes, where: str) -> dict[str, RepositoryReport]:
    from ecr_retention.domain.reporting.report import BatchReports

    try:
        return BatchReports.model_validate_json(body).root
    except ValidationError:
        pass
    data = parse_json(body.decode("utf-8", errors="replace"), where)
    return validate_as(BatchReports, data, f"{where}: unreadable batch of repository reports").root


def repository_report_of(body: bytes, where: str) -> RepositoryReport:
    from ecr_retention.domain.reporting.report import RepositoryReport

    try:
        # pydantic's own JSON reader: no dict per image on the way, and the many equal strings (kinds, rules,
        # details) held once.
        return RepositoryReport.model_validate_json(body)
    except ValidationError:
        pass  # worded below, as the strict reader words it
    data = parse_json(body.decode("utf-8", errors="replace"), where)
    return validate_as(RepositoryReport, data, f"{where}: unreadable repository report")
