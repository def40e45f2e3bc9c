"""The reviewers' role (stack context `reviewers`): GitHub Actions of one repository assume it through OIDC to run
`ecr-retention diff --bucket` and `plan --bucket` on a pull request (docs/review.md). It reads the registry as the
last sweep saw it (snapshots/), the in-use manifests (in-use/) and the in-use memory, and nothing else: no ECR, no
report, no write."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from ecr_retention.cdk import access, state_objects
from ecr_retention.cdk.deploy_settings import Reviewers

GITHUB_ISSUER = "token.actions.githubusercontent.com"
GITHUB_AUDIENCE = "sts.amazonaws.com"


class ReviewerRole(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, reviewers: Reviewers, bucket: s3.IBucket) -> None:
        super().__init__(scope, construct_id)
        provider_arn = self._provider_arn(reviewers.create_oidc_provider)
        self.role = iam.Role(
            self,
            "Role",
            description=f"ecr-retention reviews of {reviewers.repository}: reads {state_objects.read_names('reviewers')}",
            assumed_by=iam.WebIdentityPrincipal(
                provider_arn,
                conditions={
                    "StringEquals": {f"{GITHUB_ISSUER}:aud": GITHUB_AUDIENCE},
                    "StringLike": {f"{GITHUB_ISSUER}:sub": reviewers.subjects},
                },
            ),
        )
        self._grant_reads(bucket)

    def _provider_arn(self, create: bool) -> str:
        """An account has one OIDC provider per issuer: imported by its ARN, or created here when told to."""
        if create:
            provider = iam.CfnOIDCProvider(
                self, "GitHubOidcProvider", url=f"https://{GITHUB_ISSUER}", client_id_list=[GITHUB_AUDIENCE]
            )
            return provider.attr_arn
        stack = Stack.of(self)
        return f"arn:{stack.partition}:iam::{stack.account}:oidc-provider/{GITHUB_ISSUER}"

    def _grant_reads(self, bucket: s3.IBucket) -> None:
        """What the reviewers read is declared with each state object (infra/state_objects.py)."""
        keys = state_objects.read_keys("reviewers")
        self.role.add_to_principal_policy(access.list_statement(bucket, [key.removesuffix("*") for key in keys]))
        self.role.add_to_principal_policy(access.objects_statement(bucket, ["s3:GetObject"], keys))
        access.acknowledge_key_patterns(self.role, bucket, state_objects.read_reasons("reviewers"))
