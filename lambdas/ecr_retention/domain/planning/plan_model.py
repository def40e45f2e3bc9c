"""The base of the plan's models and of every model written beside them (reports, evidence, records of removals):
camelCase on the wire, frozen. Apart from plan.py, so that a function that writes such a model without planning (the
sentinel: its records of removals and in-use references) builds none of the plan's models at its cold start."""

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

Instance = TypeVar("Instance")


class PlanModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


def slot_writer(owner: type[Instance], name: str) -> Callable[[Instance, Any], None]:
    """The setter of one of the slots `owner` declares, called with no Python frame: how the plan's decisions
    (BaseModel's slots) and the report's entries (ImageEntry's, a frozen dataclass that refuses setattr) are built as
    unpickling restores them, from values validated already."""
    setter: Callable[[Instance, Any], None] = vars(owner)[name].__set__
    return setter
