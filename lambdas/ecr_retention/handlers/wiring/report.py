"""The report step's wiring (handlers/report.py): a run's, with the report topic, the renderers and the sentinel's
role."""

from pydantic import Field

from ecr_retention import layout
from ecr_retention.aws.clients import client
from ecr_retention.handlers.settings import SENTINEL_ROLE_PATTERN, RulesSettings
from ecr_retention.handlers.wiring import RunWiring, once_per_cold_start, run_wiring


class ReportSettings(RulesSettings):
    """handlers/report.py: the run's summary goes to the report topic; the in-use check reads the sentinel's records."""

    topic_arn: str = Field(alias=layout.TOPIC_ARN_VARIABLE, pattern=r"^arn:aws[a-z-]*:sns:")
    sentinel_role_arn: str | None = Field(
        default=None, alias=layout.SENTINEL_ROLE_ARN_VARIABLE, pattern=SENTINEL_ROLE_PATTERN
    )


def report_wiring(settings: ReportSettings) -> RunWiring:
    # Only the report step renders: the other functions load neither the renderers nor the report's models.
    from ecr_retention.aws.sns_notifier import SnsNotifier
    from ecr_retention.report_renderers import RENDERERS

    notifier = SnsNotifier(settings.topic_arn, client("sns"))
    return run_wiring(settings, notifier=notifier, sentinel_role=settings.sentinel_role_arn, renderers=RENDERERS)


@once_per_cold_start
def report_at_cold_start() -> RunWiring:
    return report_wiring(ReportSettings.from_environ())
