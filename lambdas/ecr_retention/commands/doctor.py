"""`ecr-retention doctor`: what a native ECR lifecycle policy would break, and how to fix it."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ecr_retention.commands.lifecycle_preview import (
    RepositoryImages,
    add_policy_and_images,
    index_warnings,
    load_images,
    load_policy,
    lookalike_host_warnings,
    warn,
)
from ecr_retention.domain.doctor.diagnosis import comparable_config, diagnose
from ecr_retention.domain.doctor.diagnosis_model import RepositoryDiagnosis
from ecr_retention.domain.doctor.models import SEVERITY_ORDER
from ecr_retention.domain.doctor.tag_kinds import DEFAULT_TAG_KINDS, TagKinds
from ecr_retention.domain.doctor.template_finding import TemplateFinding
from ecr_retention.domain.doctor.templates import diagnose_template, template_policy
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.lifecycle.evaluation import index_children
from ecr_retention.domain.limits import CREATION_TEMPLATES
from ecr_retention.domain.planning import plan_registry
from ecr_retention.domain.planning.plan import RepositoryPlan
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.domain.registry.creation_templates import CreationTemplatesDocument, RepositoryCreationTemplate
from ecr_retention.domain.registry.images import RepositorySnapshot, Snapshot
from ecr_retention.loading import load_config, load_manifests, parse_now, read_json, validate_as
from ecr_retention.tables import printable


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "doctor",
        help="find what a native ECR lifecycle policy would break",
        description="Check a native ECR lifecycle policy against the images, the in-use manifests and the rules "
        "file: each finding has a severity and a concrete fix. Exit 1 when a finding of the --fail-on severity or a "
        "graver one exists (by default an error), 0 otherwise, 2 on bad input.",
    )
    add_policy_and_images(parser, required=False)
    parser.add_argument("--manifests", help="directory of in-use manifests (<cluster>.json)")
    parser.add_argument("--config", help="the rules file (retention.yaml), to compare with the pipeline's plan")
    parser.add_argument("--now", help="evaluate as of this ISO 8601 time (default: the current time)")
    parser.add_argument(
        "--templates",
        help="`aws ecr describe-repository-creation-templates` output: check the lifecycle policy of each template "
        "(structural checks, no images); on its own, without --policy and --images",
    )
    parser.add_argument(
        "--mutable-tag",
        action="append",
        default=[],
        metavar="PATTERN",
        help="a tag pattern (ECR's `*`) of tags that move, beyond the heuristic (no digit, not a commit id); repeatable",
    )
    parser.add_argument(
        "--build-tag",
        action="append",
        default=[],
        metavar="PATTERN",
        help="a tag pattern of tags that name one build, though the heuristic calls them mutable; repeatable",
    )
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument(
        "--fail-on",
        choices=SEVERITY_ORDER,
        default="error",
        help="exit 1 when a finding of this severity or a graver one exists: error (the default), warning (a CI gate "
        "that lets no warning through), info (any finding)",
    )
    parser.set_defaults(run=run)


def fails(counts: Mapping[str, int], fail_on: str) -> bool:
    """Whether findings of the `--fail-on` severity or a graver one exist (SEVERITY_ORDER: gravest first)."""
    return any(counts.get(severity, 0) for severity in SEVERITY_ORDER[: SEVERITY_ORDER.index(fail_on) + 1])


def tag_kinds(args: argparse.Namespace) -> TagKinds:
    """The heuristic with the user's patterns; an empty pattern is bad input."""
    for option, patterns in (("--mutable-tag", args.mutable_tag), ("--build-tag", args.build_tag)):
        if any(not pattern for pattern in patterns):
            raise InputError(f"{option}: a tag pattern must not be empty")
    return TagKinds(mutable=tuple(args.mutable_tag), build=tuple(args.build_tag))


# The options that only a repository's check reads: a template has no images, manifests or plan.
REPOSITORY_OPTIONS = ("policy", "images", "repository", "manifests", "config", "now")


def run(args: argparse.Namespace) -> int:
    if args.templates is not None:
        _only_templates(args)
        return run_templates(args.templates, args.format, tag_kinds(args), args.fail_on)
    missing = [f"--{name}" for name in ("policy", "images") if getattr(args, name) is None]
    if missing:
        raise InputError(f"the following arguments are required: {', '.join(missing)} (or --templates FILE)")
    return run_repository(args)


