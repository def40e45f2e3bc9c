"""ECR pull-time update exclusions for the roles that read manifests (evaluate: BatchGetImage of uncached
indexes; tagger: BatchGetImage before PutImage), so that reading never resets an image's
`lastRecordedPullTime` and `not_pulled_within` keeps meaning "not pulled by a workload".

CloudFormation has a resource for it, AWS::ECR::PullTimeUpdateExclusion (RegisterPullTimeUpdateExclusion on
create, DeregisterPullTimeUpdateExclusion on delete): no custom resource, so no Lambda whose bundled SDK
must know an API from late 2025 (cdk.json sets @aws-cdk/customresources:installLatestAwsSdkDefault to false,
which makes AwsCustomResource use the Node.js runtime's SDK), and no role of ours holding these account-wide
actions (they support no resource-level permissions). An account holds at most 100 exclusions.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_iam as iam
from constructs import Construct


class PullTimeExclusions(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, roles: Mapping[str, iam.IRole]) -> None:
        super().__init__(scope, construct_id)
        self.exclusions = {
            name: ecr.CfnPullTimeUpdateExclusion(self, name, principal_arn=role.role_arn)
            for name, role in roles.items()
        }
