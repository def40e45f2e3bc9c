"""The doctor's pass over each pruned registry's repository creation templates, once per run, for the run report.

Templates give new repositories their lifecycle policy (on push, replication, pull-through cache), so a bad one
breaks repositories nobody has declared yet. The pass only informs: a registry whose templates cannot be read
(AccessDenied, throttling, another account's registry) or a doctor defect is a warning in the report, never a
failed or blocked run."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from ecr_retention.defects import Defect, contain
from ecr_retention.domain.doctor.template_finding import TemplateFinding
from ecr_retention.ports import Registry, TemplatesUnreadable
from ecr_retention.registries import Registries

if TYPE_CHECKING:
    # The templates' model: built where the registry's answer holds templates (aws/ecr_registry.py), so that a
    # registry without any builds none of its three models.
    from ecr_retention.domain.registry.creation_templates import RepositoryCreationTemplate

logger = logging.getLogger(__name__)

NOT_CHECKED = "repository creation templates not checked"


@dataclass(frozen=True)
class TemplateCheck:
    findings: tuple[TemplateFinding, ...] = ()
    warnings: tuple[str, ...] = ()

    def named(self, region: str | None) -> TemplateCheck:
        """This check as a run of several Regions words it: each finding and warning names its registry's Region."""
        if region is None:
            return self
        return TemplateCheck(
            tuple(finding.model_copy(update={"region": region}) for finding in self.findings),
            tuple(f"{region}: {warning}" for warning in self.warnings),
        )


def each_registry_templates(registries: Registries) -> TemplateCheck:
    """The templates of every pruned registry (each Region's registry has its own), home Region first; each finding
    and warning names its Region when the run prunes several (PrunedRegistry.named), none when it prunes one."""
    checks = [creation_template_findings(pruned.port).named(pruned.named) for pruned in registries]
    return TemplateCheck(
        tuple(finding for check in checks for finding in check.findings),
        tuple(warning for check in checks for warning in check.warnings),
    )


def creation_template_findings(registry: Registry) -> TemplateCheck:
    """Read the templates once and diagnose each template's lifecycle policy. Neither an unexpected answer nor a
    doctor defect fails the run's report: each is logged and reported as a warning (defects.py)."""
    read = contain(partial(_read_templates, registry), log=logger, what="reading the repository creation templates")
    if isinstance(read, Defect):
        return TemplateCheck(warnings=(f"{NOT_CHECKED}: {read}",))
    if isinstance(read, TemplateCheck):
        return read
    templates = read
    if not templates:  # nothing to diagnose: a registry without templates loads no doctor
        return TemplateCheck()
    # Imported here, when the report step diagnoses the templates it read (once per run): the doctor's checks are no
    # part of the other functions' cold starts.
    from ecr_retention.domain.doctor.templates import diagnose_templates

    findings = contain(
        lambda: diagnose_templates(templates), log=logger, what="diagnosing the repository creation templates"
    )
    if isinstance(findings, Defect):
        return TemplateCheck(warnings=(f"{NOT_CHECKED}: the diagnosis failed: {findings.kind}",))
    return TemplateCheck(findings=tuple(findings))


def _read_templates(registry: Registry) -> list[RepositoryCreationTemplate] | TemplateCheck:
    """The templates, or the warning that they could not be read (TemplatesUnreadable: denied, throttled, ...)."""
    try:
        return registry.creation_templates()
    except TemplatesUnreadable as error:
        logger.warning("repository creation templates not read: %s", error)
        return TemplateCheck(warnings=(f"{NOT_CHECKED}: {error}",))
