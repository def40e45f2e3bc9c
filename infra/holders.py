"""The holders' role (stack context `holdersRole`): who runs `ecr-retention hold add | list | remove` (docs/holds.md)
assumes it. It reads and writes holds/ and reads which image a tag names (DescribeImages), and nothing else; the bucket
policy lets only the holders write holds/ (infra/inventory_bucket.py bind_holds_to_holders)."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from ecr_retention.cdk import access, constants
from ecr_retention.cdk.repository_scope import PrunedRegions

HOLDS = f"{constants.HOLDS_PREFIX}*"


class Holders(Construct):
    """The principals that place and lift holds: the roles the context names, and the stack's holders role when
    `create_role` (assumable by the account's principals that IAM lets assume it)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        bucket: s3.IBucket,
        regions: PrunedRegions,
        role_arns: Sequence[str],
        create_role: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        self.role: iam.Role | None = None
        if create_role:
            self.role = self._role(bucket, regions)
        self.arns: tuple[str, ...] = (*role_arns, *(() if self.role is None else (self.role.role_arn,)))

    def _role(self, bucket: s3.IBucket, regions: PrunedRegions) -> iam.Role:
        role = iam.Role(
            self,
            "Role",
            description="ecr-retention holders: place, list and lift holds (holds/), and read which image a tag names",
            assumed_by=iam.AccountRootPrincipal(),
            max_session_duration=Duration.hours(1),
        )
        role.add_to_principal_policy(access.list_statement(bucket, [constants.HOLDS_PREFIX]))
        role.add_to_principal_policy(
            access.objects_statement(bucket, ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"], [HOLDS])
        )
        access.acknowledge_key_patterns(
            role, bucket, {HOLDS: "A holder places and lifts a hold on any image: one object per held image."}
        )
        every_repository = regions.everywhere([access.ALL_REPOSITORIES])
        access.grant_ecr(role, self, ["ecr:DescribeImages"], every_repository)
        access.acknowledge_repository_patterns(
            role,
            every_repository,
            "lets a holder resolve the image a hold names in any repository (DescribeImages only: it reads, never "
            "changes)",
        )
        return role
