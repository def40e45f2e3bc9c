"""What each function's handler loads at its cold start, read from `sys.modules` after importing it in a fresh
interpreter: what a function uses only on some paths, or never, stays out of its import (issue 46, item 4:
benchmarks/asset_bench.py measures the time; this keeps the structure that gives it, without timing anything).

- the doctor's checks load only when something is diagnosed (a repository's native policy in the evaluate step, the
  creation templates in the report step, a PutLifecyclePolicy in the sentinel), never at import;
- the report step's page and sheet (Jinja2) only when the report step renders them (handlers/wiring/report.py), and
  the creation templates' model only where the registry's answer holds a template (aws/ecr_registry.py);
- the workflow's records (workflow.py) without the run report's models and what they hold (the planner's, the
  doctor's), so that the functions that only start or name runs (push, collector, tagger) build none of them;
- the planner's models only in the functions that plan or report (the push function asks only which policy manages a
  repository, the tagger and the collector plan nothing);
- each step of the workflow its own step's service only (services/targets_step.py, evaluate_step.py, report_step.py),
  never the CLI's whole run (services/run.py, listed_ahead.py); the targets step none of the report's, the holds', the
  manifests' or the images' models, at its import or when its wiring is built; the renderers only in the report step's
  wiring;
- the sentinel none of the planner (it restores and alerts, it plans nothing) nor the doctor's models (it diagnoses only
  a policy just put); the tagger none of the plan's models;
- the sentinel not even the plan's models (its records of removals and in-use references share only their base,
  domain/planning/plan_model.py); the evaluate step none of the run report's models (domain/reporting/run_report.py:
  it builds and stores repository reports only) nor the manifests' evidence a run report holds;
- what the collector builds Inspector's manifest from (domain/inventory/inspector_manifest.py) in the collector only:
  the other functions read its entries (domain/inventory/inspector.py);
- each function its own settings model and wiring (handlers/wiring/<function>.py), none of the six others';
- no function difflib (the words of an unknown key's message, domain/errors.py), and none builds the collector's
  eksClusters file model at import (only a collector that reads the file does, when it reads its settings);
- the evaluate step none of the run's own records (run_records.py: the run record, the targets file's model, what the
  report step returns), at its import or with its wiring: it is given Map items only; neither the evaluate nor the
  report step what starts a run (run_request.py), and no other step what the evaluate step returns (handlers/evaluate.py);
- the report step none of the plan's models (domain/planning/plan.py: Decision, RepositoryPlan, Plan) nor the ledger,
  at its import, with its wiring or with its renderers: it reads repository reports, whose reasons and replica
  registries are domain/planning/plan_parts.py;
- the sentinel none of what alerts a guard delivery (handlers/guard.py, the guard events' models, their alerts), at its
  import or with its wiring: it loads them when such a delivery comes (a change of the bucket's guards, the break-glass
  role used: rare), and a cold start for a removal builds none of them;
- the report step the sentinel's records of removals (services/removals.py) only where it reads them, for a repository
  with an in-use reference the next pull cannot get;
- neither the report step nor the sentinel the planner's choice of the registries that decide a replica
  (domain/planning/replicas.py): registries.deciding_sources loads it where it is asked, which the report step never
  does and the sentinel only for a deletion of an in-use image in a deployment of several Regions;
- no function a repository's diagnosis (domain/doctor/diagnosis_model.py: built where a policy is diagnosed), and only
  the report step a creation template's finding (domain/doctor/template_finding.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]  # where support/ is
HANDLERS = ("targets", "evaluate", "report", "push", "tagger", "collector", "sentinel")
NEVER_AT_IMPORT = (
    "jinja2",
    "difflib",
    "ecr_retention.report_page",
    "ecr_retention.report_sheet",
    "ecr_retention.domain.doctor.checks",
    "ecr_retention.domain.doctor.diagnosis",
    "ecr_retention.domain.doctor.templates",
)
REPORT_MODELS = "ecr_retention.domain.reporting.report"
RUN_REPORT_MODELS = "ecr_retention.domain.reporting.run_report"
MANIFEST_EVIDENCE = "ecr_retention.domain.inventory.evidence"
PLAN_MODELS = "ecr_retention.domain.planning.plan"
INSPECTOR_MANIFEST = "ecr_retention.domain.inventory.inspector_manifest"
RUN_RECORDS = "ecr_retention.run_records"
RUN_REQUEST = "ecr_retention.run_request"
DIAGNOSIS_MODEL = "ecr_retention.domain.doctor.diagnosis_model"
TEMPLATE_FINDING = "ecr_retention.domain.doctor.template_finding"
PLANNER = "ecr_retention.domain.planning.run"
PLANS_NOTHING = ("push", "tagger", "collector")
STEP_SERVICES = {
    "targets": "ecr_retention.services.targets_step",
    "evaluate": "ecr_retention.services.evaluate_step",
    "report": "ecr_retention.services.report_step",
}
THE_CLIS_RUN = ("ecr_retention.services.run", "ecr_retention.listed_ahead")
# What the targets step never uses: it lists repositories and writes work items (a failed listing's report loads the
# report's models on that path only, services/targets_step.Listing.failed).
NOT_IN_THE_TARGETS_STEP = (
    REPORT_MODELS,
    "ecr_retention.domain.planning.plan",
    "ecr_retention.domain.holds.model",
    "ecr_retention.domain.inventory.manifest",
    "ecr_retention.domain.registry.images",
    "ecr_retention.domain.doctor.models",
)
THE_PLANNER = (
    PLANNER,
    "ecr_retention.domain.planning.guards",
    "ecr_retention.domain.planning.decisions",
    "ecr_retention.domain.planning.rules",
    "ecr_retention.domain.planning.explain",
)
RENDERERS = "ecr_retention.report_renderers"
CREATION_TEMPLATES = "ecr_retention.domain.registry.creation_templates"
DOCTOR_MODELS = "ecr_retention.domain.doctor.models"
# What the workflow's functions are given (infra/pipeline_function.py), so that their wiring builds offline: a registry
# id (no STS call), a bucket, a lease table, a topic; the rules file is the package's default.
STEP_ENVIRONMENT = {
    "AWS_REGION": "eu-west-1",
    "AWS_DEFAULT_REGION": "eu-west-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "BUCKET_NAME": "inventory-bucket",
    "REGISTRY_ID": "123456789012",
    "MAP_CONCURRENCY": "10",
    "LEASE_TABLE": "leases",
    "TOPIC_ARN": "arn:aws:sns:eu-west-1:123456789012:report",
}


def loaded_by(module: str, *then: str) -> set[str]:
    """Every module in sys.modules after `import <module>` (and the statements `then`) in a fresh interpreter."""
    code = "\n".join(("import json, sys", f"import {module}", *then, "print(json.dumps(sorted(sys.modules)))"))
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={**os.environ, **STEP_ENVIRONMENT},
    )
    return set(json.loads(done.stdout))


def loaded_with_wiring(function: str, *then: str) -> set[str]:
    """loaded_by the function's handler, then its wiring built as its first invocation builds it (and `then`)."""
    return loaded_by(
        f"ecr_retention.handlers.{function}",
        f"from ecr_retention.handlers.wiring.{function} import {function}_at_cold_start",
        f"{function}_at_cold_start()",
        *then,
    )


