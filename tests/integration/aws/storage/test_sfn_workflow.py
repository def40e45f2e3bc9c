"""StepFunctionsStarter against moto Step Functions: one execution per name, whatever retries happen."""

from __future__ import annotations

import json
import re
from typing import Any

import boto3
import pytest

from ecr_retention.aws.sfn_workflow import StepFunctionsStarter, WorkflowError
from ecr_retention.workflow import batch_execution_name, execution_name
from tests.integration.aws.conftest import REGION
from tests.integration.aws.storage.faults import count_calls

ACCOUNT = "123456789012"
PASS_MACHINE = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}})
PAYLOAD = {"runId": "push-1", "trigger": "push", "repositories": ["app/api", "app/web"]}
VALID_NAME = re.compile(r"[A-Za-z0-9_-]{1,80}")


@pytest.fixture
def sfn() -> Any:
    return boto3.client("stepfunctions", region_name=REGION)


@pytest.fixture
def machine_arn(sfn: Any) -> str:
    return str(
        sfn.create_state_machine(
            name="ecr-retention-sweep",
            definition=PASS_MACHINE,
            roleArn=f"arn:aws:iam::{ACCOUNT}:role/ecr-retention-sweep",
        )["stateMachineArn"]
    )


@pytest.fixture
def starter(sfn: Any, machine_arn: str) -> StepFunctionsStarter:
    return StepFunctionsStarter(machine_arn, sfn)


def executions(sfn: Any, machine_arn: str) -> list[dict[str, Any]]:
    return list(sfn.list_executions(stateMachineArn=machine_arn)["executions"])


class TestStart:
    def test_starts_an_execution_with_the_payload_as_input(self, sfn: Any, starter: StepFunctionsStarter) -> None:
        arn = starter.start("push-1", PAYLOAD)

        assert arn == f"arn:aws:states:{REGION}:{ACCOUNT}:execution:ecr-retention-sweep:push-1"
        described = sfn.describe_execution(executionArn=arn)
        assert described["name"] == "push-1"
        assert json.loads(described["input"]) == PAYLOAD

    def test_a_repeated_start_of_a_running_execution_returns_it(
        self, sfn: Any, machine_arn: str, starter: StepFunctionsStarter
    ) -> None:
        first = starter.start("push-1", PAYLOAD)

        assert starter.start("push-1", PAYLOAD) == first  # a redelivered batch: same name, same input
        assert len(executions(sfn, machine_arn)) == 1

    def test_a_repeated_start_of_a_finished_execution_returns_it(
        self, sfn: Any, machine_arn: str, starter: StepFunctionsStarter
    ) -> None:
        first = starter.start("push-1", PAYLOAD)
        sfn.stop_execution(executionArn=first)
        calls = count_calls(sfn)

        assert starter.start("push-1", PAYLOAD) == first  # Step Functions answered ExecutionAlreadyExists
        assert calls["StartExecution"] == 1
        assert [execution["status"] for execution in executions(sfn, machine_arn)] == ["ABORTED"]

    def test_a_name_already_used_with_another_input_returns_the_existing_execution(
        self, sfn: Any, machine_arn: str, starter: StepFunctionsStarter
    ) -> None:
        first = starter.start("push-1", PAYLOAD)

        assert starter.start("push-1", {**PAYLOAD, "repositories": ["app/api"]}) == first
        assert len(executions(sfn, machine_arn)) == 1

    def test_an_invalid_name_is_made_valid_the_same_way_every_time(
        self, sfn: Any, machine_arn: str, starter: StepFunctionsStarter
    ) -> None:
        first = starter.start("push app/api:2026-11-30T06:00", PAYLOAD)
        again = starter.start("push app/api:2026-11-30T06:00", PAYLOAD)

        assert first == again
        name = sfn.describe_execution(executionArn=first)["name"]
        assert VALID_NAME.fullmatch(name)
        assert name.startswith("push-app-api-2026-11-30T06-00-")
        assert len(executions(sfn, machine_arn)) == 1

    def test_an_input_over_the_limit_is_refused_before_the_call(self, sfn: Any, starter: StepFunctionsStarter) -> None:
        calls = count_calls(sfn)
        payload = {"repositories": [f"team/service-{number:06}" for number in range(20_000)]}

        with pytest.raises(ValueError, match=r"execution big: input of \d+ bytes is over Step Functions' 262144"):
            starter.start("big", payload)
        assert calls["StartExecution"] == 0

    def test_a_missing_state_machine_is_a_workflow_error(self, sfn: Any, machine_arn: str) -> None:
        missing = machine_arn.replace("ecr-retention-sweep", "deleted-machine")

        with pytest.raises(WorkflowError) as raised:
            StepFunctionsStarter(missing, sfn).start("push-1", PAYLOAD)

        assert str(raised.value).startswith(
            f"{missing}, execution push-1: StartExecution failed: StateMachineDoesNotExist"
        )
        assert raised.value.code == "StateMachineDoesNotExist"

    def test_a_state_machine_arn_is_required(self, sfn: Any) -> None:
        with pytest.raises(ValueError, match="not a state machine ARN: 'ecr-retention-sweep'"):
            StepFunctionsStarter("ecr-retention-sweep", sfn)


class TestExecutionNames:
    def test_a_valid_name_is_kept(self) -> None:
        assert execution_name("schedule-2026-11-30T06_00") == "schedule-2026-11-30T06_00"

    @pytest.mark.parametrize("name", ["push app/api", "x" * 81, "日本", "", "::", "a" * 79 + "/"])
    def test_any_name_becomes_a_valid_one(self, name: str) -> None:
        assert VALID_NAME.fullmatch(execution_name(name))

    def test_names_that_clean_alike_stay_apart(self) -> None:
        assert execution_name("push app/api") != execution_name("push app:api")
        assert execution_name("x" * 81) != execution_name("x" * 82)

    def test_a_batch_name_depends_on_its_keys_not_their_order(self) -> None:
        first = batch_execution_name("push", ["message-b", "message-a", "message-a"])

        assert first == batch_execution_name("push", ["message-a", "message-b"])
        assert first != batch_execution_name("push", ["message-a"])
        assert VALID_NAME.fullmatch(first)
        assert first.startswith("push-")
