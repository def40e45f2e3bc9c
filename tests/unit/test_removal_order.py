"""The order of removals (domain/planning/removal_order.py), without a registry.

Given the candidates of a repository and what they live and die with, when the next wave is computed, then an
index goes before its children and a subject before its referrers, and whatever a parent that stayed holds back
stays with it."""

from __future__ import annotations

from ecr_retention.domain.planning.removal_order import Wave, next_wave, removal_parents
from ecr_retention.domain.registry.images import RepositorySnapshot
from support.builders import OCI_INDEX, digest, image, index_manifest, repository, snapshot

# index -> child -> grandchild (a referrer of the child), and a lone image
PARENTS = {"child": {"index"}, "grandchild": {"child"}}


def repository_snapshot(*images: dict[str, object], manifests: dict[str, object] | None = None) -> RepositorySnapshot:
    [repo] = snapshot(repository("app", *images, manifests=manifests)).repositories
    return repo


def test_an_index_goes_in_a_wave_before_its_children_and_they_before_their_referrers() -> None:
    remaining = ["grandchild", "child", "index", "lone"]

    first = next_wave(remaining, PARENTS, not_removed=set(), gone=set())
    second = next_wave(first.waiting, PARENTS, not_removed=set(), gone=set())
    third = next_wave(second.waiting, PARENTS, not_removed=set(), gone=set())

    assert first == Wave(ready=("index", "lone"), waiting=("grandchild", "child"), stays={})
    assert second == Wave(ready=("child",), waiting=("grandchild",), stays={})
    assert third == Wave(ready=("grandchild",), waiting=(), stays={})


def test_the_children_of_an_index_whose_removal_was_cancelled_or_failed_stay_with_it() -> None:
    wave = next_wave(["child", "grandchild", "lone"], PARENTS, not_removed={"index"}, gone=set())

    assert wave.stays == {"child": "index", "grandchild": "child"}
    assert wave.ready == ("lone",)
    assert wave.waiting == ()


def test_a_referrer_listed_before_its_subject_stays_once_the_subject_stays_in_the_same_wave() -> None:
    wave = next_wave(["grandchild", "child"], PARENTS, not_removed={"index"}, gone=set())

    assert wave.stays == {"child": "index"}
    assert wave.waiting == ("grandchild",)  # it stays with the child in the next wave
    assert next_wave(wave.waiting, PARENTS, not_removed={"index", "child"}, gone=set()).stays == {"grandchild": "child"}


def test_a_parent_that_is_gone_holds_nothing_back() -> None:
    wave = next_wave(["child"], PARENTS, not_removed={"index"}, gone={"index"})

    assert wave == Wave(ready=("child",), waiting=(), stays={})


def test_candidates_cancelled_or_failed_are_not_in_any_wave() -> None:
    wave = next_wave(["index", "lone"], PARENTS, not_removed={"lone"}, gone=set())

    assert wave == Wave(ready=("index",), waiting=(), stays={})


def test_references_that_form_a_cycle_leave_only_cycles() -> None:
    cycle = {"a": {"b"}, "b": {"a"}}

    wave = next_wave(["a", "b"], cycle, not_removed=set(), gone=set())

    assert wave.only_cycles_left
    assert wave.waiting == ("a", "b")
    assert not next_wave(["index"], PARENTS, not_removed=set(), gone=set()).only_cycles_left


def test_removal_parents_are_the_indexes_and_subjects_among_the_candidates() -> None:
    repo = repository_snapshot(
        image("index", "v1", media_type=OCI_INDEX),
        image("amd64"),
        image("arm64"),
        image("sbom", subject="amd64"),
        image("signature", f"{digest('index').replace(':', '-')}.sig"),
        image("orphan", subject="deleted-long-ago"),
        manifests={"index": index_manifest("amd64", "arm64")},
    )
    candidates = [digest(seed) for seed in ("index", "amd64", "sbom", "signature", "orphan")]

    parents = removal_parents(repo, candidates)

    assert parents == {
        digest("amd64"): {digest("index")},
        digest("sbom"): {digest("amd64")},
        digest("signature"): {digest("index")},
    }  # arm64 is no candidate; the orphaned referrer has no parent, so it goes in the first wave