@pytest.mark.parametrize("handler", HANDLERS)
def test_no_handler_loads_the_doctors_checks_or_the_report_page_at_import(handler: str) -> None:
    loaded = loaded_by(f"ecr_retention.handlers.{handler}")

    assert f"ecr_retention.handlers.{handler}" in loaded
    assert [name for name in NEVER_AT_IMPORT if name in loaded] == []


def test_the_workflow_records_load_without_the_run_reports_models() -> None:
    loaded = loaded_by("ecr_retention.workflow")

    assert "ecr_retention.workflow" in loaded
    assert REPORT_MODELS not in loaded
    assert not any(name.startswith("ecr_retention.domain.doctor") for name in loaded)


@pytest.mark.parametrize("handler", PLANS_NOTHING)
def test_a_function_that_plans_nothing_loads_neither_the_planner_nor_the_report(handler: str) -> None:
    loaded = loaded_by(f"ecr_retention.handlers.{handler}")

    assert PLANNER not in loaded
    assert REPORT_MODELS not in loaded


@pytest.mark.parametrize("handler", HANDLERS)
def test_a_workflow_step_loads_its_own_steps_service_and_no_function_loads_the_clis_run(handler: str) -> None:
    loaded = loaded_by(f"ecr_retention.handlers.{handler}")

    own = STEP_SERVICES.get(handler)
    assert [name for name in STEP_SERVICES.values() if name in loaded and name != own] == []
    assert own is None or own in loaded
    assert [name for name in THE_CLIS_RUN if name in loaded] == []


