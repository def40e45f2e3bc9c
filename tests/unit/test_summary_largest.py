"""The summary's largest deletions: the largest first, ties by repository then digest, at most LARGEST_SHOWN."""

from __future__ import annotations

from ecr_retention.domain.reporting.summary import LARGEST_SHOWN, largest_lines
from support.builders import digest
from tests.unit.report_page.reports import entry, repo, run


def test_the_largest_deletions_come_first_ties_by_repository_then_digest() -> None:
    sizes = {"a": [5, 9, 9, 1, 7, 9], "b": [9, 3, 8, 9, 2, 6, 4, 9]}
    report = run(
        *(
            repo(name, deleted=[entry(f"{name}{n}", f"t-{name}{n}", size=size) for n, size in enumerate(shown)])
            for name, shown in sizes.items()
        )
    )
    ranked = sorted(
        (-size, name, digest(f"{name}{n}"), f"t-{name}{n}")
        for name, shown in sizes.items()
        for n, size in enumerate(shown)
    )[:LARGEST_SHOWN]

    shown = [line.split()[2:4] for line in largest_lines(report)[2:]]

    assert shown == [[name, tag] for _, name, _, tag in ranked]
