"""newest_first sorts by push time and puts each run of images pushed at one instant in digest order: the order of
the (time since the push, digest) key it had, whatever the images' order, ties and time zones."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from ecr_retention.domain.planning.repository import newest_first
from ecr_retention.domain.registry.images import ImageDetail
from support.builders import digest

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
BASE = datetime(2026, 11, 1, tzinfo=UTC)


def _by_the_old_key(images: list[ImageDetail]) -> list[ImageDetail]:
    return sorted(images, key=lambda image: (_EPOCH - image.image_pushed_at, image.image_digest))


def _image(n: int, pushed: datetime) -> ImageDetail:
    return ImageDetail(image_digest=digest(f"image-{n}"), image_pushed_at=pushed)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=6), max_size=40), st.randoms(use_true_random=False))
def test_newest_first_is_the_order_of_push_time_descending_then_digest(minutes: list[int], rng: random.Random) -> None:
    """Few distinct instants, so that most images tie with others, in runs anywhere in the list."""
    images = [_image(n, BASE + timedelta(minutes=minute)) for n, minute in enumerate(minutes)]
    rng.shuffle(images)
    assert newest_first(images) == _by_the_old_key(images)


def test_one_instant_in_two_time_zones_is_one_tie() -> None:
    paris = timezone(timedelta(hours=1))
    images = [_image(1, BASE), _image(2, BASE.astimezone(paris)), _image(3, BASE - timedelta(seconds=1))]
    assert newest_first(images) == _by_the_old_key(images)


def test_a_tie_at_either_end_and_no_tie_at_all() -> None:
    times = [BASE, BASE, BASE - timedelta(days=1), BASE - timedelta(days=2), BASE - timedelta(days=2)]
    images = [_image(n, pushed) for n, pushed in enumerate(times)]
    for order in (images, images[::-1]):
        assert newest_first(order) == _by_the_old_key(order)
    alone = [_image(n, BASE - timedelta(hours=n)) for n in range(5)]
    assert newest_first(alone[::-1]) == alone
    assert newest_first([]) == []
