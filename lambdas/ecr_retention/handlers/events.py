"""How the functions read their events (Powertools' parser: an event of any other shape is refused with one line
naming the field, and nothing is done). The workflow's own records (its input, work items, run record, step outputs)
are in ecr_retention.workflow; the scheduled and S3 events are Powertools' EventBridge model; the push function's own
models are in handlers/push.py, so that no other function builds them, nor loads Powertools' SQS model, at its cold
start, and what the tagger and the collector return in handlers/tagger.py and handlers/collector.py, for the same
reason."""

from __future__ import annotations

from typing import Any, TypeVar

from aws_lambda_powertools.utilities.parser import parse
from pydantic import BaseModel, ValidationError

from ecr_retention.domain.errors import InputError, describe_validation_error

Model = TypeVar("Model", bound=BaseModel)


def parse_event(event: Any, model: type[Model], what: str) -> Model:
    try:
        return parse(event=event, model=model)
    except ValidationError as error:
        raise InputError(f"{what}: {describe_validation_error(error, model)}") from None
    except (TypeError, ValueError) as error:
        raise InputError(f"{what}: {error}") from None
