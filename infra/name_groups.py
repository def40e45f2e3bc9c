"""Many cluster names in few IAM patterns: the collector's eksClusters (500 and more) in its S3 keys, in the bucket
policy that reserves those keys for it, and in its eks:DescribeCluster, without an ARN per cluster (about 110
characters each: 61 clusters overflowed IAM's 6,144 characters, 73 the bucket policy's 20,480 bytes).

A group is `<prefix>*`: every name that starts with the prefix. It is chosen among the names' own prefixes, longest
first, so that it is as narrow as the budget of patterns allows, and never one that another cluster the stack knows
starts with (a cluster of `exporterClusterArns`, `safety.clusters` or `safety.optional_clusters` that the collector
does not read): the collector's keys never take in another cluster's manifest, and the bucket's reservation never
refuses a listed exporter. A prefix of digits only is never used: `in-use/<digits>*` would reach a spoke account's
folder (`in-use/<account>/...`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

# At most this many patterns where the names are more: 16 keys of the collector's are about 1,800 bytes in each of
# the bucket policy's two statements that name them.
MOST_PATTERNS = 16
GLOB = "*"


def groupable(prefix: str, others: Iterable[str]) -> bool:
    return not prefix.isdigit() and not any(other.startswith(prefix) for other in others)


def grouped(names: Iterable[str], length: int, others: frozenset[str]) -> list[str]:
    """Each name's first `length` characters as a group `<prefix>*`; where another cluster starts with that prefix (or
    it is all digits), the group's names grouped again one character longer, down to the names themselves."""
    by_prefix: dict[str, list[str]] = {}
    for name in names:
        by_prefix.setdefault(name[:length], []).append(name)
    patterns: list[str] = []
    for prefix, members in sorted(by_prefix.items()):
        if len(members) == 1:
            patterns.extend(members)
        elif groupable(prefix, others):
            patterns.append(prefix + GLOB)
        else:
            exact = [name for name in members if len(name) <= length]
            patterns.extend(exact)
            patterns.extend(grouped([name for name in members if len(name) > length], length + 1, others))
    return patterns


def name_patterns(names: Sequence[str], others: Iterable[str] = (), most: int = MOST_PATTERNS) -> list[str]:
    """The names themselves when they are at most `most`; else the narrowest grouping into at most `most` patterns
    (none matching a name of `others`), or, when none is that small, the smallest one found (synthesis then measures
    the policies and names the one over its limit)."""
    unique = sorted(set(names))
    if len(unique) <= most:
        return unique
    avoid = frozenset(others) - set(unique)
    smallest = unique
    for length in range(max(len(name) for name in unique) - 1, 0, -1):
        patterns = grouped(unique, length, avoid)
        if len(patterns) <= most:
            return patterns
        if len(patterns) < len(smallest):
            smallest = patterns
    return smallest


def is_pattern(name: str) -> bool:
    return name.endswith(GLOB)
