"""The doctor's entry points: `diagnose` for the CLI, `diagnose_repository` for the pipeline."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.doctor.checks import run_checks
from ecr_retention.domain.doctor.context import DoctorContext
from ecr_retention.domain.doctor.diagnosis_model import RepositoryDiagnosis
from ecr_retention.domain.doctor.fixes import merge_fixes
from ecr_retention.domain.doctor.models import Finding
from ecr_retention.domain.doctor.tag_kinds import DEFAULT_TAG_KINDS, TagKinds
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.in_use.index import InUseIndex
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.lifecycle.evaluation import evaluate
from ecr_retention.domain.lifecycle.parsing import parse_policy
from ecr_retention.domain.lifecycle.policy import LifecyclePolicy
from ecr_retention.domain.planning.plan import RepositoryPlan
from ecr_retention.domain.registry.coordinates import UNKNOWN_REGISTRY, RegistryCoordinates
from ecr_retention.domain.registry.images import ImageDetail, RepositorySnapshot


def diagnose(
    policy: LifecyclePolicy,
    images: Sequence[ImageDetail],
    *,
    now: datetime,
    manifests: Mapping[str, Mapping[str, Any]] | None = None,
    repository_name: str | None = None,
    registry: RegistryCoordinates = UNKNOWN_REGISTRY,
    inventory: Inventory | None = None,
    plan: RepositoryPlan | None = None,
    tag_kinds: TagKinds = DEFAULT_TAG_KINDS,
) -> RepositoryDiagnosis:
    """Every finding for one repository's native policy, and one fixed policy with every policy edit of
    the findings applied. `plan` is the pipeline's plan for the same repository (unblocked: see
    `comparable_config`), or None to skip the rules-file checks. `registry`: its replication
    rules, whose delete-replicating destinations' in-use references count as this registry's, since ECR repeats
    every expiry there. `tag_kinds`: which tags move (the heuristic, with the user's patterns)."""
    known_manifests = manifests or {}
    inventory = inventory or Inventory()
    in_use = InUseIndex.build(inventory.protecting, registry)

    def find(candidate: LifecyclePolicy) -> list[Finding]:
        evaluation = evaluate(candidate, images, now, known_manifests)
        context = DoctorContext(
            candidate,
            evaluation,
            repository_name=repository_name,
            in_use=in_use,
            plan=plan,
            manifests=known_manifests,
            tag_kinds=tag_kinds,
        )
        return run_checks(context)

    findings = find(policy)
    fixed = merge_fixes(policy, findings, find)
    return RepositoryDiagnosis(
        repository_name=repository_name,
        findings=tuple(findings),
        in_use_checked=bool(inventory.manifests),
        fixed_policy=fixed.policy,
        fixed_policy_problem=fixed.problem,
        fixed_policy_findings=fixed.findings,
        expiries_replicate_to=tuple(
            f"{replica.region} ({replica.registry_id})"
            for replica in registry.replication.deletion_reach(repository_name or "")
            if repository_name
        ),
    )


def comparable_config(config: RetentionConfig) -> RetentionConfig:
    """The rules file without the run-level brakes (fresh-manifest block, max_delete_fraction), so that
    the plan says what the rules decide for each image. In-use manifests still protect their images."""
    safety = config.safety.model_copy(update={"clusters": (), "max_delete_fraction": 1.0})
    return config.model_copy(update={"safety": safety})


def diagnose_repository(
    policy_text: str,
    repository: RepositorySnapshot,
    *,
    now: datetime,
    inventory: Inventory,
    plan: RepositoryPlan | None = None,
    registry: RegistryCoordinates = UNKNOWN_REGISTRY,
) -> RepositoryDiagnosis:
    """What the pipeline calls for each repository with a native lifecycle policy (the text that
    `get-lifecycle-policy` returns). A policy this module cannot read is a finding, not a failure."""
    try:
        policy = parse_policy(policy_text, f"lifecycle policy of {repository.repository_name}")
    except InputError as error:
        finding = Finding(
            severity="warning",
            code="policy-invalid",
            message=str(error),
            fix="check the policy with `ecr-retention lifecycle-preview`; ECR may accept what this simulator rejects",
        )
        return RepositoryDiagnosis(repository_name=repository.repository_name, findings=(finding,))
    return diagnose(
        policy,
        repository.image_details,
        now=now,
        manifests=repository.manifests,
        repository_name=repository.repository_name,
        registry=registry,
        inventory=inventory,
        plan=plan,
    )
