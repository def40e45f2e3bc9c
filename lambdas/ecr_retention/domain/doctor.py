"""The lifecycle doctor: what a native ECR lifecycle policy would break, each finding with a severity and
a concrete fix. Where a policy change fixes a finding, the finding names the edit, and the diagnosis
holds one fixed policy per repository with every edit applied, checked to leave nothing the doctor
could fix by another edit.

Pure: the caller passes the policy, the images, the in-use inventory and, optionally, the plan that the
pipeline makes for the same repository. The pipeline calls `diagnose_repository` for each repository
that has a native policy and puts the result in its run report.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.inventory import Inventory, Workload
from ecr_retention.domain.lifecycle import (
    LifecycleEvaluation,
    LifecyclePolicy,
    LifecycleRule,
    LifecycleSelection,
    evaluate,
    parse_policy,
    selection_includes,
    storage_class_of,
    tags_selected,
)
from ecr_retention.domain.plan import Decision, RepositoryPlan
from ecr_retention.domain.planner import InUseIndex
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


class KeepTags(DoctorModel):
    """Add a keep-1 rule per tag ahead of every rule: the image carrying the tag is selected first by a rule
    that never acts on it, and a lower rule cannot act on an image that a higher rule selects."""

    kind: Literal["keep-tags"] = "keep-tags"
    tags: tuple[str, ...]

    def __str__(self) -> str:
        return "a keep-1 rule ahead of every rule for " + ", ".join(f"tag {tag}" for tag in self.tags)


class RemoveRule(DoctorModel):
    kind: Literal["remove-rule"] = "remove-rule"
    rule_priority: int

    def __str__(self) -> str:
        return f"rule {self.rule_priority} removed"


class RaiseCount(DoctorModel):
    """Raise a count rule's countNumber. `own_images` is set when the raise makes room for images that the
    rule ranks but can never act on: the fixed policy then records, in the rule's description, how many
    images of its own the rule is meant to keep, so that the added slots are not read as its own."""

    kind: Literal["raise-count"] = "raise-count"
    rule_priority: int
    count_number: int
    own_images: int | None = None

    def __str__(self) -> str:
        own = f", keeping {self.own_images} of its own images" if self.own_images is not None else ""
        return f"rule {self.rule_priority} with countNumber {self.count_number} or more{own}"


PolicyEdit = Annotated[KeepTags | RemoveRule | RaiseCount, Field(discriminator="kind")]


class Finding(DoctorModel):
    severity: Severity
    code: FindingCode
    message: str
    fix: str
    rule_priority: int | None = None
    image_digest: str | None = None
    image_tags: tuple[str, ...] = ()
    in_use_by: tuple[Workload, ...] = ()
    policy_edit: PolicyEdit | None = None  # the change to the policy that fixes it; all are merged per repository


class RepositoryDiagnosis(DoctorModel):
    repository_name: str | None = None
    findings: tuple[Finding, ...]
    in_use_checked: bool = True  # False: no in-use manifest was given, so no image was checked against one
    # Every policy edit of the findings applied together, re-checked until the doctor finds nothing left
    # that a policy edit fixes. None when no finding has an edit, or when `fixed_policy_problem` says why not.
    fixed_policy: dict[str, Any] | None = None
    fixed_policy_problem: str | None = None
    # What the doctor still finds with the fixed policy: findings that no policy edit can fix.
    fixed_policy_findings: tuple[Finding, ...] = ()

    def count(self, severity: Severity) -> int:
        return sum(1 for finding in self.findings if finding.severity == severity)

    @property
    def has_errors(self) -> bool:
        return self.count("error") > 0

    @property
    def notes(self) -> tuple[str, ...]:
        if self.in_use_checked:
            return ()
        return (IN_USE_SKIPPED,)

    def to_json_dict(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        for finding in (*data["findings"], *data["fixedPolicyFindings"]):
            for key in ("imageTags", "inUseBy"):
                if not finding[key]:
                    del finding[key]
        if not data["fixedPolicyFindings"]:
            del data["fixedPolicyFindings"]
        data["notes"] = list(self.notes)
        data["summary"] = {severity + "s": self.count(severity) for severity in SEVERITY_ORDER}
        return data


_ARCHIVED_FIX = (
    "the image is archived, and a keep rule sees one storage class: a rule for archived images can only "
    "expire them (sinceImageTransitioned), so no native rule keeps it; restore it if it is needed, or drop "
    "the rule and let ecr-retention prune this repository"
)
_UNTAGGED_FIX = (
    "an untagged image cannot be protected by a native rule (here the image or a subject it goes with): tag "
    "deployed images (ecr-retention tagging adds deployed-<cluster>-<time>) and protect that tag pattern with a "
    "higher-priority rule, or drop the rule and let ecr-retention prune this repository"
)
IN_USE_SKIPPED = (
    "in-use check skipped: no in-use manifest was given, so the doctor cannot tell whether the policy "
    "would remove an image that runs in a cluster (pass --manifests DIR)"
)


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


def selects_one_image_at_most(selection: LifecycleSelection) -> bool:
    """A tagged selection with a pattern without `*` names one tag, and a tag is on one image at most."""
    return selection.tag_status == "tagged" and any("*" not in pattern for pattern in selection.patterns)


def never_acts(rule: LifecycleRule) -> bool:
    """A count rule that selects one image at most keeps it: countNumber is at least 1."""
    return rule.is_count_rule and selects_one_image_at_most(rule.selection)


_OWN_IMAGES = re.compile(r"keep (\d+) of its own images, plus one slot per image a higher rule keeps")


def own_images_marker(count: int) -> str:
    return f"keep {count} of its own images, plus one slot per image a higher rule keeps"


def intended_own_images(rule: LifecycleRule) -> int:
    """How many images of its own a count rule is meant to keep: what a fixed policy wrote in the rule's
    description when it raised countNumber for images the rule ranks but cannot act on, else countNumber."""
    found = _OWN_IMAGES.search(rule.description or "")
    return int(found.group(1)) if found else rule.selection.count_number


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


def _removes(action: str | None) -> str:
    return "archive" if action == "TRANSITION" else "expire"


def _plan_keep_reasons(decision: Decision) -> tuple[str, ...]:
    return tuple(reason.kind for reason in decision.reasons if reason.kind in PROTECTIVE_KINDS)


# --- the merged fix -------------------------------------------------------------------------------

# Each round applies what the previous round's findings ask for; edits only add keep rules, remove rules
# and raise counts, so rounds are few (two or three in practice) and the limit is never the answer.
MAX_FIX_ROUNDS = 20


@dataclass
class PolicyFixes:
    """Every edit asked for so far, keyed by the original policy's rule priorities."""

    keep_tags: set[str] = field(default_factory=set)
    removed: set[int] = field(default_factory=set)
    counts: dict[int, int] = field(default_factory=dict)
    own_images: dict[int, int] = field(default_factory=dict)

    def add(self, edit: KeepTags | RemoveRule | RaiseCount, original_priority: Mapping[int, int]) -> bool:
        """Record one edit made against the fixed policy whose priorities map back through
        `original_priority`; True when it changes anything."""
        if isinstance(edit, KeepTags):
            new = set(edit.tags) - self.keep_tags
            self.keep_tags |= new
            return bool(new)
        if edit.rule_priority not in original_priority:  # one of our keep rules: never edited
            return False
        priority = original_priority[edit.rule_priority]
        if isinstance(edit, RemoveRule):
            changed = priority not in self.removed
            self.removed.add(priority)
            return changed
        changed = edit.count_number > self.counts.get(priority, 0)
        self.counts[priority] = max(self.counts.get(priority, 0), edit.count_number)
        if edit.own_images is not None and priority not in self.own_images:
            self.own_images[priority] = edit.own_images
            changed = True
        return changed

    def apply(self, policy: LifecyclePolicy) -> tuple[dict[str, Any] | None, dict[int, int]]:
        """The policy with every edit, and the map from its priorities to the original ones; None for the
        policy when every rule is removed."""
        tags = sorted(self.keep_tags)
        rules = [keep_one_rule(index + 1, tag) for index, tag in enumerate(tags)]
        original_priority: dict[int, int] = {}
        for rule in policy.ordered_rules:
            if rule.rule_priority in self.removed:
                continue
            data = rule.model_dump(mode="json", by_alias=True, exclude_none=True)
            data["rulePriority"] = rule.rule_priority + len(tags)
            original_priority[data["rulePriority"]] = rule.rule_priority
            if rule.rule_priority in self.counts:
                data["selection"]["countNumber"] = max(rule.selection.count_number, self.counts[rule.rule_priority])
            if rule.rule_priority in self.own_images:
                data["description"] = _with_marker(rule.description, self.own_images[rule.rule_priority])
            rules.append(data)
        return ({"rules": rules} if rules else None), original_priority


