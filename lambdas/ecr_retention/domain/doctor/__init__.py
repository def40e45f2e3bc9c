"""The lifecycle doctor: what a native ECR lifecycle policy would break, each finding with a severity and
a concrete fix. Where a policy change fixes a finding, the finding names the edit, and the diagnosis
holds one fixed policy per repository with every edit applied, checked to leave nothing the doctor
could fix by another edit.

Pure: the caller passes the policy, the images, the in-use inventory and, optionally, the plan that the
pipeline makes for the same repository. The pipeline calls `diagnose_repository` for each repository
that has a native policy and puts the result in its run report, and `diagnose_templates` on the registry's
repository creation templates (structural checks on the policy text alone: a template has no images).

Layout: `models` (findings, policy edits, the diagnosis), `context` (what the checks read), `checks/` (one
function per check), `fixes` (the one fixed policy per repository), `diagnosis` (the entry points).
"""

from ecr_retention.domain.doctor.context import describe_image, protective_tag, short_with_algorithm
from ecr_retention.domain.doctor.diagnosis import comparable_config, diagnose, diagnose_repository
from ecr_retention.domain.doctor.fixes import intended_own_images, keep_one_rule, merge_fixes
from ecr_retention.domain.doctor.models import (
    Finding,
    FindingCode,
    KeepTags,
    PolicyEdit,
    RaiseCount,
    RemoveRule,
    RepositoryDiagnosis,
    Severity,
    SplitRule,
)
from ecr_retention.domain.doctor.tag_kinds import DEFAULT_TAG_KINDS, TagKinds, is_mutable_tag
from ecr_retention.domain.doctor.templates import (
    TemplateFinding,
    diagnose_template,
    diagnose_templates,
    template_policy,
)

__all__ = [
    "DEFAULT_TAG_KINDS",
    "Finding",
    "FindingCode",
    "KeepTags",
    "PolicyEdit",
    "RaiseCount",
    "RemoveRule",
    "RepositoryDiagnosis",
    "Severity",
    "SplitRule",
    "TagKinds",
    "TemplateFinding",
    "comparable_config",
    "describe_image",
    "diagnose",
    "diagnose_repository",
    "diagnose_template",
    "diagnose_templates",
    "intended_own_images",
    "is_mutable_tag",
    "keep_one_rule",
    "merge_fixes",
    "protective_tag",
    "short_with_algorithm",
    "template_policy",
]
