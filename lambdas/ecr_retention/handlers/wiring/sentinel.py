"""The sentinel's wiring (handlers/sentinel.py, and the bucket's guards it alerts on: handlers/guard.py)."""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import Field

from ecr_retention import layout
from ecr_retention.aws.clients import client
from ecr_retention.clock import utc_now
from ecr_retention.handlers.settings import SENTINEL_ROLE_PATTERN, RulesSettings
from ecr_retention.handlers.wiring import bucket_of, once_per_cold_start, other_registries, registry_of, rules_of

if TYPE_CHECKING:
    from ecr_retention.domain.config import RetentionConfig
    from ecr_retention.services.sentinel import SentinelPorts


class SentinelSettings(RulesSettings):
    """handlers/sentinel.py: its alerts go to the report topic; its records name its role."""

    topic_arn: str = Field(alias=layout.TOPIC_ARN_VARIABLE, pattern=r"^arn:aws[a-z-]*:sns:")
    sentinel_role_arn: str | None = Field(
        default=None, alias=layout.SENTINEL_ROLE_ARN_VARIABLE, pattern=SENTINEL_ROLE_PATTERN
    )


@dataclass(frozen=True)
class SentinelWiring:
    """The sentinel: the rules file (which repositories are managed, safety.restore_in_use and in_use_grace), the
    registries it confirms with and restores in (each pruned Region's: an event's Region chooses), the bucket (what runs, the manifest cache, the record of removals),
    the report topic, and a clock."""

    config: "RetentionConfig"
    ports: "SentinelPorts"
    clock: Callable[[], datetime] = utc_now


def sentinel_wiring(settings: SentinelSettings) -> SentinelWiring:
    from ecr_retention.aws.sns_notifier import SnsNotifier
    from ecr_retention.services.sentinel import SentinelPorts
    from ecr_retention.services.snapshot import BucketManifestCache

    bucket, registry = bucket_of(settings), registry_of(settings)
    ports = SentinelPorts(
        registry=registry,
        bucket=bucket,
        notifier=SnsNotifier(settings.topic_arn, client("sns")),
        cache=BucketManifestCache(bucket),
        sentinel_role=settings.sentinel_role_arn,
        other_registries=other_registries(settings, registry),
    )
    return SentinelWiring(rules_of(settings), ports)


@once_per_cold_start
def sentinel_at_cold_start() -> SentinelWiring:
    return sentinel_wiring(SentinelSettings.from_environ())
