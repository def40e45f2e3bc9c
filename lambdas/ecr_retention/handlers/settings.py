"""What every function's settings share: read from the environment once per cold start and validated. Each
function's own model is in its wiring module (handlers/wiring/), so that a function builds no other's."""

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ecr_retention import layout
from ecr_retention.domain.registry.replication import AwsRegion
from ecr_retention.loading import validate_as


def default_rules_file() -> Path:
    """The rules file ships inside the function's asset (config as code), beside the package."""
    return Path(os.environ.get("LAMBDA_TASK_ROOT", ".")) / "retention.yaml"


def json_array(value: Any) -> Any:
    """A list variable's value: a JSON array (an IAM role name may contain a comma)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError('a JSON array of strings, e.g. ["eu-west-1"]') from None
        if not isinstance(value, list):
            raise ValueError('a JSON array of strings, e.g. ["eu-west-1"]')
    return value


class FunctionSettings(BaseModel):
    """Field aliases are the environment variables the CDK stack sets; each function has its own model, built
    from the mixins below (in its wiring module, handlers/wiring/), so that a function whose environment lacks a variable it needs fails at the first
    invocation of a cold container, before it does anything (handlers/wiring/)."""

    # Each function validates only its own model, once per cold start: the other models are never built.
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True, defer_build=True)

    region: AwsRegion = Field(alias="AWS_REGION")

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Self:
        return settings_from_environ(cls, environ)


class BucketSettings(FunctionSettings):
    bucket_name: str = Field(alias=layout.BUCKET_NAME_VARIABLE, min_length=3)


class RulesSettings(BucketSettings):
    """A function that works from the rules file, on this account's registry."""

    registry_id: str | None = Field(
        default=None, alias=layout.REGISTRY_ID_VARIABLE, pattern=r"^\d{12}$"
    )  # None: the caller's
    rules_file: Path = Field(default_factory=default_rules_file, alias=layout.RULES_FILE_VARIABLE)
    # The Regions whose registries the deployment prunes; empty: the function's own Region (pruned_regions).
    regions: tuple[AwsRegion, ...] = Field(default=(), alias=layout.PRUNED_REGIONS_VARIABLE)

    @field_validator("regions", mode="before")
    @classmethod
    def _regions_json_array(cls, value: Any) -> Any:
        return json_array(value)

    @property
    def pruned_regions(self) -> tuple[str, ...]:
        """The function's own Region first (the home registry), then the others in the order the stack names them."""
        return tuple(dict.fromkeys((self.region, *self.regions)))


# This deployment's sentinel role: the one writer whose records of removals/ count (services/removals.py). Unset, no
# record counts: nothing silences an alert, and no finding says what removed an image.
SENTINEL_ROLE_PATTERN = r"^arn:aws[a-z-]*:iam::\d{12}:role/"


SettingsModel = TypeVar("SettingsModel", bound=BaseModel)


def settings_from_environ(model: type[SettingsModel], environ: Mapping[str, str] | None = None) -> SettingsModel:
    """The model from the environment variables its field aliases name; empty values count as unset."""
    source = os.environ if environ is None else environ
    names = {field.alias for field in model.model_fields.values() if field.alias}
    return validate_as(
        model, {name: value for name, value in source.items() if name in names and value}, "function environment"
    )
