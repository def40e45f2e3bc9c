"""The order in which a repository's candidates are removed: in waves, indexes before their children and subjects
before their referrers, so that nothing a kept image needs is removed when its parent's removal was cancelled or
failed. A parent that is gone, whoever removed it, holds nothing back. Pure: services/act.py does the calls."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Container, Mapping, Sequence, Set
from dataclasses import dataclass

from ecr_retention.domain.planner import cosign_subject
from ecr_retention.domain.registry import RepositorySnapshot


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
        for child in snapshot.children_of(image.image_digest) or ():
            if child in present and child != image.image_digest:
                parents[child].add(image.image_digest)
        subject = image.subject_manifest_digest or cosign_subject(image.image_tags)
        if subject and subject in present and subject != image.image_digest:
            parents[image.image_digest].add(subject)
    return parents


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

    def stayed(digest: str) -> bool:
        return (digest in not_removed or digest in stays) and digest not in gone

    for digest in remaining:
        if digest in not_removed or digest in stays:
            continue
        held_by = [parent for parent in parents.get(digest, ()) if stayed(parent)]
        if held_by:
            stays[digest] = held_by[0]
        elif any(parent in pending for parent in parents.get(digest, ())):
            waiting.append(digest)
        else:
            ready.append(digest)
    return Wave(ready=tuple(ready), waiting=tuple(waiting), stays=stays)
