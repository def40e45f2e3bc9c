"""The collector's spoke roles as the Lambda asset ships them (infra.lambda_asset, layout.SPOKE_ROLES_FILE_VARIABLE).

A module of its own: the adapters import domain.inventory.aws (through ports), and a model built at import would
be built in every function's cold start; only the collector's settings and the stack read this one."""

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ecr_retention.domain.inventory.collection import RoleArn, one_role_per_account


class SpokeRoles(BaseModel):
    """The collector's spoke roles, one per spoke account (cdk.json spokeRoleArns), as the Lambda asset ships them
    in a file of their own (infra.lambda_asset): at 200 accounts the list is about 11.6 KB, over Lambda's 4 KB for
    a function's whole environment."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    role_arns: tuple[RoleArn, ...] = Field(alias="spokeRoleArns")

    _one_role_per_account = field_validator("role_arns")(one_role_per_account)
