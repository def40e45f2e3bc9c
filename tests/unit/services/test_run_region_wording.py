"""The run-level words of a run over two Regions (issue 44 item 1): the repository creation templates are read in each
pruned Region's registry and each finding and warning names its Region. A run of one Region keeps its words."""

from __future__ import annotations

from ecr_retention.domain.config import parse_config
from ecr_retention.domain.registry.creation_templates import RepositoryCreationTemplate
from ecr_retention.domain.reporting.cost import StoragePrice
from ecr_retention.domain.reporting.report import RunReport
from ecr_retention.domain.reporting.summary import render_summary
from ecr_retention.report_page.view import page_view_of
from ecr_retention.report_renderers import RENDERERS
from ecr_retention.services.run import Adapters, run_pipeline
from support.builders import NOW
from support.fakes import MemoryBucket
from tests.unit.services.test_several_regions import (
    HOME,
    OTHER,
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
