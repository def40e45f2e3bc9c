"""tag_in_repositories resolved once per run (domain/planning/other_tags.py): the same answers as matching every
repository's name for every repository, a repository's own tags never counted as another's."""

from __future__ import annotations

from ecr_retention.domain.planning.other_tags import OtherRepositoryTags

TAGS = {
    "team/api": frozenset({"v1", "v2", "only-api"}),
    "team/web": frozenset({"v2", "v3"}),
    "shared": frozenset({"v1"}),
}


def test_a_repository_named_by_its_own_pattern_counts_only_the_others_tags() -> None:
    present = OtherRepositoryTags(TAGS).present_elsewhere("team/api", ["team/*"])

    assert [tag for tag in ("v1", "v2", "v3", "only-api") if present(tag)] == ["v2", "v3"]


def test_a_tag_is_present_when_the_one_pattern_names_a_repository_that_carries_it() -> None:
    present = OtherRepositoryTags(TAGS).present_elsewhere("shared", ["team/*"])

    assert [tag for tag in ("v1", "v2", "v3", "only-api", "v4") if present(tag)] == ["v1", "v2", "v3", "only-api"]


def test_a_tag_is_present_when_any_pattern_names_a_repository_that_carries_it() -> None:
    present = OtherRepositoryTags(TAGS).present_elsewhere("team/web", ["shared", "team/api"])

    assert [tag for tag in ("v1", "v2", "v3", "only-api") if present(tag)] == ["v1", "v2", "only-api"]


def test_the_first_pattern_that_names_no_other_repository_is_the_unknown_one() -> None:
    tags = OtherRepositoryTags(TAGS)

    assert tags.unnamed("shared", ["team/*", "shared", "missing"]) == "shared"
    assert tags.unnamed("team/api", ["shared", "team/*"]) is None
    assert tags.unnamed("team/api", ["missing"]) == "missing"
