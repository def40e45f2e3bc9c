"""What each function's handler loads at its cold start, read from `sys.modules` after importing it in a fresh
interpreter: what a function uses only on some paths, or never, stays out of its import (issue 46, item 4:
benchmarks/asset_bench.py measures the time; this keeps the structure that gives it, without timing anything).

- the doctor's checks load only when something is diagnosed (a repository's native policy in the evaluate step, the
  creation templates in the report step, a PutLifecyclePolicy in the sentinel), never at import;
- the report step's page and sheet (Jinja2) only when the report step renders them (handlers/wiring.py);
- the workflow's records (workflow.py) without the run report's models and what they hold (the planner's, the
  doctor's), so that the functions that only start or name runs (push, collector, tagger) build none of them;
- the planner's models only in the functions that plan or report (the push function asks only which policy manages a
  repository, the tagger and the collector plan nothing).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HANDLERS = ("targets", "evaluate", "report", "push", "tagger", "collector", "sentinel")
NEVER_AT_IMPORT = (
    "jinja2",
    "ecr_retention.report_page",
    "ecr_retention.report_sheet",
    "ecr_retention.domain.doctor.checks",
    "ecr_retention.domain.doctor.diagnosis",
    "ecr_retention.domain.doctor.templates",
)
REPORT_MODELS = "ecr_retention.domain.reporting.report"
PLANNER = "ecr_retention.domain.planning.run"
PLANS_NOTHING = ("push", "tagger", "collector")


def loaded_by(module: str) -> set[str]:
    """Every module in sys.modules after `import <module>` in a fresh interpreter."""
    code = f"import json, sys\nimport {module}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    return set(json.loads(done.stdout))


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
