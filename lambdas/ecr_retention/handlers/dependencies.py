"""What every handler needs, built once per cold start: settings, the rules file, the adapters."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ecr_retention.aws.clients import client
from ecr_retention.aws.dynamodb_lease import DynamoDbLeases
from ecr_retention.aws.ecr_registry import EcrRegistry
from ecr_retention.aws.s3_bucket import S3Bucket
from ecr_retention.aws.sfn_workflow import StepFunctionsStarter
from ecr_retention.aws.sns_notifier import SnsNotifier
from ecr_retention.domain.config import RetentionConfig
from ecr_retention.handlers.settings import Settings
from ecr_retention.loading import load_config
from ecr_retention.services.run import Dependencies


@dataclass(frozen=True)
class Runtime:
    settings: Settings
    config: RetentionConfig
    deps: Dependencies

    def starter(self) -> StepFunctionsStarter:
        if not self.settings.state_machine_arn:
            raise RuntimeError("STATE_MACHINE_ARN is not set for this function")
        return StepFunctionsStarter(self.settings.state_machine_arn, client("stepfunctions"))


def build_runtime(settings: Settings) -> Runtime:
    registry_id = settings.registry_id or client("sts").get_caller_identity()["Account"]
    deps = Dependencies(
        registry=EcrRegistry(client("ecr"), registry_id, settings.region),
        bucket=S3Bucket(settings.bucket_name, client("s3")),
        notifier=SnsNotifier(settings.topic_arn, client("sns")) if settings.topic_arn else None,
        leases=DynamoDbLeases(settings.lease_table, client("dynamodb")) if settings.lease_table else None,
    )
    return Runtime(settings=settings, config=load_config(settings.rules_file), deps=deps)


@lru_cache(maxsize=1)
def runtime() -> Runtime:
    return build_runtime(Settings.from_environ())
