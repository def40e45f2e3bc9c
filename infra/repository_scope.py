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
from typing import Annotated

from pydantic import BaseModel, ConfigDict, StringConstraints

from ecr_retention.domain.config import Policy, RetentionConfig, Rule
from ecr_retention.domain.errors import InputError

GLOB_CHARACTERS = frozenset("*?")


class RepositoryTag(BaseModel):
    """`repositoryTag` (cdk.json): the tag that marks the repositories the rules file names exactly, for a rules file
    whose exact names do not fit IAM's policy sizes (about 80 at 6,144 characters in one Region's statement). With it,
    the roles' grants on those names are one statement per Region, on every repository of the registry, conditioned
    on `aws:ResourceTag/<key>` being `<value>` (ECR authorizes its repository actions on the repository's tags:
    ECR User Guide, "Using tag-based access control"); patterns with a glob stay resource patterns."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # ECR's tag keys and values: up to 128 and 256 of letters, digits, spaces and _.:/=+-@.
    key: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9 _.:/=+@-]+$", max_length=128)]
    value: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9 _.:/=+@-]*$", max_length=256)]

    @property
    def condition(self) -> dict[str, dict[str, str]]:
        return {"StringEquals": {f"aws:ResourceTag/{self.key}": self.value}}


class ScopedPatterns(dict[str | None, tuple[str, ...]]):
    """Repository patterns by Region (None: the stack's own), and the tag through which the exact names among them are
    granted (None: each by its ARN, as before)."""

    def __init__(self, patterns: dict[str | None, tuple[str, ...]], tag: RepositoryTag | None = None) -> None:
        super().__init__(patterns)
        self.tag = tag


def is_exact(pattern: str) -> bool:
    return GLOB_CHARACTERS.isdisjoint(pattern)


@dataclass(frozen=True)
class PrunedRegions:
    """The Regions whose registries a deployment prunes: the home Region (the stack's; the first of `regions` when
    synthesis does not know the stack's; None when it knows neither, a single-Region deployment) and the others, in
    the order the context lists them."""

    home: str | None
    others: tuple[str, ...] = ()
    # cdk.json repositoryTag: exact names are granted through it (RepositoryTag).
    tag: RepositoryTag | None = None

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

    def scoped(self, patterns_in: Callable[[str | None], Iterable[str]]) -> ScopedPatterns:
        """Each Region's own patterns (patterns_in(region); the home's asked with its name, or None when unknown),
        without the Regions that have none, with the tag that grants the exact names among them."""
        each: dict[str | None, tuple[str, ...]] = {None: tuple(patterns_in(self.home))}
        each.update((region, tuple(patterns_in(region))) for region in self.others)
        return ScopedPatterns({region: patterns for region, patterns in each.items() if patterns}, self.tag)


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
    kept: list[str] = []
    for prefix in sorted(set(prefixes)):  # a prefix sorts right before every string it covers
        if not kept or not prefix.startswith(kept[-1]):
            kept.append(prefix)
    return kept


def coarsened_matchers(
    exact: Iterable[str], prefixes: Iterable[str], budget: int = PUSH_FILTER_BUDGET
) -> RepositoryMatchers | None:
    """The push rule's repository matchers within `budget` characters, for any rules file: the exact names and the
    patterns' literal prefixes as they are when they fit; else each exact name shortened to its first n characters
    (a prefix matcher), n from the longest name down to 1, the first n that fits; None (every repository) when even
    one character does not. A coarser matcher lets through pushes to repositories no policy manages: the push
    function drops those (handlers.push) and the targets step would too (services.targets_step.sweep_targets)."""
    names, literal = sorted(set(exact)), set(prefixes)
    matchers = _exact_and_prefixes(names, uncovered(literal))
    if matchers_size(matchers) <= budget:
        return matchers
    for length in range(max((len(name) for name in names), default=0), 0, -1):
        coarse: RepositoryMatchers = [
            {"prefix": prefix} for prefix in uncovered(literal | {name[:length] for name in names})
        ]
        if matchers_size(coarse) <= budget:
            return coarse
    return None


def _exact_and_prefixes(names: list[str], prefixes: list[str]) -> RepositoryMatchers:
    """The names no prefix covers, then the prefixes."""
    return [
        *(name for name in names if not any(name.startswith(prefix) for prefix in prefixes)),
        *({"prefix": prefix} for prefix in prefixes),
    ]


# One Region's exact names in one IAM statement: the CDK moves a role's statements that outgrow its inline policy into
# managed policies of 6,144 characters, one statement never split (infra.policy_sizes.MANAGED_POLICY). Each name
# takes its ARN (arn:aws:ecr:<region>:<account>:repository/, 51 characters at most) and 3 of JSON.
EXACT_NAMES_BUDGET = 6_144
REPOSITORY_ARN_OVERHEAD = 54


def check_exact_names_fit(config: RetentionConfig, regions: PrunedRegions, tag_key: str) -> None:
    """InputError, in one line, when one Region's exact repository names would not fit one IAM statement and no
    repository tag grants them (RepositoryTag): the deploy would fail on the role's policy size."""
    if regions.tag is not None:
        return
    for region in (regions.home, *regions.others):
        names = [name for name in managed_patterns(config, region) if is_exact(name)]
        size = sum(len(name) + REPOSITORY_ARN_OVERHEAD for name in names)
        if size > EXACT_NAMES_BUDGET:
            where = f" in {region}" if region is not None else ""
            raise InputError(
                f"rules file: {len(names)} repositories named exactly{where} take about {size:,} characters of ARNs "
                f"in one IAM statement, over IAM's {EXACT_NAMES_BUDGET:,} for a managed policy; tag them and set the "
                f"context key {tag_key} (docs/deploy.md), or name them with patterns"
            )
