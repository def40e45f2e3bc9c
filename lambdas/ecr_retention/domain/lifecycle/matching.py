"""Which images a rule's selection selects: ECR's tag patterns, storage classes, and whether one
selection covers another."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from ecr_retention.domain.lifecycle.policy import LifecycleSelection, StorageClass
from ecr_retention.domain.registry.images import ImageDetail


@lru_cache(maxsize=4096)
def _pattern_regex(pattern: str) -> re.Pattern[str]:
    """ECR's tag pattern: `*` is any run of characters, everything else literal, whole tag."""
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")), re.DOTALL)


def tag_matches(tag: str, pattern: str) -> bool:
    return _pattern_regex(pattern).fullmatch(tag) is not None


def pattern_includes(outer: str, inner: str) -> bool:
    """True when every tag that matches `inner` also matches `outer` (sound, for `*`-only patterns).

    `inner` is matched as text: its `*` can only be absorbed by a `*` of `outer`, since tags and
    the literal parts of patterns never contain `*`."""
    return _pattern_regex(outer).fullmatch(inner) is not None


def storage_class_of(image: ImageDetail) -> StorageClass | None:
    """ACTIVE images are standard, ARCHIVED are archive; ACTIVATING ones (being restored) are neither."""
    return {"ACTIVE": "standard", "ARCHIVED": "archive"}.get(image.image_status)  # type: ignore[return-value]


def tags_selected(selection: LifecycleSelection, tags: Iterable[str]) -> bool:
    """The tag part of a selection: every list entry matches some tag (AND across entries)."""
    tags = tuple(tags)
    if selection.tag_status == "any":
        return True
    if selection.tag_status == "untagged":
        return not tags
    return bool(tags) and all(any(tag_matches(tag, p) for tag in tags) for p in selection.patterns)


def selects(selection: LifecycleSelection, image: ImageDetail) -> bool:
    """ECR's "matches the tagging requirements" of a rule, within the rule's storage class."""
    if storage_class_of(image) != selection.effective_storage_class:
        return False
    return tags_selected(selection, image.image_tags)


def selection_includes(outer: LifecycleSelection, inner: LifecycleSelection) -> bool:
    """True when every image `inner` selects is also selected by `outer` (sound, not complete)."""
    if outer.effective_storage_class != inner.effective_storage_class:
        return False
    if outer.tag_status == "any":
        return True
    if outer.tag_status == "untagged":
        return inner.tag_status == "untagged"
    if inner.tag_status != "tagged":
        return False
    return all(any(pattern_includes(o, i) for i in inner.patterns) for o in outer.patterns)
