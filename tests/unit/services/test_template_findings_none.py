"""A registry without repository creation templates has nothing for the doctor to diagnose: the run's end finds no
template finding and no warning, and loads none of the doctor's checks (services/templates.py), which a registry with
templates loads as before."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from ecr_retention.services.templates import TemplateCheck, creation_template_findings
from support.fakes import FakeRegistry

CHECK = """
import json, sys
from ecr_retention.domain.registry.creation_templates import RepositoryCreationTemplate
from ecr_retention.services.templates import creation_template_findings
from support.fakes import FakeRegistry
registry = FakeRegistry()
if sys.argv[1] == "with":
    registry.templates = [RepositoryCreationTemplate(prefix="plain/", applied_for=("REPLICATION",))]
check = creation_template_findings(registry)
doctor = "ecr_retention.domain.doctor.templates"
print(json.dumps({"loaded": doctor in sys.modules, "findings": len(check.findings), "warnings": len(check.warnings)}))
"""


def run_end(templates: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", CHECK, templates],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


def test_a_registry_without_templates_has_no_finding_and_no_warning() -> None:
    assert creation_template_findings(FakeRegistry()) == TemplateCheck()


def test_only_a_registry_with_templates_loads_the_doctors_checks() -> None:
    assert run_end("without") == {"loaded": False, "findings": 0, "warnings": 0}
    assert run_end("with")["loaded"] is True
