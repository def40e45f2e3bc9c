"""The lifecycle doctor: what a native ECR lifecycle policy would break, each finding with a severity and
a concrete fix (policy JSON written out where a policy change fixes it).

Pure: the caller passes the policy, the images, the in-use inventory and, optionally, the plan that the
pipeline makes for the same repository. The pipeline calls `diagnose_repository` for each repository
that has a native policy and puts the result in its run report.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.in_use import InUseIndex
from ecr_retention.domain.inventory import Inventory, Workload
from ecr_retention.domain.lifecycle import (
    LifecycleEvaluation,
    LifecyclePolicy,
    LifecycleRule,
    evaluate,
    parse_policy,
    selection_includes,
    tags_selected,
)
from ecr_retention.domain.plan import Decision, RepositoryPlan
from ecr_retention.domain.registry import INDEX_MEDIA_TYPES, ImageDetail, RepositorySnapshot

Severity = Literal["error", "warning", "info"]
FindingCode = Literal[
    "policy-invalid",
    "expires-in-use",
    "expires-kept-image",
    "mutable-tag-expires",
    "mutable-tag-at-risk",
    "rule-shadowed",
    "count-reduced",
    "untagged-rule-multi-arch",
    "differs-from-plan",
    "plan-not-compared",
]
SEVERITY_ORDER: tuple[Severity, ...] = ("error", "warning", "info")
_AGE_WORD = {
    "imageCountMoreThan": "pushed",
    "sinceImagePushed": "pushed",
    "sinceImagePulled": "last pulled",
    "sinceImageTransitioned": "archived",
}
PROTECTIVE_KINDS = frozenset({"keep-rule", "in-use"})


class DoctorModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class Finding(DoctorModel):
    severity: Severity
    code: FindingCode
    message: str
    fix: str
    rule_priority: int | None = None
    image_digest: str | None = None
    image_tags: tuple[str, ...] = ()
    in_use_by: tuple[Workload, ...] = ()
    fix_policy: dict[str, Any] | None = None


class RepositoryDiagnosis(DoctorModel):
    repository_name: str | None = None
    findings: tuple[Finding, ...]

    def count(self, severity: Severity) -> int:
        return sum(1 for finding in self.findings if finding.severity == severity)

    @property
    def has_errors(self) -> bool:
        return self.count("error") > 0

    def to_json_dict(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        for finding in data["findings"]:
            for key in ("imageTags", "inUseBy"):
                if not finding[key]:
                    del finding[key]
        data["summary"] = {severity + "s": self.count(severity) for severity in SEVERITY_ORDER}
        return data


# --- helpers --------------------------------------------------------------------------------------


def short(digest: str) -> str:
    algorithm, _, hexdigits = digest.partition(":")
    return f"{algorithm}:{hexdigits[:12]}"


def describe_image(image: ImageDetail) -> str:
    tags = f" [{', '.join(image.image_tags)}]" if image.image_tags else " (untagged)"
    return short(image.image_digest) + tags


def is_mutable_tag(tag: str) -> bool:
    """House heuristic: a tag without a digit (latest, dev, main, stable) names a moving target; a tag
    with one (1.12.370, v2, 3f2c1a9, sha256-....sig, pr-123) names a build."""
    return not any(character.isdigit() for character in tag)


def protective_tag(image: ImageDetail) -> str:
    """The tag to pin an image by: a build tag stays on it, a mutable tag moves on."""
    return min(image.image_tags, key=lambda tag: (is_mutable_tag(tag), tag))


def keep_one_rule(priority: int, tag: str) -> dict[str, Any]:
    """Seed 002's fix: a rule that selects the one image carrying `tag` and keeps it (count 1)."""
    return {
        "rulePriority": priority,
        "description": f"keep the image tagged {tag}",
        "selection": {
            "tagStatus": "tagged",
            "tagPatternList": [tag],
            "countType": "imageCountMoreThan",
            "countNumber": 1,
        },
        "action": {"type": "expire"},
    }


def _checked(policy: dict[str, Any]) -> dict[str, Any] | None:
    """The fix as policy JSON, or None when ECR would reject it (for example more than 50 rules)."""
    try:
        parse_policy(json.dumps(policy, indent=2))
    except InputError:
        return None
    return policy


def with_keep_rules(policy: LifecyclePolicy, tags: Iterable[str]) -> dict[str, Any] | None:
    """The policy with a keep-1 rule per tag ahead of every existing rule; existing priorities shift."""
    tags = sorted(set(tags))
    rules = [keep_one_rule(index + 1, tag) for index, tag in enumerate(tags)]
    for rule in policy.ordered_rules:
        data = rule.model_dump(mode="json", by_alias=True, exclude_none=True)
        data["rulePriority"] = rule.rule_priority + len(tags)
        rules.append(data)
    return _checked({"rules": rules})