def _only_templates(args: argparse.Namespace) -> None:
    given = [f"--{name}" for name in REPOSITORY_OPTIONS if getattr(args, name) is not None]
    if given:
        raise InputError(
            f"--templates checks repository creation templates on their own (they have no images); "
            f"it cannot be combined with {', '.join(given)}"
        )


def run_repository(args: argparse.Namespace) -> int:
    document = load_policy(args.policy)
    found = load_images(args.images, args.repository)
    inventory = load_manifests(args.manifests)
    warn(_unreadable_manifests(inventory))
    now = parse_now(args.now)
    repository_name = found.repository_name or document.repository_name
    registry = found.registry.known_as(document.registry_id)
    plan: RepositoryPlan | None = None
    if args.config is not None:
        plan = _pipeline_plan(args.config, args.images, found, inventory, now, repository_name, registry)
    if repository_name is None and inventory.protecting:
        warn(["the images do not name their repository: in-use tag references are not matched (pass --repository)"])
    diagnosis = diagnose(
        document.policy,
        found.images,
        now=now,
        manifests=found.manifests,
        repository_name=repository_name,
        registry=registry,
        inventory=inventory,
        plan=plan,
        tag_kinds=tag_kinds(args),
    )
    warn(index_warnings(index_children(found.images, found.manifests)[1]))
    warn(lookalike_host_warnings(inventory))
    _print_diagnosis(diagnosis, args.format)
    return 1 if fails(_counts(diagnosis), args.fail_on) else 0


def _counts(diagnosis: RepositoryDiagnosis) -> dict[str, int]:
    return {severity: diagnosis.count(severity) for severity in SEVERITY_ORDER}


def _unreadable_manifests(inventory: Inventory) -> list[str]:
    return [
        f"{source}: unreadable in-use manifest: {problem}; the in-use check cannot see its images"
        for source, problem in sorted(inventory.problems.items())
    ]


def _pipeline_plan(
    config_path: str,
    images_path: str,
    found: RepositoryImages,
    inventory: Inventory,
    now: datetime,
    repository_name: str | None,
    registry: RegistryCoordinates,
) -> RepositoryPlan | None:
    """The plan the pipeline makes for the repository with the rules file at `config_path`; None (with a
    warning) when no policy of the rules file matches the repository."""
    config = comparable_config(load_config(config_path))
    if repository_name is None or len(repository_name) < 2:
        raise InputError(f"{images_path}: the images do not name their repository; pass --repository")
    snapshot = Snapshot(
        registry_id=registry.registry_id,
        region=registry.region,
        replication=registry.replication,
        repositories=(
            RepositorySnapshot(repository_name=repository_name, image_details=found.images, manifests=found.manifests),
        ),
    )
    plans = plan_registry(config, snapshot, inventory, now).repositories
    plan = next((p for p in plans if p.repository_name == repository_name and p.policy is not None), None)
    if plan is None:
        warn([f"{config_path}: no policy matches repository {repository_name}; the plan is not compared"])
    return plan


