"""Every policy of a synthesized template (and each function's environment, which holds the collector's lists
too, and each EventBridge rule's event pattern, which holds the push trigger's repository names), measured as AWS measures it once deployed, against AWS's size limits.

A template holds a policy in its CloudFormation form (Fn::Join of a bucket's ARN and a key); the deployed policy
holds the values. Each token is resolved here to its longest realistic value (a bucket name of 63 characters,
12-digit accounts, partition `aws`, a 14-character region, role names of 64), then the document is minified as
S3, SNS, SQS and KMS store it; IAM does not count whitespace at all. A policy over its limit makes the deploy
fail and roll back: synthesis names the first one instead (app.py), in one line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ecr_retention.domain.errors import InputError

WORST_CASE_ACCOUNT = "123456789012"
WORST_CASE_REGION = "ap-southeast-3"
WORST_CASE_PARTITION = "aws"
# The longest names CloudFormation generates or AWS admits, per resource type (Ref returns them).
BUCKET_NAME_LENGTH = 63
ROLE_NAME_LENGTH = 64
KMS_KEY_ID_LENGTH = 36
DEFAULT_NAME_LENGTH = 80
# Resource types whose Ref is an ARN rather than a name.
REF_IS_ARN = frozenset(
    {"AWS::SNS::Topic", "AWS::StepFunctions::StateMachine", "AWS::IAM::ManagedPolicy", "AWS::SNS::Subscription"}
)
WHITESPACE = re.compile(r"\s")
SUB_VARIABLE = re.compile(r"\$\{([^}!][^}]*)\}")


@dataclass(frozen=True)
class Limit:
    """`unit`: what AWS counts (bytes of the minified JSON, or characters without whitespace for IAM)."""

    size: int
    unit: str
    what: str


BUCKET_POLICY = Limit(20_480, "bytes", "S3's limit for a bucket policy")
TOPIC_POLICY = Limit(30_720, "bytes", "SNS's limit for a topic policy")
QUEUE_POLICY = Limit(8_192, "bytes", "SQS's limit for a queue policy")
KEY_POLICY = Limit(32_768, "bytes", "KMS's limit for a key policy")
ROLE_INLINE_POLICIES = Limit(10_240, "characters", "IAM's limit for all inline policies of a role together")
MANAGED_POLICY = Limit(6_144, "characters", "IAM's limit for a managed policy")
TRUST_POLICY = Limit(2_048, "characters", "IAM's default limit for a role trust policy")
# Not a policy, but listed in the same way (the collector's spokeRoleArns and eksClusters): the deploy fails alike.
FUNCTION_ENVIRONMENT = Limit(4_096, "bytes", "Lambda's limit for a function's environment variables together")
# Not a policy either: a rule's pattern over it is refused by PutRule at deploy time (EventBridge quotas, "Event pattern
# size", 2,048 characters by default, adjustable). Measured as the minified JSON that CloudFormation sends.
EVENT_PATTERN = Limit(2_048, "characters", "EventBridge's default limit for an event pattern")

# Resource type -> (the property that holds the policy document, its limit).
RESOURCE_POLICIES: Mapping[str, tuple[str, Limit]] = {
    "AWS::S3::BucketPolicy": ("PolicyDocument", BUCKET_POLICY),
    "AWS::SNS::TopicPolicy": ("PolicyDocument", TOPIC_POLICY),
    "AWS::SQS::QueuePolicy": ("PolicyDocument", QUEUE_POLICY),
    "AWS::KMS::Key": ("KeyPolicy", KEY_POLICY),
    "AWS::IAM::ManagedPolicy": ("PolicyDocument", MANAGED_POLICY),
}


@dataclass(frozen=True)
class PolicySize:
    """One deployed policy (or, for a role, all its inline policies together) and its limit."""

    logical_id: str
    resource_type: str
    size: int
    limit: Limit

    @property
    def over(self) -> bool:
        return self.size > self.limit.size

    def describe(self) -> str:
        return (
            f"{self.logical_id} ({self.resource_type}): {self.size:,} {self.limit.unit} once deployed, over "
            f"{self.limit.what} ({self.limit.size:,} {self.limit.unit}); the deploy would fail"
        )


def policy_sizes(template: Mapping[str, Any], *, stack_name: str = "EcrRetention") -> list[PolicySize]:
    """Every policy of the template with its deployed size, in template order."""
    resources: Mapping[str, Any] = template.get("Resources", {})
    resolver = _Resolver(resources, stack_name)
    sizes: list[PolicySize] = []
    for logical_id, resource in resources.items():
        kind = resource.get("Type", "")
        properties = resource.get("Properties", {})
        if kind in RESOURCE_POLICIES:
            field, limit = RESOURCE_POLICIES[kind]
            sizes.append(PolicySize(logical_id, kind, _measure(resolver, properties[field], limit), limit))
        if kind == "AWS::IAM::Role":
            sizes.extend(_role_sizes(resolver, resources, logical_id, properties))
        if kind == "AWS::Lambda::Function" and "Environment" in properties:
            variables = properties["Environment"].get("Variables", {})
            size = _measure(resolver, variables, FUNCTION_ENVIRONMENT)
            sizes.append(PolicySize(f"{logical_id} environment", kind, size, FUNCTION_ENVIRONMENT))
        if kind == "AWS::Events::Rule" and "EventPattern" in properties:
            size = _measure(resolver, properties["EventPattern"], EVENT_PATTERN)
            sizes.append(PolicySize(f"{logical_id} event pattern", kind, size, EVENT_PATTERN))
    return sizes


def check_policy_sizes(template: Mapping[str, Any], *, stack_name: str = "EcrRetention") -> None:
    """InputError naming the first policy over its limit: the resource, its deployed size and the limit."""
    for size in policy_sizes(template, stack_name=stack_name):
        if size.over:
            raise InputError(size.describe())


def _role_sizes(
    resolver: _Resolver, resources: Mapping[str, Any], role_id: str, properties: Mapping[str, Any]
) -> Iterator[PolicySize]:
    trust = properties.get("AssumeRolePolicyDocument")
    if trust is not None:
        yield PolicySize(
            f"{role_id} trust policy", "AWS::IAM::Role", _measure(resolver, trust, TRUST_POLICY), TRUST_POLICY
        )
    documents = [policy["PolicyDocument"] for policy in properties.get("Policies", [])]
    documents += [
        resource["Properties"]["PolicyDocument"]
        for resource in resources.values()
        if resource.get("Type") == "AWS::IAM::Policy"
        and {"Ref": role_id} in resource.get("Properties", {}).get("Roles", [])
    ]
    total = sum(_measure(resolver, document, ROLE_INLINE_POLICIES) for document in documents)
    yield PolicySize(role_id, "AWS::IAM::Role", total, ROLE_INLINE_POLICIES)


def _measure(resolver: _Resolver, document: Any, limit: Limit) -> int:
    text = json.dumps(resolver.resolve(document), separators=(",", ":"), ensure_ascii=False)
    if limit is EVENT_PATTERN:
        return len(text)  # every character of the pattern's JSON counts, spaces inside values too
    if limit.unit == "characters":
        return len(WHITESPACE.sub("", text))
    return len(text.encode("utf-8"))


class _Resolver:
    """CloudFormation intrinsics replaced by the longest realistic value each can take once deployed."""

    def __init__(self, resources: Mapping[str, Any], stack_name: str) -> None:
        self.resources = resources
        self.pseudo = {
            "AWS::AccountId": WORST_CASE_ACCOUNT,
            "AWS::Region": WORST_CASE_REGION,
            "AWS::Partition": WORST_CASE_PARTITION,
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": stack_name,
            "AWS::NoValue": "",
        }

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.resolve(item) for item in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            [(function, argument)] = value.items()
            if function == "Ref" or function.startswith("Fn::"):
                return self.intrinsic(function, argument)
        return {key: self.resolve(item) for key, item in value.items()}

    def intrinsic(self, function: str, argument: Any) -> str:
        if function == "Ref":
            return self.ref(argument)
        if function == "Fn::GetAtt":
            logical_id, attribute = argument if isinstance(argument, list) else argument.split(".", 1)
            return self.attribute(logical_id, attribute)
        if function == "Fn::Join":
            separator, parts = argument
            return str(separator).join(str(self.resolve(part)) for part in parts)
        if function == "Fn::Sub":
            return self.sub(argument)
        if function == "Fn::If":
            _, when_true, when_false = argument
            return max(str(self.resolve(when_true)), str(self.resolve(when_false)), key=len)
        # Fn::Select, Fn::ImportValue, ...: none in this stack's policies; a long value rather than a guess of none.
        return "x" * 256

    def sub(self, argument: Any) -> str:
        text, variables = (argument, {}) if isinstance(argument, str) else argument

        def value(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in variables:
                return str(self.resolve(variables[name]))
            if name in self.pseudo:
                return self.pseudo[name]
            if "." in name:
                return self.attribute(*name.split(".", 1))
            return self.ref(name)

        return SUB_VARIABLE.sub(value, str(text))

    def ref(self, name: str) -> str:
        if name in self.pseudo:
            return self.pseudo[name]
        kind = self.resources.get(name, {}).get("Type", "")
        if kind in REF_IS_ARN:
            return self.arn(kind)
        if kind == "AWS::S3::Bucket":
            return "b" * BUCKET_NAME_LENGTH
        if kind == "AWS::IAM::Role":
            return "r" * ROLE_NAME_LENGTH
        if kind == "AWS::KMS::Key":
            return "k" * KMS_KEY_ID_LENGTH
        return "n" * DEFAULT_NAME_LENGTH

    def attribute(self, logical_id: str, attribute: str) -> str:
        kind = self.resources.get(logical_id, {}).get("Type", "")
        if attribute == "Arn":
            return self.arn(kind)
        return "a" * DEFAULT_NAME_LENGTH

    def arn(self, kind: str) -> str:
        account, region, partition = WORST_CASE_ACCOUNT, WORST_CASE_REGION, WORST_CASE_PARTITION
        if kind == "AWS::S3::Bucket":
            return f"arn:{partition}:s3:::{'b' * BUCKET_NAME_LENGTH}"
        if kind == "AWS::IAM::Role":
            return f"arn:{partition}:iam::{account}:role/{'r' * ROLE_NAME_LENGTH}"
        if kind == "AWS::KMS::Key":
            return f"arn:{partition}:kms:{region}:{account}:key/{'k' * KMS_KEY_ID_LENGTH}"
        service = kind.split("::")[1].lower() if kind.count("::") == 2 else "service"
        return f"arn:{partition}:{service}:{region}:{account}:{'n' * DEFAULT_NAME_LENGTH}"
