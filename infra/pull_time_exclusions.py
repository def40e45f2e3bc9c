"""ECR pull-time update exclusions for the roles that read manifests (evaluate: BatchGetImage of uncached
indexes; tagger: BatchGetImage before PutImage; with a trail the sentinel, whose doctor reads uncached indexes of a
repository given a new lifecycle policy), so that reading never resets an image's
`lastRecordedPullTime` and `not_pulled_within` keeps meaning "not pulled by a workload".

CloudFormation has a resource for it, AWS::ECR::PullTimeUpdateExclusion (RegisterPullTimeUpdateExclusion on
create, DeregisterPullTimeUpdateExclusion on delete): no custom resource, so no Lambda whose bundled SDK
must know an API from late 2025 (cdk.json sets @aws-cdk/customresources:installLatestAwsSdkDefault to false,
which makes AwsCustomResource use the Node.js runtime's SDK), and no role of ours holding these account-wide
actions (they support no resource-level permissions). An account holds at most 100 exclusions.

ECR's registry settings are per Region, so every pruned Region's registry needs its own exclusions: the home
Region's are in the home stack (the roles' ARNs by reference), each other Region's in that Region's forwarding stack
(infra/region_forwarder.py). That stack names the roles by ARN, so with several Regions the two roles get names
fixed at synthesis (`excluded_role_name`: the stack's name, the role's, the home Region), which neither a
cross-Region reference (it needs the home stack's Region fixed in the template, and adds a custom resource) nor a
custom resource calling another Region's ECR (it needs the account-wide actions above) would spare (docs/regions.md).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from aws_cdk import Stack
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_iam as iam
from constructs import Construct

# IAM's limit on a role's name.
ROLE_NAME_LIMIT = 64


def excluded_role_name(stack_name: str, role: str, home_region: str) -> str:
    """The name of an excluded role of a deployment that prunes several Regions: unique in the account, because a
    stack's name is unique in its Region (`EcrRetention-Evaluate-eu-west-1`). Past IAM's 64 characters the stack's
    name is cut and a hash of the whole name keeps it unique."""
    name = f"{stack_name}-{role}-{home_region}"
    if len(name) <= ROLE_NAME_LIMIT:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:10]
    suffix = f"-{digest}-{role}-{home_region}"
    return f"{stack_name[: ROLE_NAME_LIMIT - len(suffix)]}{suffix}"


class PullTimeExclusions(Construct):
    """The home Region's exclusions, by reference; with `name_for` (several Regions: the home Region), the roles
    named by `excluded_role_name` so that the other Regions' stacks can name them (`role_names`)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        roles: Mapping[str, iam.IRole],
        name_for: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.exclusions = {
            name: ecr.CfnPullTimeUpdateExclusion(self, name, principal_arn=role.role_arn)
            for name, role in roles.items()
        }
        self.role_names: dict[str, str] = {}
        if name_for is not None:
            stack_name = Stack.of(self).stack_name
            for name, role in roles.items():
                self.role_names[name] = excluded_role_name(stack_name, name, name_for)
                cfn_role = role.node.default_child
                assert isinstance(cfn_role, iam.CfnRole), role.node.path
                cfn_role.role_name = self.role_names[name]


class RegionalPullTimeExclusions(Construct):
    """Another Region's exclusions (in its forwarding stack), of the home stack's roles by the names
    `PullTimeExclusions` gave them: IAM is global, so the ARN is this stack's partition and account."""

    def __init__(self, scope: Construct, construct_id: str, *, role_names: Mapping[str, str]) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.exclusions = {
            name: ecr.CfnPullTimeUpdateExclusion(
                self,
                name,
                principal_arn=stack.format_arn(service="iam", region="", resource="role", resource_name=role_name),
            )
            for name, role_name in role_names.items()
        }
