"""The lifecycle doctor: what a native ECR lifecycle policy would break, each finding with a severity and
a concrete fix. Where a policy change fixes a finding, the finding names the edit, and the diagnosis
holds one fixed policy per repository with every edit applied, checked to leave nothing the doctor
could fix by another edit.

Pure: the caller passes the policy, the images, the in-use inventory and, optionally, the plan that the
pipeline makes for the same repository. The pipeline calls `diagnose_repository` for each repository
that has a native policy and puts the result in its run report, and `diagnose_templates` on the registry's
repository creation templates (structural checks on the policy text alone: a template has no images).

Layout: `models` (findings, policy edits, the diagnosis), `context` (what the checks read), `checks/` (one
function per check), `fixes` (the one fixed policy per repository), `diagnosis` (the entry points on a repository),
`templates` (on repository creation templates), `tag_kinds` (which tags are mutable).

Nothing is imported here: a module that only holds the doctor's findings (the run report, domain/reporting) imports
`models` without loading the checks, and the functions load the checks only when they diagnose (services/evaluate.py).
"""
