"""Each function's settings: read from the environment once per cold start and validated."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, ValidationError, field_validator

from ecr_retention.domain.aws_inventory import DEFAULT_REVISIONS, AwsRegion, RoleArn, account_of_role
from ecr_retention.domain.errors import InputError, describe_validation_error


def default_rules_file() -> Path:
    """The rules file ships inside the function's asset (config as code), beside the package."""
    return Path(os.environ.get("LAMBDA_TASK_ROOT", ".")) / "retention.yaml"


class Settings(BaseModel):
    """Field aliases are the environment variables the CDK stack sets."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    bucket_name: str = Field(alias="BUCKET_NAME", min_length=3)
    region: str = Field(alias="AWS_REGION", min_length=1)
    topic_arn: str | None = Field(default=None, alias="TOPIC_ARN")
    lease_table: str | None = Field(default=None, alias="LEASE_TABLE")
    state_machine_arn: str | None = Field(default=None, alias="STATE_MACHINE_ARN")
    registry_id: str | None = Field(default=None, alias="REGISTRY_ID", pattern=r"^\d{12}$")
    rules_file: Path = Field(default_factory=default_rules_file, alias="RULES_FILE")

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Settings:
        return settings_from_environ(cls, environ)


class CollectorSettings(BaseModel):
    """The AWS inventory collector's settings (handlers/collector.py); lists are JSON arrays, because an IAM
    role name may contain a comma."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    bucket_name: str = Field(alias="BUCKET_NAME", min_length=3)
    region: AwsRegion = Field(alias="AWS_REGION")
    regions: tuple[AwsRegion, ...] = Field(default=(), alias="COLLECT_REGIONS")  # empty: the function's region
    role_arns: tuple[RoleArn, ...] = Field(default=(), alias="SPOKE_ROLE_ARNS")  # one read-only role per spoke
    revisions: NonNegativeInt = Field(default=DEFAULT_REVISIONS, alias="TASK_DEFINITION_REVISIONS")

    @field_validator("regions", "role_arns", mode="before")
    @classmethod
    def _json_array(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                raise ValueError('a JSON array of strings, e.g. ["eu-west-1"]') from None
            if not isinstance(value, list):
                raise ValueError('a JSON array of strings, e.g. ["eu-west-1"]')
        return value

    @field_validator("role_arns")
    @classmethod
    def _one_role_per_account(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        accounts = [account_of_role(arn) for arn in value]
        repeated = sorted({account for account in accounts if accounts.count(account) > 1})
        if repeated:
            raise ValueError(f"one role per account; {', '.join(repeated)} has more than one")
        return value

    @property
    def collect_regions(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.regions)) or (self.region,)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> CollectorSettings:
        return settings_from_environ(cls, environ)


SettingsModel = TypeVar("SettingsModel", bound=BaseModel)


def settings_from_environ(model: type[SettingsModel], environ: Mapping[str, str] | None = None) -> SettingsModel:
    """The model from the environment variables its field aliases name; empty values count as unset."""
    source = os.environ if environ is None else environ
    names = {field.alias for field in model.model_fields.values() if field.alias}
    try:
        return model.model_validate({name: value for name, value in source.items() if name in names and value})
    except ValidationError as error:
        raise InputError(f"function environment: {describe_validation_error(error)}") from None
