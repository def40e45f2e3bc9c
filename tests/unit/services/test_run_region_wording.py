"""The run-level words of a run over two Regions (issue 44 item 1): the repository creation templates are read in each
pruned Region's registry and each finding and warning names its Region; an in-use reference the next pull cannot get
names the Region of the registry it pulls from, in the report, the summary, the page and the sheet. A run of one
Region keeps its words."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

from ecr_retention.domain.config import parse_config
from ecr_retention.domain.in_use.references import Removal
from ecr_retention.domain.registry.creation_templates import RepositoryCreationTemplate
from ecr_retention.domain.reporting.cost import StoragePrice
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.domain.reporting.summary import render_summary
from ecr_retention.layout import removal_key
from ecr_retention.report_page.view import page_view_of
from ecr_retention.report_renderers import RENDERERS
from ecr_retention.report_sheet import render_sheet
from ecr_retention.run_adapters import Adapters
from ecr_retention.services.run import run_pipeline
from support.builders import NOW
from support.fakes import FakeRegistry, MemoryBucket
from tests.unit.services.test_several_regions import (
    HOME,
    HOME_HOST,
    OTHER,
    OTHER_HOST,
    RULES,
    adapters_of,
    two_regions,
)

UNREADABLE = "not a policy"


def bad_template(prefix: str) -> RepositoryCreationTemplate:
    """A template whose lifecycle policy the doctor cannot read: one policy-invalid finding."""
    return RepositoryCreationTemplate.model_validate(
        {"prefix": prefix, "appliedFor": ["CREATE_ON_PUSH"], "lifecyclePolicy": UNREADABLE}
    )


def evidence(report: RunReport, check: str) -> list[str]:
    [found] = [each for each in page_view_of(report, StoragePrice.for_region(HOME)).checks if each.id == check]
    return ["".join(part.text for part in each) for each in found.evidence]


def test_each_pruned_regions_templates_are_read_and_their_findings_name_their_region() -> None:
    home, other, bucket, _ = two_regions()
    home.templates = [bad_template("ROOT")]
    other.templates = [bad_template("team")]

    report = run_pipeline(parse_config(RULES), adapters_of(home, other, bucket))

    assert [(found.region, found.prefix, found.code) for found in report.template_findings] == [
        (HOME, "ROOT", "policy-invalid"),
        (OTHER, "team", "policy-invalid"),
    ]
    assert [found["region"] for found in report.to_json_dict()["templateFindings"]] == [HOME, OTHER]
    _, body = render_summary(report)
    assert (
        f"Repository creation templates: 2 lifecycle findings in the templates for {HOME}:ROOT, {OTHER}:team "
        "(see the report's templateFindings)."
    ) in body.splitlines()
    assert [line.split(": warning")[0] for line in evidence(report, "findings")] == [
        f"template {HOME}:ROOT",
        f"template {OTHER}:team",
    ]


def test_templates_unreadable_in_one_region_are_that_regions_warning() -> None:
    home, other, bucket, _ = two_regions()
    other.templates_failure = "AccessDeniedException: not authorized"

    report = run_pipeline(parse_config(RULES), adapters_of(home, other, bucket))

    assert f"{OTHER}: repository creation templates not checked: AccessDeniedException: not authorized" in (
        report.warnings
    )
    assert not any(warning.startswith("repository creation templates") for warning in report.warnings)


def test_a_run_of_one_region_keeps_its_template_words() -> None:
    home, _, bucket, _ = two_regions()
    home.templates = [bad_template("ROOT")]
    adapters = Adapters(registry=home, bucket=bucket, clock=lambda: NOW, renderers=RENDERERS)

    report = run_pipeline(parse_config(RULES), adapters)

    assert len(report.template_findings) == 1
    assert "region" not in report.to_json_dict()["templateFindings"][0]
    assert "in the templates for ROOT (see" in render_summary(report)[1]
    assert evidence(report, "findings")[-1].startswith("template ROOT: warning policy-invalid: ")

    home.templates_failure = "AccessDeniedException: not authorized"
    warned = run_pipeline(parse_config(RULES), Adapters(registry=home, bucket=MemoryBucket(), renderers=RENDERERS))
    assert "repository creation templates not checked: AccessDeniedException: not authorized" in warned.warnings


def running(bucket: MemoryBucket, *images: str) -> None:
    """prod runs these images (and nothing else)."""
    bucket.write_json(
        "in-use/prod.json",
        {
            "schemaVersion": 1,
            "cluster": "prod",
            "generatedAt": (NOW - timedelta(minutes=5)).isoformat(),
            "complete": True,
            "images": [
                {"image": image, "namespace": "p", "workload": "Deployment/app", "container": "app", "source": "pod"}
                for image in images
            ],
        },
    )


def missing_run(home: FakeRegistry, other: FakeRegistry, bucket: MemoryBucket) -> RunReport:
    """prod pulls app:v2 of both Regions, app:v9 of the home one (no such tag), and gone:v1 of the other (no such
    repository)."""
    running(
        bucket,
        f"{HOME_HOST}/app:v2",
        f"{OTHER_HOST}/app:v2",
        f"{HOME_HOST}/app:v9",
        f"{OTHER_HOST}/gone:v1",
    )
    return run_pipeline(parse_config(RULES), adapters_of(home, other, bucket))


def test_an_in_use_reference_missing_names_the_region_of_its_registry() -> None:
    home, other, bucket, _ = two_regions()

    report = missing_run(home, other, bucket)

    assert [(found.region, found.image) for found in report.in_use_missing] == [(HOME, "app:v9"), (OTHER, "gone:v1")]
    details = [found.detail for found in report.in_use_missing]
    assert details == [
        f"the next pull of prod: p/Deployment/app (pod) fails: app:v9 no longer exists in {HOME}",
        f"the next pull of prod: p/Deployment/app (pod) fails: repository gone does not exist in {OTHER}",
    ]
    [app] = [repo for repo in report.repositories if (repo.region, repo.repository_name) == (HOME, "app")]
    assert [found.detail for found in app.in_use_missing] == details[:1]
    assert [found["region"] for found in report.to_json_dict()["inUseMissing"]] == [HOME, OTHER]
    _, body = render_summary(report)
    assert [f"  {detail}" for detail in details] == [
        line for line in body.splitlines() if line.startswith("  the next pull")
    ]
    assert evidence(report, "in-use-missing") == details
    rows = list(csv.reader(io.StringIO(render_sheet(report), newline="")))
    assert [(row[0], row[-1]) for row in rows if row[5] == "in-use-missing"] == [("app", HOME), ("gone", OTHER)]


def test_an_in_use_reference_missing_in_a_run_of_one_region_names_no_region() -> None:
    home, _, bucket, _ = two_regions()
    running(bucket, f"{HOME_HOST}/app:v9")

    report = run_pipeline(parse_config(RULES), Adapters(registry=home, bucket=bucket, renderers=RENDERERS))

    [found] = report.in_use_missing
    assert found.detail == "the next pull of prod: p/Deployment/app (pod) fails: app:v9 no longer exists"
    assert "region" not in json.loads(report.to_json())["inUseMissing"][0]
    rows = list(csv.reader(io.StringIO(render_sheet(report), newline="")))
    assert [row[-1] for row in rows if row[5] == "in-use-missing"] == [""]


def test_the_in_use_checks_warnings_name_the_region_of_the_registry_they_concern() -> None:
    # Given prod pulls edge:v1 of the home registry (no policy manages edge there: the report step looks it up),
    # whose lookup fails, and app:v9 of the home registry (missing), whose removal someone else recorded
    home, other, bucket, _ = two_regions()
    home.lookup_failures["edge"] = "ThrottlingException: slow down"
    removal = Removal(
        repository_name="app",
        image_tags=("v9",),
        action="deleted",
        cause="image-action",
        removed_at=NOW - timedelta(hours=1),
        event_id="event-1",
        writer="arn:aws:iam::123456789012:role/someone-else",
    )
    bucket.write(removal_key("app", removal.removed_at, "event-1", 0), removal.model_dump_json().encode())
    running(bucket, f"{HOME_HOST}/app:v2", f"{HOME_HOST}/edge:v1", f"{HOME_HOST}/app:v9")

    report = run_pipeline(parse_config(RULES), adapters_of(home, other, bucket))

    assert [warning.split(": ")[0] for warning in report.warnings if "in-use reference" in warning] == [f"{HOME}:edge"]
    assert [warning.split(": ")[0] for warning in report.warnings if "recorded removal" in warning] == [f"{HOME}:app"]
