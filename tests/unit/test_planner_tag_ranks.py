"""A rule's tag patterns give the ranks of the tags they match read beside the tags (rules.TagPatterns.matching_ranks),
not looked up tag by tag: the same ranks, in the same order, as looking up each tag `matching` reads."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from ecr_retention.domain.planning.repository import RepositoryImages
from ecr_retention.domain.planning.rules import TagPatterns
from support.builders import digest, snapshot

NOW = datetime(2026, 11, 30, 6, tzinfo=UTC)
TAG_CHARACTERS = "ab.-_1Z"
tags = st.text(TAG_CHARACTERS, min_size=1, max_size=4)
patterns = st.text(TAG_CHARACTERS + "*?", min_size=1, max_size=4)


def _images(tag_lists: list[list[str]]) -> RepositoryImages:
    details = [
        {"imageDigest": digest(str(n)), "imagePushedAt": f"2026-01-{n % 28 + 1:02d}T00:00:00Z", "imageTags": image_tags}
        for n, image_tags in enumerate(tag_lists)
    ]
    return RepositoryImages.of(snapshot({"repositoryName": "app", "imageDetails": details}).repositories[0], NOW)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(tags, max_size=3, unique=True), max_size=8), st.lists(patterns, min_size=1, max_size=3))
def test_the_ranks_read_beside_the_tags_are_the_ranks_of_the_tags_matched(
    tag_lists: list[list[str]], globs: list[str]
) -> None:
    images = _images(tag_lists)
    compiled = TagPatterns.of(tuple(globs))
    assert compiled is not None
    looked_up = [images.rank_by_tag[tag] for tag in compiled.matching(images)]
    assert list(compiled.matching_ranks(images)) == looked_up


def test_a_tag_on_two_images_gives_the_rank_rank_by_tag_gives_it() -> None:
    images = _images([["v1", "latest"], ["v2"], ["v1"]])  # a snapshot written by hand: v1 on two images
    compiled = TagPatterns.of(("v*", "latest"))
    assert compiled is not None
    assert sorted(compiled.matching_ranks(images)) == sorted(images.rank_by_tag[tag] for tag in ("v1", "v2", "latest"))


def test_the_tags_and_ranks_by_first_character_are_aligned() -> None:
    images = _images([["a1"], ["b1", "a2"], ["a3"], []])
    for first_characters in (("a", "z"), ("a", "b", "z"), ("z",)):
        tags, ranks = map(list, images.tags_and_ranks_starting_with(first_characters))
        assert [images.rank_by_tag[tag] for tag in tags] == ranks
        assert set(tags) == {tag for tag in images.rank_by_tag if tag[:1] in first_characters}
    assert list(images.tags_starting_with(("a",))) == [tag for tag in images.rank_by_tag if tag.startswith("a")]
