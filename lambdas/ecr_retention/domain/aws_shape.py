"""The base of every model read from an AWS answer."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class AwsShape(BaseModel):
    """AWS field names (camelCase) in and out; unknown AWS fields are ignored, not rejected."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True)
