"""The report step's page and sheet: written beside the JSON report with the same key stem, priced from the rules
file; a page or a sheet that cannot be rendered or written costs neither the JSON report nor the summary."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from datetime import timedelta

import pytest

from ecr_retention.domain.config import parse_config
from ecr_retention.domain.reporting.cost import StoragePrice
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.domain.reporting.summary import ReportFiles, StoredFile, console_url, render_summary
from ecr_retention.layout import run_report_key
from ecr_retention.ports import StorageUnavailable
from ecr_retention.report_renderers import RENDERERS
from ecr_retention.report_sheet import COLUMNS
from ecr_retention.run_adapters import Adapters
from ecr_retention.services.run import run_pipeline
from support.builders import ACCOUNT, NOW, REGION
from support.fakes import FakeRegistry, MemoryBucket, RecordingNotifier

RULES = """
version: 1
dry_run: false
safety: {{min_age: 1d, max_delete_fraction: 0.9, inventory_max_age: 6h, clusters: []}}
policies:
  - repositories: [app]
    rules:
      - keep: {{tags: [latest]}}
      - delete: {{tags: ["v*"], older_than: 30d, keep_newest: 1}}
{report}"""
STEM = "reports/2026/11/30/"


def seeded() -> FakeRegistry:
    registry = FakeRegistry(registry_id=ACCOUNT, region=REGION)
    for n in range(1, 5):
        registry.add_image("app", tags=[f"v{n}"], pushed_at=NOW - timedelta(days=100 - n), size=n << 30, seed=f"{n}")
    registry.add_image("app", tags=["latest"], pushed_at=NOW - timedelta(days=200), size=5, seed="latest")
    return registry


def run(bucket: MemoryBucket, notifier: RecordingNotifier, report: str = "") -> RunReport:
    adapters = Adapters(registry=seeded(), bucket=bucket, notifier=notifier, clock=lambda: NOW, renderers=RENDERERS)
    return run_pipeline(parse_config(RULES.format(report=report)), adapters)


def test_the_page_and_the_sheet_go_beside_the_json_report_with_its_stem() -> None:
    bucket, notifier = MemoryBucket(name="inventory"), RecordingNotifier()

    report = run(bucket, notifier)

    keys = sorted(key for key in bucket.objects if key.startswith("reports/"))
    assert keys == [f"{STEM}{report.run_id}.{extension}" for extension in ("csv", "html", "json")]
    assert run_report_key(report.run_id, report.started_at, extension="html") == keys[1]
    page = bucket.objects[keys[1]].decode()
    assert page.startswith("<!DOCTYPE html>")
    assert report.run_id in page
    rows = list(csv.reader(io.StringIO(bucket.objects[keys[0]].decode(), newline="")))
    assert tuple(rows[0]) == COLUMNS
    assert sorted(row[5] for row in rows[1:]) == ["delete", "delete", "delete", "keep", "keep"]


def test_the_summary_names_the_page_its_console_url_and_the_sheet() -> None:
    bucket, notifier = MemoryBucket(name="inventory"), RecordingNotifier()

    report = run(bucket, notifier)

    [(_, body, _)] = notifier.messages
    lines = body.splitlines()
    stem = f"{STEM}{report.run_id}"
    assert lines[-4:] == [
        f"Full report: s3://inventory/{stem}.json",
        f"Report page: s3://inventory/{stem}.html",
        "  open it from the S3 console: https://console.aws.amazon.com/s3/object/inventory"
        f"?region={REGION}&prefix=reports/2026/11/30/{report.run_id}.html",
        f"Sheet (CSV): s3://inventory/{stem}.csv",
    ]
    assert notifier.report_locations == [f"s3://inventory/{stem}.json"]


def test_the_cost_on_the_page_uses_the_rules_files_price(monkeypatch: pytest.MonkeyPatch) -> None:
    prices: list[StoragePrice] = []

    def page_bytes(report: RunReport, price: StoragePrice) -> bytes:
        prices.append(price)
        return b"<!DOCTYPE html>"

    monkeypatch.setattr("ecr_retention.report_page.page_bytes", page_bytes)
    run(MemoryBucket(), RecordingNotifier(), "report: {storage_price_per_gb_month: 0.5}\n")
    run(MemoryBucket(), RecordingNotifier())

    assert prices == [
        StoragePrice(0.5, "the rules file (report.storage_price_per_gb_month)"),
        StoragePrice.for_region(REGION),
    ]


@dataclass
class RefusingBucket(MemoryBucket):
    """A bucket that refuses the objects whose key ends with one of `refused`."""

    refused: tuple[str, ...] = ()

    def write(self, key: str, body: bytes, *, content_type: str = "application/json") -> None:
        if key.endswith(self.refused):
            raise StorageUnavailable(f"AccessDenied: PutObject {key}")
        super().write(key, body, content_type=content_type)


@pytest.mark.parametrize("refused", [(".html",), (".csv",), (".html", ".csv")])
def test_a_page_or_sheet_that_cannot_be_written_leaves_the_json_report_and_the_summary(
    refused: tuple[str, ...], caplog: pytest.LogCaptureFixture
) -> None:
    bucket, notifier = RefusingBucket(name="inventory", refused=refused), RecordingNotifier()

    report = run(bucket, notifier)

    stored = json.loads(bucket.objects[f"{STEM}{report.run_id}.json"])
    assert RunReport.model_validate(stored) == report
    assert report.outcome == "ok"
    [(subject, body, attributes)] = notifier.messages
    assert "FAILED" not in subject
    assert attributes == {"dry_run": "false", "outcome": "ok"}
    labels = {".html": "Report page", ".csv": "Sheet (CSV)"}
    for suffix, label in labels.items():
        key = f"{STEM}{report.run_id}{suffix}"
        if suffix in refused:
            assert key not in bucket.objects
            assert (
                f"{label}: NOT WRITTEN (StorageUnavailable: AccessDenied: PutObject {key}); the full report above has everything"
            ) in body.splitlines()
        else:
            assert f"{label}: s3://inventory/{key}" in body.splitlines()
    assert len([r for r in caplog.records if "writing the run report's" in r.getMessage()]) == len(refused)


def test_a_page_that_cannot_be_rendered_is_contained_too(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(report: RunReport, price: StoragePrice) -> bytes:
        raise KeyError("template\nvariable")

    monkeypatch.setattr("ecr_retention.report_page.page_bytes", broken)
    bucket, notifier = MemoryBucket(name="inventory"), RecordingNotifier()

    report = run(bucket, notifier)

    [(_, body, _)] = notifier.messages
    [line] = [line for line in body.splitlines() if line.startswith("Report page:")]
    assert line == "Report page: NOT WRITTEN (KeyError: 'template\\nvariable'); the full report above has everything"
    assert f"{STEM}{report.run_id}.csv" in bucket.objects


def test_the_console_url_quotes_the_key_and_leaves_out_an_unknown_region() -> None:
    key = "reports/2026/11/30/run id+&=.html"
    assert console_url("b", key, "eu-west-1") == (
        "https://console.aws.amazon.com/s3/object/b?region=eu-west-1&prefix=reports/2026/11/30/run%20id%2B%26%3D.html"
    )
    assert console_url("b", key, None).startswith("https://console.aws.amazon.com/s3/object/b?prefix=reports/2026/")


def test_without_files_the_summary_ends_with_the_full_report() -> None:
    bucket, notifier = MemoryBucket(name="inventory"), RecordingNotifier()
    report = run(bucket, notifier)
    _, body = render_summary(report)
    assert body.splitlines()[-1] == f"Full report: s3://inventory/{STEM}{report.run_id}.json"
    files = ReportFiles("inventory", StoredFile("p.html", problem="a\nb"), StoredFile("s.csv"))
    _, body = render_summary(report, files)
    assert "Report page: NOT WRITTEN (a b); the full report above has everything" in body.splitlines()


def test_a_page_renderer_that_cannot_be_imported_is_contained(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "ecr_retention.report_page", None)  # `import` raises ModuleNotFoundError
    bucket, notifier = MemoryBucket(name="inventory"), RecordingNotifier()

    report = run(bucket, notifier)

    [(_, body, _)] = notifier.messages
    assert "Report page: NOT WRITTEN (ModuleNotFoundError: " in body
    assert f"{STEM}{report.run_id}.json" in bucket.objects
    assert f"{STEM}{report.run_id}.csv" in bucket.objects
