"""Why a run could not read its registry's replication: the grant it lacks only when AWS denied the call; an
answer that could not be read, or a missing run file, says what is wrong instead."""

from __future__ import annotations

from ecr_retention.domain.registry.replication import GRANT
from ecr_retention.run_files import RunFiles
from ecr_retention.services.replication import read_replication
from support.builders import ACCOUNT, REGION
from support.fakes import FakeRegistry, MemoryBucket


def problem_reading(problem: str) -> str:
    registry = FakeRegistry(registry_id=ACCOUNT, region=REGION)
    registry.replication_problem = problem
    read = read_replication(registry)
    assert read.problem is not None
    return read.problem


def test_a_denied_describe_registry_names_the_grant_it_needs() -> None:
    problem = problem_reading("DescribeRegistry failed: AccessDeniedException: not authorized")
    assert problem == (
        "the registry's replication configuration is unknown: DescribeRegistry failed: AccessDeniedException: not "
        f"authorized; nothing is deleted until it can be read ({GRANT})"
    )


def test_an_answer_that_cannot_be_read_does_not_blame_a_permission() -> None:
    problem = problem_reading(
        "DescribeRegistry answered, but its replicationConfiguration cannot be read: rules[0].destinations: "
        "should be a list, not a string"
    )
    assert problem == (
        "the registry's replication configuration is unknown: DescribeRegistry answered, but its "
        "replicationConfiguration cannot be read: rules[0].destinations: should be a list, not a string; nothing "
        "is deleted until it can be read"
    )
    assert "ecr:DescribeRegistry" not in problem


def test_throttling_past_the_retries_does_not_blame_a_permission() -> None:
    assert GRANT not in problem_reading("DescribeRegistry failed: ThrottlingException: Rate exceeded")


def test_a_missing_run_file_does_not_blame_a_permission() -> None:
    problem = (
        RunFiles(MemoryBucket(name="inventory"), "20261130T060000Z-sweep-0123abcd")
        .load_replication()
        .of(REGION)
        .problem
    )
    assert problem is not None
    assert problem.endswith(
        "replication.json is missing (the targets step stores it); nothing is deleted until it can be read"
    )
