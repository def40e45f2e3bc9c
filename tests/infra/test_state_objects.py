"""The bucket's state objects, one entry each (infra/state_objects.py, issue 44 change amplification): the evaluate
role's reads, the reviewers' reads, the writer bindings and the break-glass deletions are derived from them, and say
what they said when each was written out by hand."""

from __future__ import annotations

from ecr_retention.cdk import state_objects
from ecr_retention.cdk.state_objects import STATE_OBJECTS


def test_the_evaluations_read_the_cache_the_manifests_the_holds_the_replication_record_the_snapshots_and_the_memory() -> (
    None
):
    assert state_objects.read_keys("evaluate") == [
        "runs/*/replication.json",
        "snapshots/*",  # its repository's, compared before it is written again
        "manifests/*",
        "in-use/*",
        "holds/*",
        "state/in-use-memory.json",
    ]


def test_the_reviewers_read_the_snapshots_the_manifests_the_holds_and_the_memory_in_that_order() -> None:
    assert state_objects.read_keys("reviewers") == ["snapshots/*", "in-use/*", "holds/*", "state/in-use-memory.json"]
    assert state_objects.read_names("reviewers") == (
        "the registry's snapshots, the in-use manifests, the holds and the in-use memory"
    )


def test_every_wildcard_read_says_why_and_no_single_key_does() -> None:
    for entry in STATE_OBJECTS:
        for reader, why in entry.reads.items():
            assert (why is not None) == ("*" in entry.key), (entry.key, reader)


def test_each_writer_binds_its_keys() -> None:
    bound = {writer: state_objects.bound_keys(writer) for writer in state_objects.WRITER_BINDINGS}

    assert bound == {
        "report": ["state/in-use-memory.json"],
        "targets": ["runs/*/targets.json", "runs/*/batches.json", "runs/*/replication*.json"],
        "evaluate": ["runs/*/repositories/*", "runs/*/batches/*", "runs/*/deletions/*", "snapshots/*"],
        "workflow": ["runs/map-results/*"],
    }


def test_only_the_break_glass_role_deletes_the_protection_state() -> None:
    assert sorted(state_objects.deleted_only_by_break_glass()) == [
        "in-use/*",
        "runs/*",
        "snapshots/*",
        "state/in-use-memory.json",
    ]


def test_every_key_is_declared_once() -> None:
    keys = [entry.key for entry in STATE_OBJECTS]

    assert len(keys) == len(set(keys))
