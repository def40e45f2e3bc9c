"""The plan door: `ecr-retention plan --format html` renders a plan as the report of its dry run."""

from __future__ import annotations

from datetime import timedelta

from ecr_retention.domain.inventory.evidence import manifest_evidence
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.reporting.cost import StoragePrice
from ecr_retention.domain.reporting.run_report import report_of_plan
from ecr_retention.report_page import render_page
from support.builders import NOW, config, digest, image, in_use, index_manifest, plan, repository, snapshot
from support.reports import page_totals
from tests.unit.report_page.dom import parse


def test_a_plan_renders_as_its_dry_run() -> None:
    cfg = config([{"keep": {"tags": ["latest"]}}, {"delete": {"tags": ["*"], "older_than": "30d"}}], clusters=["prod"])
    snap = snapshot(
        repository(
            "app",
            image("a", "latest"),
            image("b", "1.0.0"),
            image("c", "1.1.0"),
            image("d", "2.0.0", age=timedelta(hours=1)),
            image("idx", "multi"),
            image("child"),
            manifests={"idx": index_manifest("child")},
        )
    )
    manifest = in_use("prod", ("123456789012.dkr.ecr.eu-west-1.amazonaws.com/app:1.1.0", "c"))
    result = plan(cfg, snap, manifest)
    evidence = manifest_evidence(cfg.safety, Inventory(manifests=(manifest,)), NOW)
    report = report_of_plan(result, run_id="plan-1", manifests=evidence)

    root = parse(render_page(report, StoragePrice.for_region("eu-west-1")))

    outcome = root.by_id("outcome")
    assert (outcome.attrs["data-outcome"], outcome.attrs["data-dry-run"]) == ("ok", "true")
    rows = {row.attrs["data-digest"]: row.attrs["data-action"] for row in root.find_all("tr", class_="image")}
    assert rows == {
        digest("a"): "keep",
        digest("b"): "delete",
        digest("c"): "keep",
        digest("d"): "keep",
        digest("idx"): "delete",
        digest("child"): "delete",
    }
    checks = {li.attrs["data-check"]: li.attrs["data-status"] for li in root.find_all("li", class_="check")}
    assert checks["manifest:prod"] == "pass"
    assert checks["removals-unprotected"] == "pass"
    assert checks["in-use"] == "pass"
    assert "index-child" in root.find("tr", data_digest=digest("child")).text()
    totals = {
        cell.attrs["data-total"]: int(cell.attrs["data-value"])
        for cell in root.by_id("totals").find_all(data_total=None)
    }
    assert totals == page_totals(report.to_json_dict())
