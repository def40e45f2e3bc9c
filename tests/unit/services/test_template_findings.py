"""The doctor's pass over the repository creation templates in a run: once per run, through both doors (the CLI's
run_pipeline and the workflow's report step), into the run report and the SNS summary; a failure to read the
templates is a warning, never a failed run."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from ecr_retention.domain.config import parse_config
from ecr_retention.domain.registry.creation_templates import RepositoryCreationTemplate
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.report_renderers import RENDERERS
from ecr_retention.run_adapters import Adapters
from ecr_retention.services.evaluate_step import run_work_item
from ecr_retention.services.report_step import finish_run
from ecr_retention.services.run import run_pipeline
from ecr_retention.services.targets_step import start_run
from ecr_retention.services.templates import creation_template_findings
from support.builders import ACCOUNT, NOW, REGION
from support.fakes import FakeRegistry, MemoryBucket, RecordingNotifier

INCIDENT = (Path(__file__).resolve().parents[3] / "examples" / "lifecycle" / "policy-incident.json").read_text()
RULES = parse_config(
    """
version: 1
dry_run: true
safety: {clusters: [], max_delete_fraction: 0.9}
policies:
  - repositories: ["app"]
    rules:
      - delete: {tags: ["v*"], older_than: 30d, keep_newest: 1}
"""
)


def registry_with_templates() -> FakeRegistry:
    registry = FakeRegistry(registry_id=ACCOUNT, region=REGION)
    for n in range(1, 4):
        registry.add_image("app", tags=[f"v{n}"], pushed_at=NOW - timedelta(days=90 - n), seed=str(n))
    registry.templates = [
        RepositoryCreationTemplate(prefix="ROOT", applied_for=("CREATE_ON_PUSH",), lifecycle_policy=INCIDENT),
        RepositoryCreationTemplate(prefix="plain/", applied_for=("REPLICATION",)),
    ]
    return registry


def test_cli_run_reports_template_findings_by_prefix_and_summarizes_them() -> None:
    registry = registry_with_templates()
    bucket, notifier = MemoryBucket(), RecordingNotifier()

    report = run_pipeline(
        RULES, Adapters(registry=registry, bucket=bucket, notifier=notifier, clock=lambda: NOW, renderers=RENDERERS)
    )

    assert report.outcome == "ok"
    assert registry.count("creation_templates") == 1
    [finding] = report.template_findings
    assert (finding.prefix, finding.applied_for, finding.code) == (
        "ROOT",
        ("CREATE_ON_PUSH",),
        "mutable-tag-unprotected",
    )
    stored = json.loads(bucket.objects[f"reports/2026/11/30/{report.run_id}.json"])
    assert stored["templateFindings"][0]["prefix"] == "ROOT"
    assert RunReport.model_validate(stored) == report
    [(_, body, _)] = notifier.messages
    assert (
        "Repository creation templates: 1 lifecycle findings in the templates for ROOT (see the report's "
        "templateFindings)." in body.splitlines()
    )


def test_workflow_report_step_reads_the_templates_once() -> None:
    registry = registry_with_templates()
    adapters = Adapters(registry=registry, bucket=MemoryBucket(), clock=lambda: NOW, renderers=RENDERERS)
    start = start_run(RULES, adapters, trigger="schedule")
    run_work_item(RULES, adapters, run_id=start.run_id, repository="app", dry_run=True)

    report = finish_run(adapters, start, RULES)

    assert registry.count("creation_templates") == 1
    assert [finding.prefix for finding in report.template_findings] == ["ROOT"]


def test_templates_that_cannot_be_read_are_a_warning_not_a_failed_run() -> None:
    registry = registry_with_templates()
    registry.templates_failure = "DescribeRepositoryCreationTemplates failed: AccessDeniedException: not authorized"
    notifier = RecordingNotifier()

    report = run_pipeline(
        RULES,
        Adapters(registry=registry, bucket=MemoryBucket(), notifier=notifier, clock=lambda: NOW, renderers=RENDERERS),
    )

    assert report.outcome == "ok"
    assert report.template_findings == ()
    assert report.warnings == (
        "repository creation templates not checked: DescribeRepositoryCreationTemplates failed: "
        "AccessDeniedException: not authorized",
    )
    [(_, body, _)] = notifier.messages
    assert "Repository creation templates:" not in body


def test_a_run_without_template_findings_has_no_summary_line() -> None:
    registry = registry_with_templates()
    registry.templates = []
    notifier = RecordingNotifier()

    report = run_pipeline(
        RULES,
        Adapters(registry=registry, bucket=MemoryBucket(), notifier=notifier, clock=lambda: NOW, renderers=RENDERERS),
    )

    assert report.template_findings == ()
    assert report.warnings == ()
    assert "Repository creation templates" not in notifier.messages[0][1]


def test_a_doctor_defect_on_templates_is_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    # services.templates imports the doctor when it diagnoses: the doctor's own function is broken.
    from ecr_retention.domain.doctor import templates as module

    def broken(*args: object) -> None:
        raise KeyError("doctor defect")

    monkeypatch.setattr(module, "diagnose_templates", broken)

    check = creation_template_findings(registry_with_templates())

    assert check.findings == ()
    assert check.warnings == ("repository creation templates not checked: the diagnosis failed: KeyError",)
