"""The push function's wiring (handlers/push.py): the workflow it starts runs of, and the rules file."""

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field

from ecr_retention import layout
from ecr_retention.aws.clients import client
from ecr_retention.handlers.settings import FunctionSettings, default_rules_file
from ecr_retention.handlers.wiring import once_per_cold_start
from ecr_retention.loading import load_config

if TYPE_CHECKING:
    from ecr_retention.aws.sfn_workflow import StepFunctionsStarter
    from ecr_retention.domain.config import RetentionConfig


class PushSettings(FunctionSettings):
    """handlers/push.py: it starts runs of the workflow, for the repositories a policy of the rules file manages (the
    push rule's pattern may be coarser than the rules file: infra.repository_scope.coarsened_matchers)."""

    state_machine_arn: str = Field(alias=layout.STATE_MACHINE_ARN_VARIABLE, pattern=r"^arn:aws[a-z-]*:states:")
    rules_file: Path = Field(default_factory=default_rules_file, alias=layout.RULES_FILE_VARIABLE)


@dataclass(frozen=True)
class PushWiring:
    starter: "StepFunctionsStarter"
    region: str  # the home Region: a push there starts a run of the home registry; elsewhere, of that Region's
    # The rules: a push to a repository that no policy manages in its Region starts no run.
    config: "RetentionConfig"


def push_wiring(settings: PushSettings) -> PushWiring:
    from ecr_retention.aws.sfn_workflow import StepFunctionsStarter

    return PushWiring(
        StepFunctionsStarter(settings.state_machine_arn, client("stepfunctions")),
        settings.region,
        load_config(settings.rules_file),
    )


@once_per_cold_start
def push_at_cold_start() -> PushWiring:
    return push_wiring(PushSettings.from_environ())
