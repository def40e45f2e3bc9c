"""What the brakes hold back, in words, for the diff's headline, its repository lines and its comment: the counts of
a rules diff are what the rules decide (a brake is not a decision); these say what a run on these inputs removes now
and what the rest waits for."""

from __future__ import annotations

from collections.abc import Sequence

from ecr_retention.commands.markdown import md, plural
from ecr_retention.domain.review.rules_diff import RepositoryDiff, RulesDiff, Side


def _and(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def brakes_clause(diff: RulesDiff) -> str | None:
    """What happens now, when a brake holds back what the rules decide: the counts above are the rules' decisions
    (a brake is not a decision), and this says what a run on these inputs removes today, and why the rest waits."""
    brakes, lifts = _brakes(diff)
    if not brakes:
        return None
    totals = diff.totals
    return (
        f"but {_and(brakes)}: a run on these inputs removes {plural(totals.removals_after_now, 'image')} now "
        f"({totals.removals_before_now} under the old rules); what the rules decide beyond that waits only for "
        f"{' or '.join(lifts)}"
    )


def _brakes(diff: RulesDiff) -> tuple[list[str], list[str]]:
    """The brakes that hold back removals of the changed repositories on either side, and what lifts them."""
    brakes, lifts = [], []
    if diff.blocked or diff.blocked_before:
        brakes.append(f"a run under the {'new' if diff.blocked else 'old'} rules is blocked on these inputs")
        lifts.append("fresh manifests")
    skips = _skips(diff)
    if skips:
        brakes += skips
        lifts.append("a share under max_delete_fraction or a raised limit")
    waiting = sum(change.after.held_by == "quarantine" for repo in diff.repositories for change in repo.changes)
    if waiting:
        brakes.append(f"{plural(waiting, 'image')} the new rules newly delete wait in the quarantine")
        lifts.append("the end of its safety.quarantine")
    return brakes, lifts


def _skips(diff: RulesDiff) -> list[str]:
    """The max_delete_fraction guard on each side, where the run is not blocked anyway."""
    now, then = _skipping(diff, "after"), _skipping(diff, "before")
    skips = [f"the max_delete_fraction guard skips {_names(now, 'after')} under the new rules"] if now else []
    guard = "it" if now else "the max_delete_fraction guard"
    return skips + ([f"{guard} skipped {_names(then, 'before')} under the old rules"] if then else [])


def _skipping(diff: RulesDiff, side: Side) -> list[RepositoryDiff]:
    if diff.blocked if side == "after" else diff.blocked_before:
        return []  # nothing goes anywhere on that side: the block says it
    return [repository for repository in diff.repositories if repository.skip_holds(side)]


def _names(repositories: Sequence[RepositoryDiff], side: str) -> str:
    names = [
        f"{repository.repository_name} ({getattr(repository, 'removals_' + side)} removals)"
        for repository in repositories
    ]
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def skip_notes(repository: RepositoryDiff) -> list[str]:
    """The max_delete_fraction guard on each side, with both figures: what the rules remove here, and what a run
    removes now."""
    before, after = repository.skipped_before, repository.skipped_after
    if after and not before:
        return [
            f"now SKIPPED: {after}; the new rules remove {repository.removals_after} here (the old ones "
            f"{repository.removals_before}; a run removes {repository.removals_before_now} here today): they go the "
            "day the share falls under the limit or someone raises it"
        ]
    if before and not after:
        return [
            f"no longer skipped (was: {before}); a run removes {repository.removals_after_now} here now "
            f"(the old rules remove {repository.removals_before}, held back by the guard)"
        ]
    if before and after:
        return [
            f"SKIPPED under both rules ({after}); the new rules remove {repository.removals_after} here, the old "
            f"{repository.removals_before}, and a run removes none of them until the share falls under the limit"
        ]
    return []


def blocked_notes(diff: RulesDiff) -> list[str]:
    """What blocks a run on these inputs under the new rules, and under the old where that differs."""
    notes = [
        f"a run on these inputs would delete nothing ({blocker}); the diff compares the rules"
        for blocker in diff.blocked
    ]
    old_only = (blocker for blocker in diff.blocked_before if blocker not in diff.blocked)
    return notes + [
        f"under the old rules a run on these inputs would delete nothing ({blocker})" for blocker in old_only
    ]


def markdown_brake_notes(diff: RulesDiff, repositories: int) -> list[str]:
    """The comment's warnings: what blocks a run on either side, and the guard's skip on either side of each of the
    first `repositories` changed repositories."""
    notes = [f"- :warning: {md(note)}" for note in blocked_notes(diff)]
    return notes + [
        f"- :warning: {md(repository.repository_name)}: {md(note)}"
        for repository in diff.repositories[:repositories]
        for note in skip_notes(repository)
    ]
