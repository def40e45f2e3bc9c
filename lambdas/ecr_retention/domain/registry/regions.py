"""Which Region names are Regions: the names an SDK's partition data lists (issue 43: `regions: [mars-north-1]`
matched the pattern of a Region's name and validated).

Pure: the doors that have botocore (the AWS commands, the Lambdas, synthesis; ecr_retention.aws.regions) pass the
Regions it knows in, and a door without it (the base install's offline commands) checks the pattern only."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class KnownRegions:
    """The Region names of every partition that a source (`botocore 1.44.8`) lists."""

    names: frozenset[str]
    source: str

    def problem(self, region: str) -> str | None:
        """One line saying that `region` is none of them, or None when it is one."""
        if region in self.names:
            return None
        return (
            f"{region!r} is not an AWS Region: {self.source}'s partition data lists no such Region (a Region "
            f"newer than {self.source} needs a newer botocore: pip install -U botocore)"
        )

    def first_problem(self, regions: Iterable[str]) -> str | None:
        return next((problem for region in regions if (problem := self.problem(region)) is not None), None)


def policy_regions_problem(regions_by_policy: Iterable[tuple[int, Iterable[str]]], known: KnownRegions) -> str | None:
    """`policies[<index>].regions: ...`, for the first Region of a policy that is none, or None."""
    for index, regions in regions_by_policy:
        problem = known.first_problem(regions)
        if problem is not None:
            return f"policies[{index}].regions: {problem}"
    return None
