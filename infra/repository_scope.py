"""Which ECR repositories each function may touch, derived from the rules file at synth time.

The rules file's repository patterns and IAM's resource patterns share one glob language: `*` matches
any run of characters, slashes included, and `?` one character; everything else is literal and the whole
name must match (ecr_retention.domain.patterns). So a policy's `team-*/*` becomes the resource
`arn:<partition>:ecr:<region>:<account>:repository/team-*/*` unchanged, and IAM allows exactly the
repositories the rules file manages: a repository that no policy names cannot be changed by the stack.
"""

from __future__ import annotations

from collections.abc import Iterable

from ecr_retention.domain.config import RetentionConfig, Rule

GLOB_CHARACTERS = frozenset("*?")


def _unique(patterns: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(patterns))


def managed_patterns(config: RetentionConfig) -> tuple[str, ...]:
    """Every policy's repository patterns: the repositories a run may read, delete from, archive in and tag."""
    return _unique(pattern for policy in config.policies for pattern in policy.repositories)


def _selectors(rule: Rule) -> Iterable[tuple[str, ...] | None]:
    yield rule.keep.tag_in_repositories if rule.keep else None
    yield rule.delete.tag_in_repositories if rule.delete else None


def tag_source_patterns(config: RetentionConfig) -> tuple[str, ...]:
    """The repositories whose tags `tag_in_repositories` reads (DescribeImages only), beyond the managed ones."""
    managed = set(managed_patterns(config))
    return _unique(
        pattern
        for policy in config.policies
        for rule in policy.rules
        for patterns in _selectors(rule)
        for pattern in patterns or ()
        if pattern not in managed
    )


def tag_sources_need_listing(config: RetentionConfig) -> bool:
    """A glob in `tag_in_repositories` makes the evaluation list the registry's repositories
    (services.evaluate.referenced_tags); literal names are read directly."""
    return any(
        not GLOB_CHARACTERS.isdisjoint(pattern)
        for policy in config.policies
        for rule in policy.rules
        for patterns in _selectors(rule)
        for pattern in patterns or ()
    )
