"""The run's state machine as the CDK synthesizes it, ready for moto's Step Functions interpreter: its definition with
the template's tokens resolved (the workflow's functions as moto Lambda ARNs, the inventory bucket by name), and which
handler module each function ARN runs. The workflow tests and the cost benchmark (benchmarks/cost_bench.py) run it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from moto.core.models import DEFAULT_ACCOUNT_ID

HANDLERS_PACKAGE = "ecr_retention.handlers."


@dataclass(frozen=True)
class SynthesizedMachine:
    definition: dict[str, Any]  # as the template has it, tokens resolved
    handlers: dict[str, str]  # function ARN -> handler module (targets, evaluate, report)
    memory_mb: dict[str, int]  # handler module -> the function's configured memory
    log_level: str  # the state machine's execution log level (OFF when it logs nothing)


def function_arn(logical_id: str, region: str) -> str:
    return f"arn:aws:lambda:{region}:{DEFAULT_ACCOUNT_ID}:function:{logical_id}"


def synthesized_machine(stack: Any, *, bucket: str, region: str) -> SynthesizedMachine:
    """The state machine of `stack` (an EcrRetentionStack), its inventory bucket named `bucket`."""
    from aws_cdk.assertions import Template

    resources = Template.from_stack(stack).to_json()["Resources"]
    bucket_id = stack.get_logical_id(stack.inventory.bucket.node.default_child)

    def resolve(part: Any) -> str:
        if isinstance(part, str):
            return part
        [(function, argument)] = part.items()
        if (
            function == "Fn::GetAtt"
            and argument[1] == "Arn"
            and resources[argument[0]]["Type"] == "AWS::Lambda::Function"
        ):
            return function_arn(argument[0], region)
        if function == "Ref" and argument == bucket_id:
            return bucket
        if function == "Ref" and argument == "AWS::Partition":
            return "aws"
        raise ValueError(f"a token of the state machine that the harness does not resolve: {part!r}")

    [machine] = [r for r in resources.values() if r["Type"] == "AWS::StepFunctions::StateMachine"]
    separator, parts = machine["Properties"]["DefinitionString"]["Fn::Join"]
    functions = {
        logical_id: resource["Properties"]
        for logical_id, resource in resources.items()
        if resource["Type"] == "AWS::Lambda::Function"
        and str(resource["Properties"].get("Handler", "")).startswith(HANDLERS_PACKAGE)
    }
    modules = {logical_id: properties["Handler"].split(".")[2] for logical_id, properties in functions.items()}
    return SynthesizedMachine(
        definition=json.loads(separator.join(resolve(part) for part in parts)),
        handlers={function_arn(logical_id, region): module for logical_id, module in modules.items()},
        memory_mb={module: int(functions[logical_id]["MemorySize"]) for logical_id, module in modules.items()},
        log_level=machine["Properties"].get("LoggingConfiguration", {}).get("Level", "OFF"),
    )
