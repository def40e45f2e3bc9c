"""What the evaluate step and the sentinel leave out of their cold start because their common invocation never uses it
(issue 46, item 4; test_handler_imports.py holds the rest), each read in a fresh interpreter:

- the sentinel none of the models of a registry's images (domain/registry/images.py: RepositorySnapshot, Snapshot, the
  documents and the image model): a removal of an image nobody runs reads none; they load where images are read (the
  ECR adapter, when a removal of a running image is confirmed) or a repository is snapshotted (services/snapshot.py,
  when a policy just put is checked). What runs and what is held name a digest by domain/registry/digests.py's Digest.
- the sentinel none of what restores an image (services/act.py, the ledger, the removal order): it restores only an
  archived image that runs (services/sentinel.py heal loads them then);
- the sentinel none of the models of the events that come through CloudTrail (domain/sentinel/trail_events.py) nor
  the union of every event (handlers/sentinel_events.py): it reads an ECR Image Action, its common event, by its own
  model, and loads them for another event or a refused one (test_sentinel_image_action_read_alone.py: read as the union
  reads it);
- neither the evaluate step nor the sentinel a hold as stored (domain/holds/stored.py: the strict model, its parsing,
  what a malformed object becomes): they load it with the first hold object they read, and a run or an event that
  finds none under holds/ (the common case) builds none of it.
"""

from __future__ import annotations

import pytest
from unit.test_handler_imports import loaded_with_wiring

IMAGE_MODELS = "ecr_retention.domain.registry.images"
CLOUDTRAIL_EVENTS = ("ecr_retention.handlers.sentinel_events", "ecr_retention.domain.sentinel.trail_events")
RESTORING = (
    "ecr_retention.services.act",
    "ecr_retention.domain.planning.ledger",
    "ecr_retention.domain.planning.removal_order",
)


def test_the_sentinel_loads_none_of_the_image_models_at_import_or_with_its_wiring() -> None:
    loaded = loaded_with_wiring("sentinel")

    assert "ecr_retention.services.snapshot" in loaded  # its manifest cache
    assert "ecr_retention.domain.inventory.manifest" in loaded
    assert "ecr_retention.domain.holds.model" in loaded
    assert IMAGE_MODELS not in loaded


def test_the_sentinel_loads_what_restores_an_image_only_when_it_restores_one() -> None:
    loaded = loaded_with_wiring("sentinel")

    assert "ecr_retention.services.sentinel" in loaded
    assert [name for name in RESTORING if name in loaded] == []


def test_the_sentinel_loads_the_union_of_its_events_only_for_an_event_that_is_no_image_action() -> None:
    loaded = loaded_with_wiring("sentinel")

    assert "ecr_retention.handlers.sentinel" in loaded
    assert "ecr_retention.domain.sentinel.events" in loaded
    assert [name for name in CLOUDTRAIL_EVENTS if name in loaded] == []


@pytest.mark.parametrize("handler", ["evaluate", "sentinel"])
def test_a_hold_as_stored_loads_with_the_first_hold_object_read(handler: str) -> None:
    loaded = loaded_with_wiring(handler)

    assert "ecr_retention.domain.holds.model" in loaded
    assert "ecr_retention.domain.holds.stored" not in loaded
