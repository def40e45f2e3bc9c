"""A Lambda handler's imports load with the cyclic collector off, and what they built is then frozen, out of reach
of every later collection (gc_guard.imports_without_cyclic_gc; issue 46, item 4: the collector walked the growing heap
again and again during a cold start). The collector is back on afterwards, as it was."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from ecr_retention.gc_guard import imports_without_cyclic_gc

HANDLERS = ("targets", "evaluate", "report", "push", "tagger", "collector", "sentinel")
# In a fresh interpreter: the collector's runs while the handler's own import statements (its `with` block) ran, and
# what is frozen and whether the collector is on afterwards.
PROBE = """
import gc, json, sys
import ecr_retention.gc_guard as guard
inside = []
entered = []
runs = []
original = guard.imports_without_cyclic_gc
def watching():
    block = original()
    class Watched:
        def __enter__(self):
            block.__enter__()
            inside.append(True)
            entered.append(True)
        def __exit__(self, *raised):
            inside.pop()
            return block.__exit__(*raised)
    return Watched()
guard.imports_without_cyclic_gc = watching
gc.callbacks.append(lambda phase, info: runs.append(info["generation"]) if phase == "start" and inside else None)
import ecr_retention.handlers.{handler}
print(json.dumps({{"entered": len(entered), "runs": runs, "frozen": gc.get_freeze_count(), "enabled": gc.isenabled()}}))
"""


@pytest.fixture(autouse=True)
def collector_on_and_nothing_frozen() -> Iterator[None]:
    gc.enable()
    yield
    gc.unfreeze()
    gc.enable()


def test_the_collector_is_off_inside_and_back_on_after_with_what_was_built_frozen() -> None:
    seen = []
    with imports_without_cyclic_gc():
        seen.append(gc.isenabled())
        built = [{"a": [index]} for index in range(1000)]

    assert seen == [False]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(built)


def test_an_import_that_fails_still_leaves_the_collector_on() -> None:
    with pytest.raises(ModuleNotFoundError), imports_without_cyclic_gc():
        import ecr_retention.no_such_module  # type: ignore[import-not-found]  # noqa: F401

    assert gc.isenabled()


def test_a_collector_already_off_stays_off() -> None:
    gc.disable()

    with imports_without_cyclic_gc():
        pass

    assert not gc.isenabled()


@pytest.mark.parametrize("handler", HANDLERS)
def test_no_collection_runs_while_a_handler_imports_and_its_modules_are_frozen(handler: str) -> None:
    code = PROBE.format(handler=handler)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    probe = json.loads(done.stdout)

    assert probe["entered"] == 1  # the handler's imports, in one block
    assert probe["runs"] == []
    assert probe["frozen"] > 10_000  # boto3, pydantic, Powertools and the package: all of it
    assert probe["enabled"]
