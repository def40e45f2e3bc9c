"""Which ECR repositories each function may touch, derived from the rules file at synth time.

The rules file's repository patterns and IAM's resource patterns share one glob language: `*` matches
any run of characters, slashes included, and `?` one character; everything else is literal and the whole
name must match (ecr_retention.domain.patterns). So a policy's `team-*/*` becomes the resource
`arn:<partition>:ecr:<region>:<account>:repository/team-*/*` unchanged, and IAM allows exactly the
repositories the rules file manages: a repository that no policy names cannot be changed by the stack.

With several Regions (the context key `regions`, docs/regions.md) each Region's registry gets the patterns of the
policies that apply there (Policy.applies_in): a policy scoped to us-east-1 lets the stack delete there only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from ecr_retention.domain.config import Policy, RetentionConfig, Rule

GLOB_CHARACTERS = frozenset("*?")


@dataclass(frozen=True)
class PrunedRegions:
    """The Regions whose registries a deployment prunes: the home Region (the stack's; the first of `regions` when
    synthesis does not know the stack's; None when it knows neither, a single-Region deployment) and the others, in
    the order the context lists them."""

    home: str | None
    others: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        """Home first; empty when the one Region is unknown at synthesis."""
        return tuple(region for region in (self.home, *self.others) if region is not None)

    @property
    def several(self) -> bool:
        return bool(self.others)

    def everywhere(self, patterns: Iterable[str]) -> dict[str | None, tuple[str, ...]]:
        """The same patterns in every pruned Region; the key None is the stack's own Region (its ARNs name the
        stack's Region, a token when synthesis does not know it), the others are named."""
        kept = tuple(patterns)
        return {None: kept, **dict.fromkeys(self.others, kept)}

    def scoped(self, patterns_in: Callable[[str | None], Iterable[str]]) -> dict[str | None, tuple[str, ...]]:
        """Each Region's own patterns (patterns_in(region); the home's asked with its name, or None when unknown),
        without the Regions that have none."""
        each: dict[str | None, tuple[str, ...]] = {None: tuple(patterns_in(self.home))}
        each.update((region, tuple(patterns_in(region))) for region in self.others)
        return {region: patterns for region, patterns in each.items() if patterns}


def _unique(patterns: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(patterns))


def policies_in(config: RetentionConfig, region: str | None) -> Iterator[Policy]:
    """The policies that apply in the Region's registry; None: every policy (a single-Region deployment whose Region
    synthesis does not know, where no policy may name a Region)."""
    return (policy for policy in config.policies if region is None or policy.applies_in(region))


def managed_patterns(config: RetentionConfig, region: str | None = None) -> tuple[str, ...]:
    """Every policy's repository patterns (of the Region's policies, when given): the repositories a run may read,
    delete from, archive in and tag."""
    return _unique(pattern for policy in policies_in(config, region) for pattern in policy.repositories)


def _selectors(rule: Rule) -> Iterable[tuple[str, ...] | None]:
    yield rule.keep.tag_in_repositories if rule.keep else None
    yield rule.delete.tag_in_repositories if rule.delete else None


def tag_source_patterns(config: RetentionConfig, region: str | None = None) -> tuple[str, ...]:
    """The repositories whose tags `tag_in_repositories` reads (DescribeImages only), beyond the managed ones (in the
    Region's registry, from the Region's policies, when given)."""
    managed = set(managed_patterns(config, region))
    return _unique(
        pattern
        for policy in policies_in(config, region)
        for rule in policy.rules
        for patterns in _selectors(rule)
        for pattern in patterns or ()
        if pattern not in managed
    )


def tag_sources_need_listing(config: RetentionConfig, region: str | None = None) -> bool:
    """A glob in `tag_in_repositories` makes the evaluation list the registry's repositories
    (services.evaluate.referenced_tags); literal names are read directly."""
    return any(
        not GLOB_CHARACTERS.isdisjoint(pattern)
        for policy in policies_in(config, region)
        for rule in policy.rules
        for patterns in _selectors(rule)
        for pattern in patterns or ()
    )


# The push rule's `detail.repository-name` matchers may take this many characters of its pattern's JSON: half of
# EventBridge's 2,048 (infra.policy_sizes.EVENT_PATTERN), the rest for source, detail-type, action, result and the
# accounts. Measured: 60 exact names of 15 characters take about 1,000.
PUSH_FILTER_BUDGET = 1_024
RepositoryMatchers = list[str | dict[str, str]]


def matchers_size(matchers: RepositoryMatchers) -> int:
    return len(json.dumps(matchers, separators=(",", ":")))


def uncovered(prefixes: Iterable[str]) -> list[str]:
    """The prefixes that no shorter one covers (`team-a/` and `team-api` add nothing to `team-`), sorted."""
    kept = set(prefixes)
    return sorted(p for p in kept if not any(p != other and p.startswith(other) for other in kept))


def coarsened_matchers(
    exact: Iterable[str], prefixes: Iterable[str], budget: int = PUSH_FILTER_BUDGET
) -> RepositoryMatchers | None:
    """The push rule's repository matchers within `budget` characters, for any rules file: the exact names and the
    patterns' literal prefixes as they are when they fit; else each exact name shortened to its first n characters
    (a prefix matcher), n from the longest name down to 1, the first n that fits; None (every repository) when even
    one character does not. A coarser matcher lets through pushes to repositories no policy manages: the push
    function drops those (handlers.push) and the targets step would too (services.run.sweep_targets)."""
    names, literal = sorted(set(exact)), set(prefixes)
    kept_prefixes = uncovered(literal)
    matchers: RepositoryMatchers = [
        *(name for name in names if not any(name.startswith(prefix) for prefix in kept_prefixes)),
        *({"prefix": prefix} for prefix in kept_prefixes),
    ]
    if matchers_size(matchers) <= budget:
        return matchers
    for length in range(max((len(name) for name in names), default=0), 0, -1):
        shortened = uncovered(literal | {name[:length] for name in names})
        coarse: RepositoryMatchers = [{"prefix": prefix} for prefix in shortened]
        if matchers_size(coarse) <= budget:
            return coarse
    return None