def with_count(policy: LifecyclePolicy, priority: int, count: int) -> dict[str, Any] | None:
    data = policy.to_json_dict()
    for rule in data["rules"]:
        if rule["rulePriority"] == priority:
            rule["selection"]["countNumber"] = count
    return _checked(data)


def without_rules(policy: LifecyclePolicy, priorities: Iterable[int]) -> dict[str, Any] | None:
    drop = set(priorities)
    data = policy.to_json_dict()
    data["rules"] = [rule for rule in data["rules"] if rule["rulePriority"] not in drop]
    return _checked(data) if data["rules"] else None


def _removes(action: str | None) -> str:
    return "archive" if action == "TRANSITION" else "expire"


def _plan_keep_reasons(decision: Decision) -> tuple[str, ...]:
    return tuple(reason.kind for reason in decision.reasons if reason.kind in PROTECTIVE_KINDS)


# --- the checks -----------------------------------------------------------------------------------


class Doctor:
    def __init__(
        self,
        policy: LifecyclePolicy,
        evaluation: LifecycleEvaluation,
        *,
        repository_name: str | None,
        in_use: InUseIndex,
        plan: RepositoryPlan | None,
        manifests: Mapping[str, Mapping[str, Any]],
    ) -> None:
        self.policy = policy
        self.evaluation = evaluation
        self.repository_name = repository_name
        self.in_use = in_use
        self.plan = plan
        self.manifests = manifests
        self.findings: list[Finding] = []

    def usages(self, image: ImageDetail) -> list[Workload]:
        if self.repository_name is not None:
            return self.in_use.usages(self.repository_name, image)
        return list(self.in_use.by_digest.get(image.image_digest, ()))

    def run(self) -> list[Finding]:
        self.check_plan_keeps()
        self.check_in_use()
        self.check_mutable_tags()
        self.check_shadowed_rules()
        self.check_count_reduced()
        self.check_untagged_with_multi_arch()
        self.check_against_plan()
        return sorted(
            self.findings,
            key=lambda f: (SEVERITY_ORDER.index(f.severity), f.rule_priority or 0, f.code, f.image_digest or ""),
        )

    # 1. in use
    def check_in_use(self) -> None:
        for image in self.evaluation.images:
            action = self.evaluation.action_of(image.image_digest)
            usages = self.usages(image)
            if action is None or not usages:
                continue
            workloads = tuple(dict.fromkeys(usages))
            rule = self._rule_for(image)
            where = "; ".join(
                f"cluster {w.cluster}, namespace {w.namespace}, {w.workload} ({w.source})" for w in workloads[:3]
            ) + (f" and {len(workloads) - 3} more" if len(workloads) > 3 else "")
            verb = _removes(action)
            target = self._acted_image(image)  # a referrer goes with its subject: protect the subject
            if target.image_tags:
                which = "this image" if target is image else f"its subject {describe_image(target)}"
                fix = (
                    f"add a higher-priority rule that selects {which} by its tag, so that no later rule can "
                    f"{verb} it (policy below). Native rules cannot see clusters: a durable fix is to drop the "
                    f"rule and let ecr-retention prune this repository, which keeps in-use images"
                )
                used_tags = [t for t in target.image_tags if (self.repository_name, t) in self.in_use.by_tag]
                fix_policy = with_keep_rules(self.policy, used_tags or [protective_tag(target)])
            else:
                fix = (
                    "an untagged image cannot be protected by a native rule: tag deployed images (ecr-retention "
                    "tagging adds deployed-<cluster>-<time>) and protect that tag pattern with a higher-priority "
                    "rule, or drop the rule and let ecr-retention prune this repository"
                )
                fix_policy = None
            self.findings.append(
                Finding(
                    severity="error",
                    code="expires-in-use",
                    message=f"{rule} would {verb} {describe_image(image)}, which runs in {where}",
                    fix=fix,
                    rule_priority=self._priority_for(image),
                    image_digest=image.image_digest,
                    image_tags=image.image_tags,
                    in_use_by=workloads,
                    fix_policy=fix_policy,
                )
            )

    # 2a. images the rules file keeps
    def check_plan_keeps(self) -> None:
        """Images the policy removes that the rules file keeps (needs the plan)."""
        if self.plan is None:
            return
        decisions = {d.image_digest: d for d in self.plan.images}
        for image in self.evaluation.images:
            action = self.evaluation.action_of(image.image_digest)
            found = decisions.get(image.image_digest)
            if action is None or found is None:
                continue
            keeps = [r for r in found.reasons if r.kind == "keep-rule"]
            if not keeps:
                continue
            target = self._acted_image(image)  # a referrer goes with its subject: protect the subject
            rules = ", ".join(dict.fromkeys(r.rule or r.detail for r in keeps))
            self.findings.append(
                Finding(
                    severity="error",
                    code="expires-kept-image",
                    message=(
                        f"{self._rule_for(image)} would {_removes(action)} {describe_image(image)}, "
                        f"which the rules file keeps ({rules})"
                    ),
                    fix=(
                        "protect the image's tag with a higher-priority keep-1 rule (policy below), or drop the "
                        "native rule and let ecr-retention apply the rules file"
                        if target.image_tags
                        else "an untagged image cannot be protected by a native rule; drop the native rule "
                        "and let ecr-retention apply the rules file"
                    ),
                    rule_priority=self._priority_for(image),
                    image_digest=image.image_digest,
                    image_tags=image.image_tags,
                    fix_policy=with_keep_rules(self.policy, [protective_tag(target)]) if target.image_tags else None,
                )
            )

    # 2b. mutable tags riding on images that a rule selects through another tag
    def check_mutable_tags(self) -> None:
        at_risk: list[tuple[ImageDetail, tuple[str, ...], LifecycleRule]] = []
        for image in self.evaluation.images:
            mutable = tuple(tag for tag in image.image_tags if is_mutable_tag(tag))
            if not mutable:
                continue
            first = self.evaluation.first_selector.get(image.image_digest)
            if first is None:
                continue
            rule = self.evaluation.rule(first).rule
            others = tuple(tag for tag in image.image_tags if tag not in mutable)
            acted = self.evaluation.action_of(image.image_digest) is not None
            if acted or tags_selected(rule.selection, others):
                # Removed now, or selected first by a rule that does not need the mutable tag to see it.
                # Otherwise the first rule to see the image selects it through the mutable tag itself
                # and does not act on it: the keep-1 protection of seed 002.
                at_risk.append((image, mutable, rule))
        if not at_risk:
            return
        all_mutable = sorted({tag for _, mutable, _ in at_risk for tag in mutable})
        fix_policy = with_keep_rules(self.policy, all_mutable)
        fix = (
            "give each mutable tag its own keep-1 rule (tagPatternList [tag], imageCountMoreThan 1) at a higher "
            "priority than every other rule (policy below): the image carrying the tag is then selected first "
            "by that rule, which never expires it, and lower rules cannot act on it; when the tag moves on, "
            "the old image falls back to the other rules. Add a rule whenever you add a mutable tag."
        )
        for image, mutable, rule in at_risk:
            action = self.evaluation.action_of(image.image_digest)
            verdict_rule = self._rule_for(image) if action is not None else rule.label
            tags = ", ".join(mutable)
            others = tuple(tag for tag in image.image_tags if tag not in mutable)
            if not tags_selected(rule.selection, others):
                how = "through the mutable tag itself"
            elif rule.selection.tag_status == "any":
                how = "as it selects every image"
            else:
                how = f"through its other tags ({', '.join(others)})"
            if action is not None:
                severity: Severity = "error"
                code: FindingCode = "mutable-tag-expires"
                message = (
                    f"{verdict_rule} selects {describe_image(image)} {how} and would {_removes(action)} it: "
                    f"ECR removes images, not tags, so the mutable tag {tags} goes with it"
                )
            else:
                severity, code = "warning", "mutable-tag-at-risk"
                message = (
                    f"mutable tag {tags} rides on {describe_image(image)}, which {rule.label} selects {how}; "
                    f"once the rule's {self._limit(rule)} passes it, the tag goes with the image"
                )
            self.findings.append(
                Finding(
                    severity=severity,
                    code=code,
                    message=message,
                    fix=fix,
                    rule_priority=self._priority_for(image) or rule.rule_priority,
                    image_digest=image.image_digest,
                    image_tags=image.image_tags,
                    fix_policy=fix_policy,
                )
            )

    @staticmethod
    def _limit(rule: LifecycleRule) -> str:
        number = rule.selection.count_number
        if rule.is_count_rule:
            return f"count of {number} (newer images selected by it)"
        return f"limit of {number} days since the image was {_AGE_WORD[rule.selection.count_type]}"

    # 3a. rules that can never act
    def check_shadowed_rules(self) -> None:
        rules = self.policy.ordered_rules
        for position, lower in enumerate(rules):
            for higher in rules[:position]:
                if not selection_includes(higher.selection, lower.selection):
                    continue
                self.findings.append(
                    Finding(
                        severity="warning",
                        code="rule-shadowed",
                        message=(
                            f"{lower.label} can never act: every image it selects is selected first by "
                            f"{higher.label}, and a lower rule cannot act on an image a higher rule selects"
                        ),
                        fix=(
                            f"remove {lower.label} (same outcome; policy below), or, if it is meant to act, give it "
                            f"a lower rulePriority number than {higher.label}"
                        ),
                        rule_priority=lower.rule_priority,
                        fix_policy=without_rules(self.policy, [lower.rule_priority]),
                    )
                )
                break

    # 3b. count rules whose kept slots are taken by images they cannot act on
    def check_count_reduced(self) -> None:
        for rule_evaluation in self.evaluation.rules:
            rule = rule_evaluation.rule
            blocked = rule_evaluation.window_blocked
            if not rule.is_count_rule or not blocked:
                continue
            number = rule.selection.count_number
            taken = ", ".join(
                describe_image(image) + (f" (selected by rule {by})" if by is not None else " (index child)")
                for image, by in blocked
            )
            own = number - len(blocked)
            acted = rule_evaluation.acted
            # Images it can never act on may also sit just beyond the window: count up to its number-th own image.
            never = {image.image_digest for image, _ in blocked} | {
                image.image_digest
                for image in (
                    *rule_evaluation.already_acted,
                    *(image for image, _ in rule_evaluation.claimed),
                    *rule_evaluation.index_children,
                )
            }
            own_ranks = [n + 1 for n, image in enumerate(rule_evaluation.selected) if image.image_digest not in never]
            selected = len(rule_evaluation.selected)
            raised = own_ranks[number - 1] if len(own_ranks) >= number else max(selected, number + len(blocked))
            consequence = (
                f"; it removes {', '.join(describe_image(i) for i in reversed(acted))} although only {own} "
                f"of its own images are kept"
                if acted
                else ""
            )
            self.findings.append(
                Finding(
                    severity="warning" if acted else "info",
                    code="count-reduced",
                    message=(
                        f"{rule.label} keeps {number} images by count, but {len(blocked)} of those {number} slots are "
                        f"taken by images it can never act on: {taken}. Protected images still occupy a lower rule's count{consequence}"
                    ),
                    fix=(
                        f"to keep {number} images of its own, raise countNumber to {raised} "
                        f"(one more per protected image it ranks, e.g. per mutable tag with a keep-1 rule; policy below)"
                    ),
                    rule_priority=rule.rule_priority,
                    fix_policy=with_count(self.policy, rule.rule_priority, raised),
                )
            )

    # 4. untagged rules next to multi-arch images
    def check_untagged_with_multi_arch(self) -> None:
        untagged = [r for r in self.policy.ordered_rules if r.selection.tag_status == "untagged"]
        indexes = [
            image
            for image in self.evaluation.images
            if image.image_manifest_media_type in INDEX_MEDIA_TYPES
            or "manifests" in self.manifests.get(image.image_digest, {})
        ]
        if not untagged or not indexes:
            return
        unknown = len(self.evaluation.indexes_without_manifest)
        blind = (
            f"; {unknown} of them have no manifest in the input, so their children look like plain untagged images"
            if unknown
            else ""
        )
        for rule in untagged:
            self.findings.append(
                Finding(
                    severity="warning",
                    code="untagged-rule-multi-arch",
                    message=(
                        f"{rule.label} selects untagged images in a repository with {len(indexes)} multi-arch "
                        f"image indexes, whose platform and attestation children are untagged images{blind}. ECR's "
                        f"guard applies only while the index exists, and untagged rules are reported to have "
                        f"removed children of live indexes (aws/containers-roadmap#2613)"
                    ),
                    fix=(
                        f"remove {rule.label} from the native policy (policy below) and let ecr-retention delete "
                        f"untagged images (`delete: {{untagged: true, older_than: 1d}}`): it keeps every child of a "
                        f"kept index; or build with --provenance=false --sbom=false to avoid attestation children"
                    ),
                    rule_priority=rule.rule_priority,
                    fix_policy=without_rules(self.policy, [rule.rule_priority]),
                )
            )

    # 5. count rules against the pipeline's plan
    def check_against_plan(self) -> None:
        if self.plan is None:
            return
        if self.plan.skipped or any(r.kind == "blocked" for d in self.plan.images for r in d.reasons):
            self.findings.append(
                Finding(
                    severity="info",
                    code="plan-not-compared",
                    message="the pipeline's plan for this repository is blocked or skipped; count rules were not compared",
                    fix="compare against an unblocked plan (the doctor command does this: see docs/lifecycle.md)",
                )
            )
            return
        decisions = {d.image_digest: d for d in self.plan.images}
        for rule_evaluation in self.evaluation.rules:
            rule = rule_evaluation.rule
            if not rule.is_count_rule:
                continue
            selected = [image for image in rule_evaluation.selected if image.image_digest in decisions]
            plan_keeps = {i.image_digest for i in selected if decisions[i.image_digest].action == "keep"}
            native_removes = {i.image_digest for i in selected if self.evaluation.action_of(i.image_digest)}
            # Native removes what the plan keeps (errors already name in-use and rules-file keeps).
            lost = [
                image
                for image in rule_evaluation.acted
                if image.image_digest in plan_keeps and not _plan_keep_reasons(decisions[image.image_digest])
            ]
            extra = [i for i in selected if i.image_digest not in plan_keeps and i.image_digest not in native_removes]
            if lost:
                ranks = [n + 1 for n, image in enumerate(rule_evaluation.selected) if image.image_digest in plan_keeps]
                needed = max(ranks)
                reasons = "; ".join(
                    f"{describe_image(image)}: {decisions[image.image_digest].main_reason.detail}" for image in lost[:3]
                )
                self.findings.append(
                    Finding(
                        severity="warning",
                        code="differs-from-plan",
                        message=(
                            f"{rule.label} keeps {rule.selection.count_number} images but would remove "
                            f"{len(lost)} that the pipeline's plan keeps ({reasons}"
                            f"{' ...' if len(lost) > 3 else ''})"
                        ),
                        fix=(
                            f"raise countNumber to {needed} so that every image the plan keeps stays within the "
                            f"rule's count (policy below), or drop the rule and let ecr-retention prune"
                        ),
                        rule_priority=rule.rule_priority,
                        fix_policy=with_count(self.policy, rule.rule_priority, needed),
                    )
                )
            if extra:
                self.findings.append(
                    Finding(
                        severity="info",
                        code="differs-from-plan",
                        message=(
                            f"{rule.label} keeps {len(extra)} images that the pipeline's plan removes: "
                            + ", ".join(describe_image(image) for image in extra[:5])
                            + (" ..." if len(extra) > 5 else "")
                        ),
                        fix="nothing to do: the pipeline is stricter than this rule and removes them itself",
                        rule_priority=rule.rule_priority,
                    )
                )

    def _acted_image(self, image: ImageDetail) -> ImageDetail:
        """The image a rule acts on to remove `image`: itself, or the subject a referrer goes with."""
        digest = image.image_digest
        while digest in self.evaluation.cascaded:
            digest = self.evaluation.cascaded[digest]
        verdict = self.evaluation.verdicts.get(digest)
        return verdict.image if verdict else image

    def _priority_for(self, image: ImageDetail) -> int | None:
        digest = image.image_digest
        while digest in self.evaluation.cascaded:
            digest = self.evaluation.cascaded[digest]
        verdict = self.evaluation.verdicts.get(digest)
        return verdict.rule.rule_priority if verdict else None

    def _rule_for(self, image: ImageDetail) -> str:
        priority = self._priority_for(image)
        if image.image_digest in self.evaluation.cascaded:
            return f"rule {priority} (through the referrer's subject)"
        return f"rule {priority}"


def diagnose(
    policy: LifecyclePolicy,
    images: Sequence[ImageDetail],
    *,
    now: datetime,
    manifests: Mapping[str, Mapping[str, Any]] | None = None,
    repository_name: str | None = None,
    registry_id: str | None = None,
    region: str | None = None,
    inventory: Inventory | None = None,
    plan: RepositoryPlan | None = None,
) -> RepositoryDiagnosis:
    """Every finding for one repository's native policy. `plan` is the pipeline's plan for the same
    repository (unblocked: see `comparable_config`), or None to skip the rules-file checks."""
    manifests = manifests or {}
    evaluation = evaluate(policy, images, now, manifests)
    in_use = InUseIndex.build((inventory or Inventory()).protecting, registry_id, region)
    doctor = Doctor(
        policy,
        evaluation,
        repository_name=repository_name,
        in_use=in_use,
        plan=plan,
        manifests=manifests,
    )
    return RepositoryDiagnosis(repository_name=repository_name, findings=tuple(doctor.run()))


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
    registry_id: str | None = None,
    region: str | None = None,
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
        registry_id=registry_id,
        region=region,
        inventory=inventory,
        plan=plan,
    )
