"""The retention engine: registry snapshot + in-use inventory + rules -> a plan with every reason.

Pure: no AWS calls, no clock (the caller passes `now`), no input order dependence.

Layout: `run` (the run context, one repository's plan, the registry's plan), `repository` (one repository's
images in rank order, and the findings the steps below record), `rules` (keep and delete rules), `guards`
(in-use, min_age, index children and referrers), `decisions` (one action per image, max_delete_fraction),
`explain` (every reason and warning text: the planner decides, explain words it).

The names below are imported on first use (PEP 562), not with the package: a function that only asks which policy
manages a repository (the push function: `managed`) or tags what runs (the tagger: `tagging`, `ledger`) imports
those modules of the package without building the planner's models, a sixth of its cold start.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

# Each name, with the module of the package that defines it.
_MODULES = {
    "first_matching_policy": "managed",
    "managed_in": "managed",
    "newest_first": "repository",
    "PlannedRepository": "run",
    "RunContext": "run",
    "build_run_context": "run",
    "plan_registry": "run",
    "plan_repository": "run",
    "tag_sources": "run",
}

__all__ = [
    "PlannedRepository",
    "RunContext",
    "build_run_context",
    "first_matching_policy",
    "managed_in",
    "newest_first",
    "plan_registry",
    "plan_repository",
    "tag_sources",
]


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)
