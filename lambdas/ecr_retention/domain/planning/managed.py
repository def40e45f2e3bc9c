"""Which policy manages a repository of a registry: the one answer to "is this repository managed in this Region"."""

from __future__ import annotations

from collections.abc import Sequence

from ecr_retention.domain.config import Policy, RetentionConfig
from ecr_retention.domain.patterns import matches_any


def first_matching_policy(
    policies: Sequence[Policy], repository_name: str, region: str | None = None
) -> tuple[int, Policy] | None:
    """The policy that governs a repository of the registry in `region`: the first whose patterns match its name and
    whose Regions (all, when it names none) take in the registry's."""
    for index, policy in enumerate(policies):
        if matches_any(repository_name, policy.repositories) and policy.applies_in(region):
            return index, policy
    return None


def managed_in(config: RetentionConfig, repository_name: str, region: str | None) -> bool:
    """Whether a policy of the rules file manages the repository of the registry in `region`."""
    return first_matching_policy(config.policies, repository_name, region) is not None
