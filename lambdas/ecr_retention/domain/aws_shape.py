"""The base of every model read from an AWS answer."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler
from pydantic.alias_generators import to_camel
from pydantic_core import CoreSchema

AWS_FIELDS = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")
"""AWS field names (camelCase) in, or the field names; unknown AWS fields are ignored, not rejected."""


class AwsShape(BaseModel):
    """AWS field names (camelCase) in and out; unknown AWS fields are ignored, not rejected."""

    model_config = AWS_FIELDS | ConfigDict(frozen=True)


@dataclass(frozen=True)
class Lean:
    """`Annotated[T, Lean(lean)]` is validated by `lean(checked)`, `checked` being T's own schema (its Python validators
    included). The lean schema accepts and returns exactly what `checked` does, and serializes as it does, but calls
    no Python for the common input: it is for the fields of every image of a snapshot."""

    lean: Callable[[CoreSchema], CoreSchema]

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return self.lean(handler(source))
