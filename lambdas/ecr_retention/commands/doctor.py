"""`ecr-retention doctor`: what a native ECR lifecycle policy would break, and how to fix it."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ecr_retention.commands.lifecycle_preview import (
    add_policy_and_images,
    index_warnings,
    load_images,
    load_policy,
    warn,
)
from ecr_retention.domain.doctor import RepositoryDiagnosis, comparable_config, diagnose
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.lifecycle.evaluation import index_children
from ecr_retention.domain.plan import RepositoryPlan
from ecr_retention.domain.planner import plan_registry
from ecr_retention.domain.registry import RepositorySnapshot, Snapshot
from ecr_retention.domain.replication import NO_REPLICATION
from ecr_retention.loading import load_config, load_manifests, parse_now
from ecr_retention.tables import printable


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "doctor",
        help="find what a native ECR lifecycle policy would break",
        description="Check a native ECR lifecycle policy against the images, the in-use manifests and the rules "
        "file: each finding has a severity and a concrete fix. Exit 1 when an error-severity finding exists, "
        "0 otherwise, 2 on bad input.",
    )
    add_policy_and_images(parser)
    parser.add_argument("--manifests", help="directory of in-use manifests (<cluster>.json)")
    parser.add_argument("--config", help="the rules file (retention.yaml), to compare with the pipeline's plan")
    parser.add_argument("--now", help="evaluate as of this ISO 8601 time (default: the current time)")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    document = load_policy(args.policy)
    found = load_images(args.images, args.repository)
    inventory = load_manifests(args.manifests)
    warn(
        [
            f"{source}: unreadable in-use manifest: {problem}; the in-use check cannot see its images"
            for source, problem in sorted(inventory.problems.items())
        ]
    )
    now = parse_now(args.now)
    repository_name = found.repository_name or document.repository_name
    registry_id = found.registry_id or document.registry_id
    plan: RepositoryPlan | None = None
    if args.config is not None:
        config = comparable_config(load_config(args.config))
        if repository_name is None or len(repository_name) < 2:
            raise InputError(f"{args.images}: the images do not name their repository; pass --repository")
        snapshot = Snapshot(
            registry_id=registry_id,
            region=found.region,
            replication=found.replication,
            repositories=(
                RepositorySnapshot(
                    repository_name=repository_name, image_details=found.images, manifests=found.manifests
                ),
            ),
        )
        plans = plan_registry(config, snapshot, inventory, now).repositories
        plan = next((p for p in plans if p.repository_name == repository_name and p.policy is not None), None)
        if plan is None:
            warn([f"{args.config}: no policy matches repository {repository_name}; the plan is not compared"])
    if repository_name is None and inventory.protecting:
        warn(["the images do not name their repository: in-use tag references are not matched (pass --repository)"])
    diagnosis = diagnose(
        document.policy,
        found.images,
        now=now,
        manifests=found.manifests,
        repository_name=repository_name,
        registry_id=registry_id,
        region=found.region,
        inventory=inventory,
        plan=plan,
        replication=found.replication or NO_REPLICATION,
    )
    warn(index_warnings(index_children(found.images, found.manifests)[1]))
    if args.format == "json":
        json.dump(diagnosis.to_json_dict(), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print(render_diagnosis(diagnosis))
    return 1 if diagnosis.has_errors else 0


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
    if diagnosis.fixed_policy is not None:
        lines.append("")
        lines.append(
            f"fixed policy{name}: every fix above applied together, and checked again: "
            "nothing is left that a policy change fixes"
        )
        lines.extend(json.dumps(diagnosis.fixed_policy, indent=2, ensure_ascii=False).splitlines())
        for finding in diagnosis.fixed_policy_findings:
            lines.append(f"still, with the fixed policy: {finding.severity.upper()}  {finding.code}: {finding.message}")
    elif diagnosis.fixed_policy_problem is not None:
        lines.append("")
        lines.append(f"no fixed policy{name}: {diagnosis.fixed_policy_problem}")
    # Escapes keep the policy JSON valid: `\u202e` in a JSON string is the character itself.
    return "\n".join(printable(line) for line in lines)
