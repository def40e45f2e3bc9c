"""The retention engine: registry snapshot + in-use inventory + rules -> a plan with every reason.

Pure: no AWS calls, no clock (the caller passes `now`), no input order dependence.

Layout: `run` (the run context, one repository's plan, the registry's plan), `repository` (one repository's
images in rank order, and the findings the steps below record), `rules` (keep and delete rules), `guards`
(in-use, min_age, index children and referrers), `decisions` (one action per image, max_delete_fraction),
`explain` (every reason and warning text: the planner decides, explain words it).
"""

from ecr_retention.domain.planning.guards import cosign_subject
from ecr_retention.domain.planning.managed import first_matching_policy, managed_in
from ecr_retention.domain.planning.repository import newest_first
from ecr_retention.domain.planning.run import (
    PlannedRepository,
    RunContext,
    build_run_context,
    plan_registry,
    plan_repository,
    tag_sources,
)

__all__ = [
    "PlannedRepository",
    "RunContext",
    "build_run_context",
    "cosign_subject",
    "first_matching_policy",
    "managed_in",
    "newest_first",
    "plan_registry",
    "plan_repository",
    "tag_sources",
]
