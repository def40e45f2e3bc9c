"""Reading a lifecycle policy: the raw policy text, or `aws ecr get-lifecycle-policy` output holding one;
a policy ECR would reject gives one line naming the rule and the violated constraint."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from ecr_retention.domain.errors import InputError, format_location, parse_json
from ecr_retention.domain.lifecycle.policy import MAX_POLICY_TEXT, MIN_POLICY_TEXT, LifecyclePolicy


@dataclass(frozen=True)
class PolicyDocument:
    """A policy read from a file: the raw policy or `aws ecr get-lifecycle-policy` output."""

    policy: LifecyclePolicy
    text: str
    repository_name: str | None = None
    registry_id: str | None = None


FIXED_TEXT = {
    "missing": "required but missing",
    "extra_forbidden": "unknown key (ECR rejects keys that are not in the lifecycle policy schema)",
    "string_too_short": "must not be empty",
}


def _describe_policy_error(error: ValidationError, data: Any) -> str:
    """One line naming the rule (by priority) and the violated constraint."""
    first = error.errors(include_url=False)[0]
    loc = tuple(first["loc"])
    message = _constraint_text(first, loc)
    index = _rule_index(loc)
    if index is not None:
        rest = format_location(loc[2:]) if len(loc) > 2 else ""
        name = _rule_name(data, index)
        return f"{name}: {rest}: {message}" if rest else f"{name}: {message}"
    where = format_location(loc)
    return message if where == "(top level)" else f"{where}: {message}"


def _constraint_text(first: ErrorDetails, loc: tuple[int | str, ...]) -> str:
    """The violated constraint in the policy's words, with the offending value when it is a plain one."""
    kind = first["type"]
    if kind in FIXED_TEXT:
        return FIXED_TEXT[kind]
    length = _length_text(kind, first.get("ctx", {}), loc)
    if length is not None:
        return length
    message = first["msg"].removeprefix("Value error, ")
    if isinstance(first.get("input"), dict | list):
        return message
    return f"{first.get('input')!r}: {message[0].lower()}{message[1:]}"


def _length_text(kind: str, context: dict[str, Any], loc: tuple[int | str, ...]) -> str | None:
    """A length constraint, or None when `kind` is none."""
    if kind == "too_short":
        return f"needs at least {context.get('min_length')}, got {context.get('actual_length')}"
    if kind == "too_long":
        quota = " (ECR's quota of rules per policy)" if loc == ("rules",) else ""
        return f"at most {context.get('max_length')} allowed{quota}, got {context.get('actual_length')}"
    if kind == "string_too_long":
        return f"longer than {context.get('max_length')} characters"
    return None


def _rule_index(loc: tuple[int | str, ...]) -> int | None:
    """The index in `rules` of the rule the error is in, None when it is not in one."""
    if len(loc) >= 2 and loc[0] == "rules" and isinstance(loc[1], int):
        return loc[1]
    return None


def _rule_name(data: Any, index: int) -> str:
    """`rule 3 (rules[0])`, or `rules[0]` when that rule has no integer priority."""
    rules = data.get("rules") if isinstance(data, dict) else None
    raw = rules[index] if isinstance(rules, list) and index < len(rules) else None
    priority = raw.get("rulePriority") if isinstance(raw, dict) else None
    return f"rule {priority} (rules[{index}])" if type(priority) is int else f"rules[{index}]"


NULL_REFUSED = (
    "null is not allowed: ECR rejects the policy (InvalidParameterException) rather than read null as absent; "
    "omit the key (terraform's jsonencode writes null for an unset attribute)"
)


def _first_null(value: Any, loc: tuple[int | str, ...] = ()) -> tuple[int | str, ...] | None:
    """Where the first JSON null is in `value`, in document order; None when there is none."""
    if value is None:
        return loc
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _first_null(item, (*loc, key))
        if found is not None:
            return found
    return None


def _refuse_nulls(data: dict[str, Any], source: str) -> None:
    """ECR validates the policy against its JSON schema, where no field takes null (cloudposse/terraform-aws-ecr
    issue 158: `"countUnit": null` answered `InvalidParameterException ... matched 0 out of 2`). Pydantic would
    read null as an absent optional field, so it is refused here, naming the field."""
    loc = _first_null(data)
    if loc is None:
        return
    index = _rule_index(loc)
    if index is not None:
        rest = format_location(loc[2:]) if len(loc) > 2 else "(the rule itself)"
        raise InputError(f"{source}: {_rule_name(data, index)}: {rest}: {NULL_REFUSED}")
    raise InputError(f"{source}: {format_location(loc)}: {NULL_REFUSED}")


def parse_policy(text: str, source: str = "policy") -> LifecyclePolicy:
    """Validate a lifecycle policy text as PutLifecyclePolicy would; InputError names the rule and problem."""
    if not MIN_POLICY_TEXT <= len(text) <= MAX_POLICY_TEXT:
        raise InputError(
            f"{source}: the policy text is {len(text)} characters; ECR accepts {MIN_POLICY_TEXT} to {MAX_POLICY_TEXT}"
        )
    data = parse_json(text, source)
    if not isinstance(data, dict):
        raise InputError(f'{source}: a lifecycle policy is a JSON object {{"rules": [...]}}')
    _refuse_nulls(data, source)
    try:
        return LifecyclePolicy.model_validate(data)
    except ValidationError as error:
        raise InputError(f"{source}: {_describe_policy_error(error, data)}") from None


def parse_policy_document(text: str, source: str = "policy") -> PolicyDocument:
    """A raw policy, or `aws ecr get-lifecycle-policy` output whose `lifecyclePolicyText` holds one."""
    data = parse_json(text, source)
    if isinstance(data, dict) and "lifecyclePolicyText" in data:
        inner = data["lifecyclePolicyText"]
        if not isinstance(inner, str):
            raise InputError(f"{source}: lifecyclePolicyText must be a string holding the policy JSON")
        repository = data.get("repositoryName")
        registry = data.get("registryId")
        return PolicyDocument(
            policy=parse_policy(inner, f"{source}: lifecyclePolicyText"),
            text=inner,
            repository_name=repository if isinstance(repository, str) else None,
            registry_id=registry if isinstance(registry, str) else None,
        )
    return PolicyDocument(policy=parse_policy(text, source), text=text)
