"""Bad input becomes one line that names the file, the field and the problem."""

from __future__ import annotations

import json
import types
import typing
from typing import Any, TypeGuard, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails


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
        if not _is_model(current):
            return None
        field = current.model_fields.get(part) or _field_by_alias(current, part)
        if field is None:
            return None
        current = _unwrap(field.annotation)
    return current if _is_model(current) else None


def _is_model(annotation: Any) -> TypeGuard[type[BaseModel]]:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


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
_EXPECTED_TYPES = {
    "string_type": "a string",
    "bool_type": "a boolean",
    "int_type": "a whole number",
    "float_type": "a number",
    "tuple_type": "a list",
    "list_type": "a list",
    "model_type": "an object",
    "dataclass_type": "an object",  # an image (ImageDetail is a pydantic dataclass)
    "dict_type": "an object",
    "model_attributes_type": "an object",
}
_BOUND_ERRORS = frozenset({"greater_than_equal", "greater_than", "less_than_equal", "less_than"})


def describe_validation_error(error: ValidationError, model: type[BaseModel] | None = None) -> str:
    """The first problem as one line (where, what), and how many more there are; `model` lists the allowed keys."""
    problems = _innermost_problems(error.errors(include_url=False))
    first = problems[0]
    loc = _shown_location(first)
    return _one_problem_line(format_location(loc), _problem_message(first, loc, model), more=len(problems) - 1)


def _innermost_problems(every: list[ErrorDetails]) -> list[ErrorDetails]:
    """A failed item also fails its container's length check; report the item, not the echo."""
    locations = [tuple(detail["loc"]) for detail in every]
    return [detail for detail in every if not _encloses_another(tuple(detail["loc"]), locations)]


def _encloses_another(loc: tuple[int | str, ...], locations: list[tuple[int | str, ...]]) -> bool:
    return any(len(other) > len(loc) and other[: len(loc)] == loc for other in locations)


def _shown_location(problem: ErrorDetails) -> tuple[int | str, ...]:
    """The location without the validator steps pydantic names `function-...`, which no input writes."""
    return tuple(part for part in problem["loc"] if not (isinstance(part, str) and part.startswith("function-")))


def _problem_message(problem: ErrorDetails, loc: tuple[int | str, ...], model: type[BaseModel] | None) -> str:
    kind = problem["type"]
    if kind == "extra_forbidden":
        return _unknown_key_message(model, loc)
    if kind == "missing":
        return "required but missing"
    if kind in _EXPECTED_TYPES:
        found = problem.get("input")
        hint = f" ({quoted(found)}: write true or false)" if kind == "bool_type" and isinstance(found, str) else ""
        return f"should be {_EXPECTED_TYPES[kind]}, not {_json_type(found)}{hint}"
    return _value_message(problem, loc)


def _unknown_key_message(model: type[BaseModel] | None, loc: tuple[int | str, ...]) -> str:
    parent = _model_at(model, loc[:-1]) if model else None
    if parent is None:
        return "unknown key"
    allowed = _keys(parent)
    import difflib  # only for a message about an unknown key: no function's cold start pays for it

    close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    return f"unknown key; {hint}allowed keys: {', '.join(allowed)}"


def _value_message(problem: ErrorDetails, loc: tuple[int | str, ...]) -> str:
    """A value of the right type that a constraint refuses, in pydantic's words unless ours say more."""
    kind, given = problem["type"], problem.get("input")
    message = problem["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
    if kind == "literal_error" and loc == ("version",):
        return f"unsupported version {given!r}; this release reads version 1"
    if kind in _BOUND_ERRORS:
        return f"{given!r}: {message.lower()}"
    if kind == "finite_number":
        return f"should be a finite number, not {given!r}"
    return message


def _one_problem_line(where: str, message: str, *, more: int) -> str:
    suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    if where == "(top level)":
        return f"{message}{suffix}"
    return f"{where}: {message}{suffix}"


Document = TypeVar("Document", bound=BaseModel)


def parse_strictly(source: str, raw: bytes | InputError, model: type[Document], shape: str) -> Document:
    """One JSON document of the bucket, strictly: UTF-8, an object of `shape`, valid as `model`; InputError("<source>:
    <problem>") otherwise (a manifest, the memory, a hold)."""
    if isinstance(raw, InputError):
        raise raw
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{source}: not UTF-8 text (byte {error.start})") from None
    data = parse_json(text, source)
    if not isinstance(data, dict):
        raise InputError(f"{source}: {shape}")
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise InputError(f"{source}: {describe_validation_error(error, model)}") from None
