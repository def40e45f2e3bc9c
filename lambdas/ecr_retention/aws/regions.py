"""The Regions botocore knows: every partition's Regions in its partition data (botocore/data/partitions.json, the
file the SDK's endpoint rules read; the Regions `get_available_regions('ecr', partition)` names are among them),
read once per process. The domain receives them (domain/registry/regions.py) and never imports botocore."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import botocore

from ecr_retention.domain.registry.regions import KnownRegions

_DATA = Path(botocore.__file__).parent / "data"


@lru_cache(maxsize=1)
def botocore_regions() -> KnownRegions:
    """Every Region of every partition (`aws-global` and its kind, which are endpoints rather than Regions, aside):
    partitions.json, or endpoints.json's partitions in a botocore without it (both list `partitions[].regions`)."""
    source = _DATA / "partitions.json"
    if not source.is_file():
        source = _DATA / "endpoints.json"
    data = json.loads(source.read_text(encoding="utf-8"))
    names = frozenset(
        region for partition in data["partitions"] for region in partition["regions"] if not region.endswith("-global")
    )
    return KnownRegions(names=names, source=f"botocore {botocore.__version__}")
