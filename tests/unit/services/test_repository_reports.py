"""The workers' repository reports as the report step reads them: pydantic's JSON reader, and a report it refuses
worded as the strict reader words it (the line the run's failure names)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ecr_retention.domain.errors import InputError, parse_json
from ecr_retention.domain.reporting.report import RepositoryReport
from ecr_retention.loading import validate_as
from ecr_retention.run_files import RunFiles
from support.fakes import MemoryBucket
from support.reports import RUN_ID, dry_run_report

KEY = f"runs/{RUN_ID}/repositories/app.json"


def stored(body: bytes) -> tuple[MemoryBucket, str]:
    bucket = MemoryBucket()
    RunFiles(bucket, RUN_ID).store_report(dry_run_report(40).repositories[0])
    [key] = bucket.objects
    bucket.objects[key] = body
    return bucket, key


def strictly_read(body: bytes, key: str) -> str:
    """The line the strict reader (json with duplicate keys refused, then the model) gives for the body."""
    where = f"s3://inventory/{key}"
    with pytest.raises(InputError) as caught:
        validate_as(
            RepositoryReport,
            parse_json(body.decode("utf-8", errors="replace"), where),
            f"{where}: unreadable repository report",
        )
    return str(caught.value)


def document() -> dict[str, Any]:
    report = dry_run_report(40).repositories[0]
    data: dict[str, Any] = report.model_dump(mode="json", by_alias=True)
    return data


def test_the_stored_reports_read_back_as_they_were_written() -> None:
    bucket = MemoryBucket()
    written = dry_run_report(400).repositories
    for report in written:
        RunFiles(bucket, RUN_ID).store_report(report)

    read = RunFiles(bucket, RUN_ID).load_reports()

    assert sorted(read, key=lambda report: report.repository_name) == list(written)


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"\xff\xfe{}",
        b"[]",
        json.dumps({**document(), "outcome": "maybe"}).encode(),
        json.dumps({**document(), "deleted": [5]}).encode(),
        json.dumps({**document(), "deleted": [{**document()["deleted"][0], "imagePushedAt": "yesterday"}]}).encode(),
        json.dumps({**document(), "keptImages": [{"imageDigest": 1}, 3]}).encode(),
        json.dumps({k: v for k, v in document().items() if k != "repositoryName"}).encode(),
    ],
    ids=["truncated", "not UTF-8", "a list", "an outcome", "an entry", "a time", "two entries", "a name"],
)
def test_a_report_that_cannot_be_read_is_worded_as_the_strict_reader_words_it(body: bytes) -> None:
    bucket, key = stored(body)

    with pytest.raises(InputError) as caught:
        RunFiles(bucket, RUN_ID).load_reports()

    assert str(caught.value) == strictly_read(body, key)


def test_what_only_the_strict_reader_reads_is_read_as_it_read_it() -> None:
    body = b'{"repositoryName": "a\\ud800", "outcome": "ok"}'  # a lone surrogate: pydantic's reader refuses it
    bucket, _ = stored(body)

    [report] = RunFiles(bucket, RUN_ID).load_reports()

    assert report == RepositoryReport.model_validate(json.loads(body))
    assert report.repository_name == "a\ud800"
