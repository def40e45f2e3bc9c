"""The evaluate step's wiring (handlers/evaluate.py): a run's, with the lease table."""

from pydantic import Field

from ecr_retention import layout
from ecr_retention.aws.clients import client
from ecr_retention.handlers.settings import RulesSettings
from ecr_retention.handlers.wiring import RunWiring, once_per_cold_start, run_wiring


class EvaluateSettings(RulesSettings):
    """handlers/evaluate.py: one evaluation per repository at a time, through the lease table."""

    lease_table: str = Field(alias=layout.LEASE_TABLE_VARIABLE, min_length=3)


def evaluate_wiring(settings: EvaluateSettings) -> RunWiring:
    from ecr_retention.aws.dynamodb_lease import DynamoDbLeases

    return run_wiring(settings, leases=DynamoDbLeases(settings.lease_table, client("dynamodb")))


@once_per_cold_start
def evaluate_at_cold_start() -> RunWiring:
    return evaluate_wiring(EvaluateSettings.from_environ())
