"""Each function's settings: read from the environment once per cold start and validated."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

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
        source = os.environ if environ is None else environ
        names = {field.alias for field in cls.model_fields.values() if field.alias}
        try:
            return cls.model_validate({name: value for name, value in source.items() if name in names and value})
        except ValidationError as error:
            raise InputError(f"function environment: {describe_validation_error(error)}") from None
