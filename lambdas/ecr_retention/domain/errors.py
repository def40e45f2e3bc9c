"""Bad input becomes one line that names the file, the field and the problem."""

from __future__ import annotations

import difflib
import json
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo


class InputError(ValueError):
    """Input that a user must fix: a rules file, a snapshot, a manifest, an event, a CLI argument."""


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _object_without_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json.loads keeps the last of two equal keys; a second, empty `images` would then win silently."""
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return result


def quoted(value: object) -> str:
    """A value as an error line quotes it, cut short: the line must stay one readable line."""
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:39] + "…"


def parse_json(text: str, source: str) -> Any:
    """Parse JSON input strictly: a key written twice in one object is an error, as in the rules file."""
    try:
        return json.loads(text, object_pairs_hook=_object_without_duplicate_keys)
    except json.JSONDecodeError as error:
        raise InputError(f"{source}: invalid JSON (line {error.lineno}, column {error.colno}): {error.msg}") from None
    except RecursionError:
        raise InputError(f"{source}: JSON nested too deeply to read") from None
    except _DuplicateKey as duplicate:
        raise InputError(f"{source}: key {duplicate.key!r} appears twice in one object") from None


def format_location(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "(top level)"


def _model_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The model class that holds the field at `loc`, for listing the keys it allows."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        field = current.model_fields.get(part) or _field_by_alias(current, part)
        if field is None:
            return None
        current = _unwrap(field.annotation)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _field_by_alias(model: type[BaseModel], key: str) -> FieldInfo | None:
    """The field an AWS-shaped model reads from `key` (`repositoryFilters` for repository_filters)."""
    return next((field for field in model.model_fields.values() if field.alias == key), None)


def _keys(model: type[BaseModel]) -> list[str]:
    """The keys a model reads, as the input writes them: camelCase for AWS shapes, the field names otherwise."""
    return sorted(field.alias or name for name, field in model.model_fields.items())


def _unwrap(annotation: Any) -> Any:
    """Strip Optional, tuple[...] and Annotated down to the model class inside, if any."""
    for _ in range(5):
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType, tuple, list):
            models = [arg for arg in typing.get_args(annotation) if arg is not type(None) and arg is not Ellipsis]
            annotation = models[0] if models else annotation
        else:
            break
    return annotation


def _json_type(value: Any) -> str:
    """What a JSON or YAML reader would call the value's type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    return "an object" if isinstance(value, dict) else type(value).__name__


# Wrong-type errors of strict fields, in the words of JSON and YAML.
_SCALAR_TYPES = {
    "string_type": "a string",
    "bool_type": "a boolean",
    "int_type": "a whole number",
    "float_type": "a number",
}


def describe_validation_error(error: ValidationError, model: type[BaseModel] | None = None) -> str:
    every = error.errors(include_url=False)
    # A failed item also fails its container's length check; report the item, not the echo.
    locations = [tuple(d["loc"]) for d in every]
    details = [
        d for d in every if not any(len(o) > len(d["loc"]) and o[: len(d["loc"])] == tuple(d["loc"]) for o in locations)
    ]
    first = details[0]
    loc = tuple(part for part in first["loc"] if not (isinstance(part, str) and part.startswith("function-")))
    where = format_location(loc)
    kind = first["type"]
    message = first["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
    if kind == "extra_forbidden":
        parent = _model_at(model, loc[:-1]) if model else None
        if parent is not None:
            allowed = _keys(parent)
            close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            message = f"unknown key; {hint}allowed keys: {', '.join(allowed)}"
        else:
            message = "unknown key"
    elif kind == "missing":
        message = "required but missing"
    elif kind in _SCALAR_TYPES:
        message = f"should be {_SCALAR_TYPES[kind]}, not {_json_type(first.get('input'))}"
    elif kind in ("tuple_type", "list_type"):
        message = f"should be a list, not {_json_type(first.get('input'))}"
    elif kind in ("model_type", "dict_type", "model_attributes_type"):
        message = f"should be an object, not {_json_type(first.get('input'))}"
    elif kind == "literal_error" and loc == ("version",):
        message = f"unsupported version {first.get('input')!r}; this release reads version 1"
    elif kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        message = f"{first.get('input')!r}: {message.lower()}"
    elif kind == "finite_number":
        message = f"should be a finite number, not {first.get('input')!r}"
    more = len(details) - 1
    suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    if where == "(top level)":
        return f"{message}{suffix}"
    return f"{where}: {message}{suffix}"