def test_the_targets_step_loads_no_report_hold_manifest_or_image_model_at_import_or_with_its_wiring() -> None:
    loaded = loaded_with_wiring("targets")

    assert "ecr_retention.run_adapters" in loaded  # the wiring was built
    assert [name for name in NOT_IN_THE_TARGETS_STEP if name in loaded] == []
    assert RENDERERS not in loaded


@pytest.mark.parametrize("handler", ["evaluate", "report"])
def test_only_the_report_steps_wiring_loads_the_renderers_and_neither_the_creation_templates_model(
    handler: str,
) -> None:
    loaded = loaded_with_wiring(handler)

    assert "ecr_retention.run_adapters" in loaded
    assert (RENDERERS in loaded) == (handler == "report")
    # Only the report step reads the creation templates, and aws/ecr_registry.py loads their model where an answer
    # holds one (tests/unit/test_creation_templates_model_loaded_when_read.py).
    assert CREATION_TEMPLATES not in loaded


def test_the_sentinel_loads_none_of_the_planner_nor_the_doctors_models() -> None:
    """It diagnoses a policy only on a PutLifecyclePolicy event (services/sentinel.py loads the doctor there)."""
    loaded = loaded_by("ecr_retention.handlers.sentinel")

    assert "ecr_retention.services.sentinel" in loaded
    assert [name for name in (*THE_PLANNER, DOCTOR_MODELS) if name in loaded] == []


def test_the_tagger_loads_none_of_the_plans_models() -> None:
    """It tags what runs (services/act.py tag): no plan."""
    loaded = loaded_by("ecr_retention.handlers.tagger")

    assert "ecr_retention.services.act" in loaded
    assert "ecr_retention.domain.planning.plan" not in loaded


def test_the_sentinel_loads_none_of_the_plans_models() -> None:
    """Its records of removals and the in-use references it matches are camelCase models of the plan's base only."""
    loaded = loaded_by("ecr_retention.handlers.sentinel")

    assert "ecr_retention.domain.planning.plan_model" in loaded
    assert PLAN_MODELS not in loaded


def test_the_evaluate_step_loads_none_of_the_run_reports_models_at_import_or_with_its_wiring() -> None:
    """It builds and stores repository reports; the run's report is the report step's (and the CLI's)."""
    loaded = loaded_with_wiring("evaluate")

    assert REPORT_MODELS in loaded
    assert [name for name in (RUN_REPORT_MODELS, MANIFEST_EVIDENCE) if name in loaded] == []


def test_the_report_step_loads_the_run_reports_models() -> None:
    loaded = loaded_by("ecr_retention.handlers.report")

    assert RUN_REPORT_MODELS in loaded


@pytest.mark.parametrize("handler", HANDLERS)
def test_no_handler_builds_the_eks_clusters_file_model_at_import(handler: str) -> None:
    """Deferred (handlers/wiring/collector.py): built where a collector reads the file, by no other function."""
    code = "\n".join(
        (
            f"import ecr_retention.handlers.{handler}",
            "from ecr_retention.handlers.wiring.collector import EksClustersFile",
            "print(EksClustersFile.__pydantic_complete__)",
        )
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120, env=os.environ.copy()
    )

    assert done.stdout.strip() == "False"


@pytest.mark.parametrize("handler", [handler for handler in HANDLERS if handler != "collector"])
def test_only_the_collector_loads_what_inspectors_manifest_is_built_from(handler: str) -> None:
    loaded = loaded_by(f"ecr_retention.handlers.{handler}")

    assert INSPECTOR_MANIFEST not in loaded


