"""The roles CloudFormation deploys the stack with: the principals, besides the break-glass role, that the inventory
bucket's policy lets change the bucket's own guards (its policy, lifecycle rules, versioning, ownership). Naming the
wrong role locks every later deployment out of the bucket's policy, so it comes from the synthesizer (the bootstrap's
cfn-exec role of DefaultStackSynthesizer, qualifier included) or from the context key, never from a guess."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Fn, Stack

from ecr_retention.cdk import constants
from ecr_retention.domain.errors import InputError


def deployment_role_arns(stack: Stack, configured: Sequence[str]) -> list[str]:
    """`configured` (deploymentRoleArn and deploymentRoleArns) wins: `cdk deploy --role-arn` makes CloudFormation act
    as that role instead of the synthesizer's, and a deployment that moves from one deploying role to another names
    both until the move is done. Raises InputError when neither names a role."""
    if configured:
        return list(configured)
    return [_synthesizers_role(stack)]


def _synthesizers_role(stack: Stack) -> str:
    # DefaultStackSynthesizer: arn:${AWS::Partition}:iam::${AWS::AccountId}:role/cdk-<qualifier>-cfn-exec-role-...,
    # with the placeholders the CLI fills in for its own use; in a template they are Fn::Sub's. A synthesizer without
    # a service role (CliCredentialsStackSynthesizer, LegacyStackSynthesizer) answers None: CloudFormation then acts
    # with the deploying identity, which only the person deploying knows.
    role = stack.synthesizer.cloud_formation_execution_role
    if not role:
        raise InputError(
            f"cdk context: {constants.DEPLOYMENT_ROLE_ARN_CONTEXT_KEY}: the stack's synthesizer "
            f"({type(stack.synthesizer).__name__}) names no CloudFormation execution role; set "
            f"{constants.DEPLOYMENT_ROLE_ARN_CONTEXT_KEY} (or {constants.DEPLOYMENT_ROLE_ARNS_CONTEXT_KEY}) to the ARN "
            "of the role that deploys the stack (only it and breakGlassRoleArn may change the inventory bucket's "
            "policy, lifecycle and versioning)"
        )
    return Fn.sub(role) if "${" in role else role
