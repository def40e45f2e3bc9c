"""One Lambda function of the pipeline: its own role (no managed policy, but for Lambda's VPC one when it runs in
subnets), its own log group with retention, JSON logs, X-Ray tracing, the shared asset, and the size
constants.FUNCTION_SIZES gives it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from ecr_retention.cdk import constants, lambda_asset, nag


@dataclass(frozen=True)
class FunctionNetwork:
    """Where a function runs when it must reach private addresses: subnets of a VPC and a security group."""

    vpc: ec2.IVpc
    subnets: ec2.SubnetSelection
    security_group: ec2.ISecurityGroup


class PipelineFunction(Construct):
    """`name` is both the handler module (ecr_retention.handlers.<name>) and the key of its size."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        name: str,
        description: str,
        code: lambda_.Code,
        environment: Mapping[str, str],
        dead_letter_queue: sqs.IQueue | None = None,
        role_name: str | None = None,
        network: FunctionNetwork | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        size = constants.FUNCTION_SIZES[name]

        self.log_group = logs.LogGroup(
            self,
            "Logs",
            retention=getattr(logs.RetentionDays, constants.LOG_RETENTION),
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"ecr-retention {name} function",
            role_name=role_name,  # None: CloudFormation generates one
        )
        self.function = lambda_.Function(
            self,
            "Function",
            description=description,
            runtime=lambda_asset.runtime(),
            architecture=lambda_asset.architecture(),
            code=code,
            handler=f"{constants.HANDLERS_PACKAGE}.{name}.lambda_handler",
            role=self.role,
            memory_size=size.memory_mb,
            timeout=Duration.seconds(size.timeout_seconds),
            tracing=lambda_.Tracing.ACTIVE,
            log_group=self.log_group,
            logging_format=lambda_.LoggingFormat.JSON,
            application_log_level_v2=lambda_.ApplicationLogLevel.INFO,
            system_log_level_v2=lambda_.SystemLogLevel.WARN,
            environment={**constants.FUNCTION_ENVIRONMENT, **environment},
            dead_letter_queue=dead_letter_queue,
            vpc=network.vpc if network else None,
            vpc_subnets=network.subnets if network else None,
            security_groups=[network.security_group] if network else None,
        )
        # Lambda writes the function's logs with the function's role; the log group exists, so no CreateLogGroup.
        self.log_group.grant_write(self.role)
        self._acknowledge_runtime_services()
        if network is not None:
            # The CDK adds this policy only to a role it creates itself; Lambda needs it to manage the function's
            # network interfaces in the subnets (and checks for it when the function is created).
            self.role.add_managed_policy(
                iam.ManagedPolicy.from_aws_managed_policy_name("service-role/AWSLambdaVPCAccessExecutionRole")
            )
            nag.acknowledge(
                self.role,
                "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                "AWSLambdaVPCAccessExecutionRole]",
                "Lambda creates and deletes the function's network interfaces in the given subnets with this "
                "AWS-managed policy (ec2:CreateNetworkInterface, DescribeNetworkInterfaces, DeleteNetworkInterface, "
                "AssignPrivateIpAddresses, UnassignPrivateIpAddresses), the one Lambda documents for VPC access.",
            )

    def _acknowledge_runtime_services(self) -> None:
        nag.acknowledge(
            self.function,
            "AwsSolutions-L1",
            f"python{constants.LAMBDA_PYTHON_VERSION}, not the newest Python runtime the CDK knows (3.14): the "
            "asset test imports every handler from the bundle with the same Python, and our machines have "
            "3.13; constants.LAMBDA_PYTHON_VERSION moves all functions at once.",
        )
        nag.acknowledge(
            self.role,
            "AwsSolutions-IAM5[Resource::*]",
            "X-Ray tracing: xray:PutTraceSegments and xray:PutTelemetryRecords support no resource-level "
            "permissions, so their resource is '*' (the statement the CDK adds for active tracing).",
        )
