"""The order in which a repository's candidates are removed: in waves, indexes before their children and subjects
before their referrers, so that nothing a kept image needs is removed when its parent's removal was cancelled or
failed. A parent that is gone, whoever removed it, holds nothing back. Pure: services/act.py does the calls."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Container, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ecr_retention.domain.registry.digests import cosign_subject

if TYPE_CHECKING:  # for type checking only: the sentinel's restores order no removals and load no image models
    from ecr_retention.domain.registry.images import ImageDetail, RepositorySnapshot


def removal_parents(snapshot: RepositorySnapshot, candidates: Sequence[str]) -> dict[str, set[str]]:
    """Candidate -> the candidates it lives and dies with: the indexes that list it, the subject it refers to.
    An orphaned OCI referrer (its subject gone) has no parent here, so it goes in the first wave."""
    wanted = dict.fromkeys(candidates).keys()
    return {digest: parents & wanted for digest, parents in manifest_parents(snapshot).items() if digest in wanted}


def manifest_parents(snapshot: RepositorySnapshot) -> dict[str, set[str]]:
    """digest -> the digests of the repository it lives and dies with (see removal_parents)."""
    parents: dict[str, set[str]] = defaultdict(set)
    present = {image.image_digest for image in snapshot.image_details}
    for image in snapshot.image_details:
        for child in _children_present(snapshot, image.image_digest, present):
            parents[child].add(image.image_digest)
        subject = _subject_present(image, present)
        if subject is not None:
            parents[image.image_digest].add(subject)
    return parents


def _children_present(snapshot: RepositorySnapshot, digest: str, present: Set[str]) -> list[str]:
    """The other images of the repository that an index lists."""
    return [child for child in snapshot.children_of(digest) or () if child in present and child != digest]


def _subject_present(image: ImageDetail, present: Set[str]) -> str | None:
    """The other image of the repository that a referrer (OCI or cosign) refers to."""
    subject = image.subject_manifest_digest or cosign_subject(image.image_tags)
    return subject if subject and subject in present and subject != image.image_digest else None


@dataclass(frozen=True)
class Wave:
    """What becomes of each remaining candidate in one wave."""

    ready: tuple[str, ...]  # removed now: none of its parents is still to be removed or stayed
    waiting: tuple[str, ...]  # a parent is still to be removed: wait for the next wave
    stays: Mapping[str, str]  # digest -> a parent that was not removed and is still there: it stays with that parent

    @property
    def only_cycles_left(self) -> bool:
        """Nothing is ready but some wait: their references form a cycle. A real registry has none, and keeping
        them is the safe answer."""
        return not self.ready and bool(self.waiting)


def next_wave(
    remaining: Sequence[str],
    parents: Mapping[str, Set[str]],
    *,
    not_removed: Collection[str],
    gone: Container[str],
) -> Wave:
    """The next wave of `remaining` (candidates in plan order). `not_removed`: candidates cancelled or failed so
    far, which are skipped and hold their children and referrers back unless they are `gone` (absent from the
    repository, whoever removed them)."""
    pending = {digest for digest in remaining if digest not in not_removed}
    ready: list[str] = []
    waiting: list[str] = []
    stays: dict[str, str] = {}
    for digest in remaining:
        if digest in not_removed or digest in stays:
            continue
        its_parents = parents.get(digest, ())
        held_by = _parent_that_stayed(its_parents, not_removed, stays, gone)
        if held_by is not None:
            stays[digest] = held_by
        elif not pending.isdisjoint(its_parents):
            waiting.append(digest)
        else:
            ready.append(digest)
    return Wave(ready=tuple(ready), waiting=tuple(waiting), stays=stays)


def _parent_that_stayed(
    parents: Iterable[str], not_removed: Collection[str], stays: Mapping[str, str], gone: Container[str]
) -> str | None:
    """The first parent that was not removed (cancelled, failed, or staying with its own parent) and is still there."""
    return next(
        (parent for parent in parents if (parent in not_removed or parent in stays) and parent not in gone), None
    )