@pytest.mark.parametrize("handler", HANDLERS)
def test_each_function_loads_its_own_wiring_and_settings_model_only(handler: str) -> None:
    loaded = loaded_by(f"ecr_retention.handlers.{handler}")

    wirings = {name for name in loaded if name.startswith("ecr_retention.handlers.wiring.")}
    assert wirings == {f"ecr_retention.handlers.wiring.{handler}"}


def test_the_evaluate_step_loads_none_of_the_runs_own_records_at_import_or_with_its_wiring() -> None:
    """It is given the Map's items (workflow.py); the run's records are the targets and the report steps'."""
    loaded = loaded_with_wiring("evaluate")

    assert "ecr_retention.workflow" in loaded
    assert RUN_RECORDS not in loaded


@pytest.mark.parametrize("handler", HANDLERS)
def test_only_the_functions_that_start_runs_load_what_starts_one_and_only_the_targets_and_report_steps_a_runs_records(
    handler: str,
) -> None:
    loaded = loaded_by(f"ecr_retention.handlers.{handler}")

    assert (RUN_REQUEST in loaded) == (handler in ("targets", "push", "collector"))
    assert (RUN_RECORDS in loaded) == (handler in ("targets", "report"))


@pytest.mark.parametrize("handler", HANDLERS)
def test_no_function_loads_a_repositorys_diagnosis_and_only_the_report_step_a_templates_finding(handler: str) -> None:
    loaded = loaded_by(f"ecr_retention.handlers.{handler}")

    assert DIAGNOSIS_MODEL not in loaded
    assert (TEMPLATE_FINDING in loaded) == (handler == "report")


def test_the_report_step_loads_neither_the_plans_models_nor_the_ledger_with_its_wiring_and_renderers() -> None:
    loaded = loaded_with_wiring("report", "import ecr_retention.report_page.page, ecr_retention.report_sheet")

    assert RENDERERS in loaded
    assert "ecr_retention.domain.planning.plan_parts" in loaded
    assert [name for name in (PLAN_MODELS, "ecr_retention.domain.planning.ledger") if name in loaded] == []


# What the report step uses only on a rare path, loaded there: the sentinel's records of removals and its alert claims
# (services/removals.py), read only for a repository with an in-use reference the next pull cannot get
# (services/in_use_check.py recorded_removals); and what it never uses: Powertools' LambdaContext names the handler's
# argument for type checking only, and the Map's batches (workflow_batches.py) are the targets and evaluate steps'.
NOT_IN_THE_REPORT_STEP = (
    "ecr_retention.services.removals",
    "aws_lambda_powertools.utilities.typing",
    "ecr_retention.workflow_batches",
)


def test_the_report_step_loads_what_it_uses_on_rare_paths_only_there_not_at_import_or_with_its_wiring() -> None:
    loaded = loaded_with_wiring("report")

    assert "ecr_retention.services.in_use_check" in loaded
    assert [name for name in NOT_IN_THE_REPORT_STEP if name in loaded] == []


def test_the_in_use_check_loads_the_removals_records_where_it_reads_them() -> None:
    loaded = loaded_by(
        "ecr_retention.services.in_use_check",
        f"sys.path.insert(0, {str(TESTS)!r})",
        "from support.fakes import MemoryBucket",
        "from ecr_retention.services.in_use_check import recorded_removals",
        "assert 'ecr_retention.services.removals' not in sys.modules",
        "print(recorded_removals(MemoryBucket(name='inventory'), 'app', None), file=sys.stderr)",
    )

    assert "ecr_retention.services.removals" in loaded


GUARD_DELIVERY = (
    "ecr_retention.handlers.guard",
    "ecr_retention.domain.sentinel.guard_events",
    "ecr_retention.services.guard_alerts",
)


def test_the_sentinel_loads_what_alerts_a_guard_delivery_only_when_one_comes() -> None:
    loaded = loaded_with_wiring("sentinel")

    assert "ecr_retention.services.sentinel" in loaded
    assert [name for name in GUARD_DELIVERY if name in loaded] == []


@pytest.mark.parametrize("handler", ["report", "sentinel"])
def test_neither_the_report_step_nor_the_sentinel_loads_the_choice_of_deciding_registries(handler: str) -> None:
    loaded = loaded_with_wiring(handler)

    assert "ecr_retention.registries" in loaded
    assert "ecr_retention.domain.planning.replicas" not in loaded
