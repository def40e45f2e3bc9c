"""The ecr-retention stack: a stack that holds one EcrRetention construct and nothing else (this repository's app.py
deploys it; so may any app that wants the deployment in a stack of its own)."""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack
from constructs import Construct

from ecr_retention.cdk.deploy_settings import DeploySettings
from ecr_retention.cdk.retention import EcrRetention, Rules

# The CDK's hidden construct id: logical IDs skip it, so the construct's resources keep the logical IDs they had when
# the stack built them itself (before ecr_retention.cdk.retention existed). A deployed stack's bucket, roles and
# functions are updated in place, never replaced.
HIDDEN_ID = "Default"


class EcrRetentionStack(Stack):
    """`rules` and `settings` as EcrRetention takes them; the other keyword arguments are the Stack's (env,
    description, tags, synthesizer...)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: DeploySettings,
        rules: Rules | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.retention = EcrRetention(self, HIDDEN_ID, rules=rules, settings=settings)

    def __getattr__(self, name: str) -> Any:
        """The construct's parts (inventory, workflow, sentinel, collector...) as the stack's own attributes, as they
        were before the construct existed."""
        if name == "retention":  # not yet built: the Stack's own initialization asks before it is
            raise AttributeError(name)
        return getattr(self.retention, name)