def _with_marker(description: str | None, own_images: int) -> str:
    marker = own_images_marker(own_images)
    if description and _OWN_IMAGES.search(description):
        return _OWN_IMAGES.sub(marker, description)
    return f"{description}; {marker}" if description else marker


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
        self.by_digest = {image.image_digest: image for image in evaluation.images}
        self.decisions = {decision.image_digest: decision for decision in plan.images} if plan else {}

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
            used_tags = [t for t in image.image_tags if (self.repository_name, t) in self.in_use.by_tag]
            protection = self._protection(image, used_tags or [protective_tag(image)] if image.image_tags else [])
            edit: KeepTags | None = None
            if isinstance(protection, KeepTags):
                which = " and ".join(
                    "this image" if member is image else f"its subject {describe_image(member)}"
                    for member in self._removed_by_rules(image)
                )
                fix = (
                    f"add a higher-priority rule that selects {which} by its tag, so that no later rule can "
                    f"{verb} it (in the fixed policy). Native rules cannot see clusters: a durable fix is to drop "
                    f"the rule and let ecr-retention prune this repository, which keeps in-use images"
                )
                edit = protection
            else:
                fix = protection
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
                    policy_edit=edit,
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
            protection = self._protection(image, [protective_tag(image)] if image.image_tags else [])
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
                        "protect the image's tag with a higher-priority keep-1 rule (in the fixed policy), or drop "
                        "the native rule and let ecr-retention apply the rules file"
                        if isinstance(protection, KeepTags)
                        else protection
                    ),
                    rule_priority=self._priority_for(image),
                    image_digest=image.image_digest,
                    image_tags=image.image_tags,
                    policy_edit=protection if isinstance(protection, KeepTags) else None,
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
            if not acted and never_acts(rule):
                continue  # a keep-1 rule for one of its tags: the image stays while that tag is on it
            if acted or tags_selected(rule.selection, others):
                # Removed now, or selected first by a rule that does not need the mutable tag to see it.
                # Otherwise the first rule to see the image selects it through the mutable tag itself
                # and does not act on it: the keep-1 protection of seed 002.
                at_risk.append((image, mutable, rule))
        if not at_risk:
            return
        fix = (
            "give each mutable tag its own keep-1 rule (tagPatternList [tag], imageCountMoreThan 1) at a higher "
            "priority than every other rule (in the fixed policy): the image carrying the tag is then selected first "
            "by that rule, which never expires it, and lower rules cannot act on it; when the tag moves on, "
            "the old image falls back to the other rules. Add a rule whenever you add a mutable tag."
        )
        for image, mutable, rule in at_risk:
            # A keep-1 rule per mutable tag, and one for each subject the image would go with.
            protection = self._protection(image, mutable, always=True)
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
                    rule_priority=self._priority_for(image) or rule.rule_priority,
                    image_digest=image.image_digest,
                    image_tags=image.image_tags,
                    fix=fix if isinstance(protection, KeepTags) else protection,
                    policy_edit=protection if isinstance(protection, KeepTags) else None,
                )
            )

    @staticmethod
    def _limit(rule: LifecycleRule) -> str:
        number = rule.selection.count_number
        if rule.is_count_rule:
            return f"count of {number} (newer images selected by it)"
        return f"limit of {number} days since the image was {_AGE_WORD[rule.selection.count_type]}"

    def _shadowed(self, rule: LifecycleRule) -> bool:
        higher = (r for r in self.policy.ordered_rules if r.rule_priority < rule.rule_priority)
        return any(selection_includes(h.selection, rule.selection) for h in higher)

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
                            f"remove {lower.label} (same outcome; the fixed policy does), or, if it is meant to act, "
                            f"give it a lower rulePriority number than {higher.label}"
                        ),
                        rule_priority=lower.rule_priority,
                        policy_edit=RemoveRule(rule_priority=lower.rule_priority),
                    )
                )
                break

    # 3b. count rules whose kept slots are taken by images they cannot act on
    def check_count_reduced(self) -> None:
        """A count rule ranks every image it selects, also those a higher rule selects (or an index guards),
        which it can never act on: they take slots that a reader expects to hold the rule's own images.

        The rule is meant to keep `intended_own_images` of its own: countNumber, or what a fixed policy
        recorded in its description when it raised countNumber to make room. So a raised count, applied,
        is not reported again, while a change in the images that takes more slots still is.
        """
        for rule_evaluation in self.evaluation.rules:
            rule = rule_evaluation.rule
            blocked = rule_evaluation.window_blocked
            if not rule.is_count_rule or not blocked or selects_one_image_at_most(rule.selection):
                continue
            if self._shadowed(rule):
                continue  # it can never act at all: reported as rule-shadowed, and removed by the fix
            number = rule.selection.count_number
            wanted = intended_own_images(rule)
            room = number - len(blocked)  # slots left for images it can act on
            if room >= wanted:
                continue
            taken = ", ".join(
                describe_image(image) + (f" (selected by rule {by})" if by is not None else " (index child)")
                for image, by in blocked
            )
            acted = rule_evaluation.acted
            # Images it can never act on may also sit just beyond the window: count up to its wanted-th own image.
            never = {image.image_digest for image, _ in blocked} | {
                image.image_digest
                for image in (
                    *rule_evaluation.already_acted,
                    *(image for image, _ in rule_evaluation.claimed),
                    *rule_evaluation.index_children,
                )
            }
            own_ranks = [n + 1 for n, image in enumerate(rule_evaluation.selected) if image.image_digest not in never]
            never_selected = len(rule_evaluation.selected) - len(own_ranks)
            # Fewer own images than wanted: room for the wanted number beside every image it cannot act on.
            raised = own_ranks[wanted - 1] if len(own_ranks) >= wanted else wanted + never_selected
            consequence = (
                f"; it removes {', '.join(describe_image(i) for i in reversed(acted))} although only {room} "
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
                        f"taken by images it can never act on: {taken}. Protected images still occupy a lower "
                        f"rule's count{consequence}"
                    ),
                    fix=(
                        f"to keep {wanted} images of its own, raise countNumber to {raised} (one more per protected "
                        f"image it ranks, e.g. per mutable tag with a keep-1 rule); the fixed policy does, and says "
                        f"in the rule's description that it keeps {wanted} of its own"
                    ),
                    rule_priority=rule.rule_priority,
                    policy_edit=RaiseCount(rule_priority=rule.rule_priority, count_number=raised, own_images=wanted),
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
            endangered = self._endangered_without(rule)
            if endangered:
                fix = (
                    f"removing {rule.label} would let a lower rule remove untagged images it keeps now, and with "
                    f"them {', '.join(describe_image(image) for image in endangered[:3])}, which must stay (in use, "
                    f"a mutable tag, or kept by the rules file): narrow the lower rules first, or stop using native "
                    f"rules for this repository and let ecr-retention prune it (it keeps every child of a kept index)"
                )
            else:
                fix = (
                    f"remove {rule.label} from the native policy (the fixed policy does) and let ecr-retention delete "
                    f"untagged images (`delete: {{untagged: true, older_than: 1d}}`): it keeps every child of a "
                    f"kept index; or build with --provenance=false --sbom=false to avoid attestation children"
                )
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
                    fix=fix,
                    rule_priority=rule.rule_priority,
                    policy_edit=None if endangered else RemoveRule(rule_priority=rule.rule_priority),
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
                            f"rule's count (in the fixed policy), or drop the rule and let ecr-retention prune"
                        ),
                        rule_priority=rule.rule_priority,
                        policy_edit=RaiseCount(rule_priority=rule.rule_priority, count_number=needed),
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

    def _must_stay(self, image: ImageDetail) -> bool:
        """In use, carrying a mutable tag, or kept by the rules file (or the in-use guard) in the plan."""
        if self.usages(image) or any(is_mutable_tag(tag) for tag in image.image_tags):
            return True
        decision = self.decisions.get(image.image_digest)
        return decision is not None and decision.action == "keep" and bool(_plan_keep_reasons(decision))

    def _endangered_without(self, rule: LifecycleRule) -> list[ImageDetail]:
        """Images that must stay and that removing `rule` would endanger. A rule's selection protects what
        it does not act on; without the rule, lower rules may act on those images, and on every image that
        goes with one of them (a referrer with its subject). Every other fix only adds protection."""
        rest = [r.model_dump(mode="json", by_alias=True, exclude_none=True) for r in self.policy.rules if r != rule]
        if not rest:
            return []
        without = evaluate(
            LifecyclePolicy.model_validate({"rules": rest}), self.evaluation.images, self.evaluation.now, self.manifests
        )
        this_rule = self.evaluation.rule(rule.rule_priority)
        acted = {image.image_digest for image in this_rule.acted}
        handed_over = {
            image.image_digest
            for image in this_rule.selected
            if image.image_digest not in acted and image.image_digest in without.verdicts
        }
        endangered = []
        for image in self.evaluation.images:
            if not self._must_stay(image):
                continue
            current: ImageDetail | None = image
            seen: set[str] = set()
            while current is not None and current.image_digest not in seen:
                if current.image_digest in handed_over:
                    endangered.append(image)
                    break
                seen.add(current.image_digest)
                subject = current.subject_manifest_digest
                current = self.by_digest.get(subject) if subject is not None else None
        return endangered

    def _removed_by_rules(self, image: ImageDetail) -> list[ImageDetail]:
        """Every image a rule acts on that takes `image` with it: the image itself when a rule acts on it,
        and each subject it goes with (a referrer goes with its subject, transitively) that a rule acts on."""
        removed: list[ImageDetail] = []
        seen: set[str] = set()
        current: ImageDetail | None = image
        while current is not None and current.image_digest not in seen:
            seen.add(current.image_digest)
            if current.image_digest in self.evaluation.verdicts:
                removed.append(current)
            subject = current.subject_manifest_digest
            gone = subject is not None and self.evaluation.action_of(subject) is not None
            current = self.by_digest.get(subject) if gone and subject is not None else None
        return removed

    def _protection(self, image: ImageDetail, own_tags: Sequence[str], *, always: bool = False) -> KeepTags | str:
        """The keep-1 rules that stop every removal of `image`, or why no native rule can.

        `own_tags` pin the image itself, when a rule acts on it (or `always`); each subject it would go with
        is pinned by a build tag. A keep rule sees only standard (ACTIVE) images, and only tagged ones.
        """
        removed = self._removed_by_rules(image)
        pinned = [image] if always or any(member is image for member in removed) else []
        pinned += [member for member in removed if member is not image]
        tags: list[str] = []
        for member in pinned:
            member_tags = list(own_tags) if member is image else [protective_tag(member)] if member.image_tags else []
            if not member_tags:
                return _UNTAGGED_FIX
            if storage_class_of(member) != "standard":
                return _ARCHIVED_FIX
            tags.extend(member_tags)
        return KeepTags(tags=tuple(dict.fromkeys(tags)))

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
    """Every finding for one repository's native policy, and one fixed policy with every policy edit of
    the findings applied. `plan` is the pipeline's plan for the same repository (unblocked: see
    `comparable_config`), or None to skip the rules-file checks."""
    known_manifests = manifests or {}
    inventory = inventory or Inventory()
    in_use = InUseIndex.build(inventory.manifests, registry_id, region, [])

    def find(candidate: LifecyclePolicy) -> list[Finding]:
        evaluation = evaluate(candidate, images, now, known_manifests)
        doctor = Doctor(
            candidate,
            evaluation,
            repository_name=repository_name,
            in_use=in_use,
            plan=plan,
            manifests=known_manifests,
        )
        return doctor.run()

    findings = find(policy)
    fixed = merge_fixes(policy, findings, find)
    return RepositoryDiagnosis(
        repository_name=repository_name,
        findings=tuple(findings),
        in_use_checked=bool(inventory.manifests),
        fixed_policy=fixed.policy,
        fixed_policy_problem=fixed.problem,
        fixed_policy_findings=fixed.findings,
    )


