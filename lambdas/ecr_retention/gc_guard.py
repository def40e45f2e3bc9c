"""The cyclic garbage collector kept out of bulk work.

Loading a snapshot, planning it, reporting a run and rendering its page build hundreds of thousands of objects
that live until the work ends and form no reference cycles to speak of. Every full collection walks all of them,
and CPython starts one each time the long-lived heap grows by a quarter, so the collector made the work
superlinear (at 100,000 images it was 45 % of the load and 35 % of the plan) while freeing nothing: the peak
memory is the same with it off. So the CLI's commands and the bulk Lambda handlers run with it off, and it is
back on afterwards, as it was; and every handler's imports load with it off (a sixth of a cold start went to it).
What the first guarded call finds alive (the imports, the cold start) is frozen once, out of reach of every later
collection; later calls freeze nothing, so the garbage of one Lambda invocation is never made permanent.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache


@cache
def _freeze_startup() -> None:
    gc.freeze()


@contextmanager
def imports_without_cyclic_gc() -> Iterator[None]:
    """A Lambda handler's imports (its cold start): the modules, classes and models they build live as long as the
    process and form no garbage to speak of, yet the collector walks the growing heap again and again while they load
    (about a sixth of a handler's import). So they load with it off, and what is then alive is frozen, out of reach of
    every later collection, as the first guarded call freezes its startup; a collector already off stays off."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


@contextmanager
def cyclic_gc_off() -> Iterator[None]:
    """Usable as a context manager or a decorator; nesting and a collector already off are left as they are."""
    _freeze_startup()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
