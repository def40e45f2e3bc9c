"""Starting the sweep's state machine (Step Functions) idempotently: one execution name, one execution."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from ecr_retention.aws.errors import AwsCallFailed, describe_failure, error_code
from ecr_retention.workflow import execution_name

MAX_INPUT_BYTES = 262_144  # StartExecution's input limit (UTF-8)


class WorkflowError(AwsCallFailed):
    """StartExecution failed (after botocore's retries)."""


class StepFunctionsStarter:
    """One state machine through an injected boto3 Step Functions client."""

    def __init__(self, state_machine_arn: str, sfn_client: Any) -> None:
        parts = state_machine_arn.split(":")
        if len(parts) < 7 or parts[5] != "stateMachine":
            raise ValueError(f"not a state machine ARN: {state_machine_arn!r}")
        self._state_machine_arn = state_machine_arn
        # arn:<partition>:states:<region>:<account>:stateMachine:<machine>[:<version or alias>] runs executions
        # named arn:<partition>:states:<region>:<account>:execution:<machine>:<name>.
        self._execution_arn_prefix = ":".join([*parts[:5], "execution", parts[6]])
        self._client = sfn_client

    def start(self, name: str, payload: Mapping[str, Any]) -> str:
        """The execution's ARN. An execution of this name that already exists (running or finished, same input
        or not) is not an error: its ARN is returned and nothing new starts. Names are unique per state machine
        for 90 days after an execution closes."""
        valid_name = execution_name(name)
        document = json.dumps(payload, sort_keys=True, separators=(",", ":"))
        size = len(document.encode("utf-8"))
        if size > MAX_INPUT_BYTES:
            raise ValueError(
                f"execution {valid_name}: input of {size} bytes is over Step Functions' {MAX_INPUT_BYTES}; "
                "pass an S3 key rather than the data"
            )
        try:
            response = self._client.start_execution(
                stateMachineArn=self._state_machine_arn, name=valid_name, input=document
            )
        except ClientError as error:
            if error_code(error) == "ExecutionAlreadyExists":
                return self.execution_arn(valid_name)
            raise self._failure(valid_name, error) from None
        except BotoCoreError as error:
            raise self._failure(valid_name, error) from None
        return str(response["executionArn"])

    def execution_arn(self, valid_name: str) -> str:
        return f"{self._execution_arn_prefix}:{valid_name}"

    def _failure(self, name: str, error: ClientError | BotoCoreError) -> WorkflowError:
        code, description = describe_failure("StartExecution", error)
        return WorkflowError(f"{self._state_machine_arn}, execution {name}: {description}", code=code)
