"""A rule's tag patterns look up the tags a pattern without a wildcard names, and match the others only against the
tags that start with a pattern's first character (rules.TagPatterns): the same tags as matching every tag of the
repository, whatever the patterns and the tags."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from ecr_retention.domain.patterns import compile_globs
from ecr_retention.domain.planning.repository import RepositoryImages
from ecr_retention.domain.planning.rules import TagPatterns
from support.builders import digest, snapshot

NOW = datetime(2026, 11, 30, 6, tzinfo=UTC)
TAG_CHARACTERS = "ab.-_1Z"
tags = st.text(TAG_CHARACTERS, min_size=1, max_size=4)
patterns = st.text(TAG_CHARACTERS + "*?", min_size=1, max_size=4)


def _images(tag_lists: list[list[str]]) -> RepositoryImages:
    details = [
        {"imageDigest": digest(str(n)), "imagePushedAt": "2026-01-01T00:00:00Z", "imageTags": image_tags}
        for n, image_tags in enumerate(tag_lists)
    ]
    return RepositoryImages.of(snapshot({"repositoryName": "app", "imageDetails": details}).repositories[0], NOW)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(tags, max_size=3, unique=True), max_size=8), st.lists(patterns, min_size=1, max_size=3))
def test_the_tags_looked_at_are_every_tag_the_patterns_match(tag_lists: list[list[str]], globs: list[str]) -> None:
    images = _images(tag_lists)
    compiled = TagPatterns.of(tuple(globs))
    assert compiled is not None
    every_match = {tag for tag in images.rank_by_tag if compile_globs(tuple(globs)).fullmatch(tag)}
    assert set(compiled.matching(images)) == every_match
    looked_at = (
        images.rank_by_tag
        if compiled.first_characters is None
        else list(images.tags_starting_with(compiled.first_characters))
    )
    assert len(set(looked_at)) == len(list(looked_at))  # no tag twice


def _first_characters(*globs: str) -> tuple[str, ...] | None:
    compiled = TagPatterns.of(globs)
    assert compiled is not None
    return compiled.first_characters


def test_a_pattern_that_starts_with_a_wildcard_looks_at_every_tag() -> None:
    assert _first_characters("v*", "*-dev") is None
    assert _first_characters("v*", "?1") is None
    assert _first_characters("v*", "l?test") == ("v", "l")
    assert _first_characters("v*", "val", "latest") == ("v",)  # a pattern without a wildcard is looked up


def test_a_pattern_without_a_wildcard_is_looked_up_not_matched() -> None:
    compiled = TagPatterns.of(("latest", "stable", "v*"))
    assert compiled is not None
    assert compiled.literals == ("latest", "stable")
    assert compiled.first_characters == ("v",)
    images = _images([["latest"], ["stable-1"], ["v1", "stable"], ["main"]])
    assert sorted(compiled.matching(images)) == ["latest", "stable", "v1"]


def test_only_literals_match_no_tag_by_regex() -> None:
    compiled = TagPatterns.of(("latest", "dev"))
    assert compiled is not None
    assert compiled.fullmatch is None
    assert sorted(compiled.matching(_images([["latest"], ["dev-1"], ["dev"]]))) == ["dev", "latest"]
