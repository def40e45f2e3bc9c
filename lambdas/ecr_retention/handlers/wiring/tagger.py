"""The tagger's wiring (handlers/tagger.py)."""

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from ecr_retention.clock import utc_now
from ecr_retention.handlers.settings import RulesSettings
from ecr_retention.handlers.wiring import bucket_of, once_per_cold_start, other_registries, registry_of, rules_of

if TYPE_CHECKING:
    from ecr_retention.domain.config import RetentionConfig
    from ecr_retention.ports import Bucket, Registry
    from ecr_retention.registries import Registries


class TaggerSettings(RulesSettings):
    """handlers/tagger.py"""


@dataclass(frozen=True)
class TaggerWiring:
    """The tagger: the rules file, the registry whose images it tags (the home Region's) and the other pruned Regions'
    (it tags in each), the bucket of in-use manifests, and a clock (it runs no pipeline run, so it needs none of a
    run's adapters)."""

    config: "RetentionConfig"
    registry: "Registry"
    bucket: "Bucket"
    clock: Callable[[], datetime] = utc_now
    other_registries: "tuple[Registry, ...]" = field(default=(), kw_only=True)

    @property
    def registries(self) -> "Registries":
        from ecr_retention.registries import Registries

        return Registries.of(self.registry, self.other_registries)


def tagger_wiring(settings: TaggerSettings) -> TaggerWiring:
    registry, bucket = registry_of(settings), bucket_of(settings)
    return TaggerWiring(rules_of(settings), registry, bucket, other_registries=other_registries(settings, registry))


@once_per_cold_start
def tagger_at_cold_start() -> TaggerWiring:
    return tagger_wiring(TaggerSettings.from_environ())
