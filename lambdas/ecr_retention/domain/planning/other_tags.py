"""The tags of the other repositories that `tag_in_repositories` names, known to a run.

Each pattern is matched against the repository names once per run and its repositories' tags counted once, so that
planning every repository of a registry stays linear in its repositories: matching every name for every repository
made 10,000 repositories 10^8 matches."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from ecr_retention.domain.patterns import matches_any


class OtherRepositoryTags:
    """The tags of the repositories a run read (every repository offline; those a policy names in a worker). A name
    missing here is not known."""

    def __init__(self, tags_by_repository: Mapping[str, frozenset[str]]) -> None:
        self._tags = dict(tags_by_repository)
        self._named: dict[str, tuple[frozenset[str], Counter[str]]] = {}

    def unnamed(self, repository: str, patterns: Sequence[str]) -> str | None:
        """The first pattern that names no repository but this one, if any: then nothing is known of its tags."""
        return next((p for p in patterns if not self._named_by(p)[0] - {repository}), None)

    def present_elsewhere(self, repository: str, patterns: Sequence[str]) -> Callable[[str], bool]:
        """Whether a tag is on any image of a repository other than this one that the patterns name."""
        own = self._tags.get(repository, frozenset())
        indexes = [self._named_by(pattern) for pattern in patterns]
        if len(indexes) == 1 and repository not in indexes[0][0]:
            # one pattern that names other repositories only, the usual case: a tag is present when they carry it
            # (asked of every tag of the repository, so without a Python call per tag)
            return indexes[0][1].__contains__

        def present(tag: str) -> bool:
            return any(counts[tag] - (repository in names and tag in own) > 0 for names, counts in indexes)

        return present

    def _named_by(self, pattern: str) -> tuple[frozenset[str], Counter[str]]:
        """The repositories the pattern names, and how many of them carry each tag."""
        named = self._named.get(pattern)
        if named is None:
            names = frozenset(name for name in self._tags if matches_any(name, (pattern,)))
            named = self._named[pattern] = (names, Counter(tag for name in names for tag in self._tags[name]))
        return named