@dataclass(frozen=True)
class MergedFix:
    policy: dict[str, Any] | None = None
    problem: str | None = None
    findings: tuple[Finding, ...] = ()  # what the doctor finds in `policy`: nothing a policy edit fixes


def merge_fixes(
    policy: LifecyclePolicy, findings: Sequence[Finding], find: Callable[[LifecyclePolicy], list[Finding]]
) -> MergedFix:
    """Apply every policy edit together, check the result, and repeat with what that check still asks
    for, until the doctor finds nothing left that a policy edit fixes.

    One edit can call for another: a keep rule makes a lower count rule rank one more image it cannot act
    on, or shadows a rule that selects the same tag. Edits only add keep rules, remove rules and raise
    counts, so the rounds end.
    """
    fixes = PolicyFixes()
    original_priority = {rule.rule_priority: rule.rule_priority for rule in policy.rules}
    fixed: dict[str, Any] | None = None
    for _ in range(MAX_FIX_ROUNDS):
        edits = [finding.policy_edit for finding in findings if finding.policy_edit is not None]
        if not edits:
            return MergedFix(policy=fixed, findings=tuple(findings)) if fixed is not None else MergedFix()
        changes = [fixes.add(edit, original_priority) for edit in edits]
        if not any(changes):
            codes = ", ".join(sorted({finding.code for finding in findings if finding.policy_edit is not None}))
            return MergedFix(problem=f"the policy edits, applied together, still leave {codes}")
        fixed, original_priority = fixes.apply(policy)
        if fixed is None:
            return MergedFix(
                problem="every rule is removed: delete the lifecycle policy (aws ecr delete-lifecycle-policy) "
                "and let ecr-retention prune this repository"
            )
        try:
            candidate = parse_policy(json.dumps(fixed, indent=2), "the fixed policy")
        except InputError as error:  # for example more than 50 rules
            return MergedFix(problem=f"no policy that ECR accepts holds every fix: {error}")
        findings = find(candidate)
    return MergedFix(problem=f"the policy edits did not settle in {MAX_FIX_ROUNDS} rounds")


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