def _print_diagnosis(diagnosis: RepositoryDiagnosis, output: str) -> None:
    if output == "json":
        json.dump(diagnosis.to_json_dict(), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print(render_diagnosis(diagnosis))


def render_diagnosis(diagnosis: RepositoryDiagnosis) -> str:
    name = f" for {diagnosis.repository_name}" if diagnosis.repository_name else ""
    lines = [
        f"lifecycle doctor{name}: {diagnosis.count('error')} errors, {diagnosis.count('warning')} warnings, "
        f"{diagnosis.count('info')} notes"
    ]
    lines.extend(f"note: {note}" for note in diagnosis.notes)
    for finding in diagnosis.findings:
        lines.append("")
        lines.append(f"{finding.severity.upper()}  {finding.code}: {finding.message}")
        lines.append(f"  fix: {finding.fix}")
        if finding.policy_edit is not None:
            lines.append(f"  in the fixed policy: {finding.policy_edit}")
    lines.extend(_fixed_policy_lines(diagnosis, name))
    # Escapes keep the policy JSON valid: `\u202e` in a JSON string is the character itself.
    return "\n".join(printable(line) for line in lines)


def _fixed_policy_lines(diagnosis: RepositoryDiagnosis, name: str) -> list[str]:
    """The fixed policy and what it still leaves, or why there is none; nothing when no finding has an edit."""
    if diagnosis.fixed_policy is not None:
        return [
            "",
            f"fixed policy{name}: every fix above applied together, and checked again: "
            "nothing is left that a policy change fixes",
            *json.dumps(diagnosis.fixed_policy, indent=2, ensure_ascii=False).splitlines(),
            *(
                f"still, with the fixed policy: {finding.severity.upper()}  {finding.code}: {finding.message}"
                for finding in diagnosis.fixed_policy_findings
            ),
        ]
    if diagnosis.fixed_policy_problem is not None:
        return ["", f"no fixed policy{name}: {diagnosis.fixed_policy_problem}"]
    return []


def load_templates(path: str) -> CreationTemplatesDocument:
    """The templates file, each template's lifecycle policy validated: InputError names the file and the prefix."""
    data = read_json(path, CREATION_TEMPLATES)
    if not isinstance(data, dict) or not isinstance(data.get("repositoryCreationTemplates"), list):
        raise InputError(
            f"{path}: expected `aws ecr describe-repository-creation-templates` output, a JSON object with a "
            "repositoryCreationTemplates list"
        )
    document = validate_as(CreationTemplatesDocument, data, path)
    for template in document.repository_creation_templates:
        template_policy(template, path)
    return document


def run_templates(path: str, output: str, kinds: TagKinds = DEFAULT_TAG_KINDS, fail_on: str = "error") -> int:
    document = load_templates(path)
    checked = [
        (t, diagnose_template(t, kinds)) for t in sorted(document.repository_creation_templates, key=lambda t: t.prefix)
    ]
    counts = _severity_counts([finding for _, found in checked for finding in found])
    if output == "json":
        json.dump(_templates_json(document, checked, counts), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print(render_templates(document, checked, counts))
    return 1 if fails(counts, fail_on) else 0


def _severity_counts(findings: Sequence[TemplateFinding]) -> dict[str, int]:
    return {s: sum(1 for f in findings if f.severity == s) for s in SEVERITY_ORDER}


def _templates_json(
    document: CreationTemplatesDocument,
    checked: list[tuple[RepositoryCreationTemplate, list[TemplateFinding]]],
    counts: Mapping[str, int],
) -> dict[str, Any]:
    return {
        "registryId": document.registry_id,
        "templates": [
            {
                "prefix": template.prefix,
                "appliedFor": list(template.applied_for),
                "hasLifecyclePolicy": template.has_lifecycle_policy,
                "findings": [finding.to_json_dict() for finding in found],
            }
            for template, found in checked
        ],
        "summary": {severity + "s": count for severity, count in counts.items()},
    }


def render_templates(
    document: CreationTemplatesDocument,
    checked: list[tuple[RepositoryCreationTemplate, list[TemplateFinding]]],
    counts: Mapping[str, int],
) -> str:
    registry = f" of registry {document.registry_id}" if document.registry_id else ""
    lines = [
        f"lifecycle doctor for {len(checked)} repository creation templates{registry}: {counts['error']} errors, "
        f"{counts['warning']} warnings, {counts['info']} notes"
    ]
    for template, found in checked:
        lines.extend(_template_lines(template, found))
    return "\n".join(printable(line) for line in lines)


def _template_lines(template: RepositoryCreationTemplate, found: Sequence[TemplateFinding]) -> list[str]:
    state = (
        "no lifecycle policy"
        if not template.has_lifecycle_policy
        else f"{len(found)} finding{'' if len(found) == 1 else 's'}"
    )
    lines = ["", f"template {template.prefix} [{', '.join(template.applied_for)}]: {state}"]
    for finding in found:
        lines.append(f"  {finding.severity.upper()}  {finding.code}: {finding.message}")
        lines.append(f"    fix: {finding.fix}")
        if finding.policy_edit is not None:
            lines.append(f"    policy change: {finding.policy_edit}")
    return lines
