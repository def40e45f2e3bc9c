"""The base of the plan's models and of every model written beside them (reports, evidence, records of removals):
camelCase on the wire, frozen. Apart from plan.py, so that a function that writes such a model without planning (the
sentinel: its records of removals and in-use references) builds none of the plan's models at its cold start."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class PlanModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)
