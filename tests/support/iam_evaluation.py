"""Enough of IAM's evaluation to ask a synthesized template "may this request succeed?": explicit Deny wins,
then any Allow (across accounts, an Allow on both sides); `*` and role-ARN principals; Action, Resource and
NotResource globs (`*`, `?`); `${aws:PrincipalTag/...}` policy variables; and the condition operators the stack
uses. Anything else raises, so a test never passes on a shape it did not
understand. CloudFormation tokens (Ref, Fn::GetAtt, Fn::Join) are resolved from a table the test gives.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Decision = Literal["allow", "deny", "implicit-deny"]
VARIABLE = re.compile(r"\$\{([^}]+)\}")


@dataclass(frozen=True)
class Request:
    action: str
    resource: str
    context: Mapping[str, str] = field(default_factory=dict)  # aws:PrincipalArn, aws:PrincipalTag/..., ...


def resolve(value: Any, tokens: Mapping[str, str]) -> str:
    """`tokens` maps "LogicalId" (Ref) and "LogicalId.Attribute" (Fn::GetAtt) to their deployed values."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        [(function, argument)] = value.items()
        if function == "Ref":
            return tokens[argument]
        if function == "Fn::GetAtt":
            return tokens[".".join(argument)]
        if function == "Fn::Join":
            separator, parts = argument
            return str(separator).join(resolve(part, tokens) for part in parts)
    raise NotImplementedError(f"cannot resolve {value!r}")


def glob_matches(pattern: str, value: str, *, ignore_case: bool = False) -> bool:
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, re.IGNORECASE | re.DOTALL if ignore_case else re.DOTALL) is not None


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _substitute(pattern: str, context: Mapping[str, str]) -> str | None:
    """The resource pattern with its policy variables filled in; None when a variable's key is absent (IAM
    then does not match the statement)."""
    missing = [name for name in VARIABLE.findall(pattern) if name not in context]
    if missing:
        return None
    return VARIABLE.sub(lambda match: context[match.group(1)], pattern)


def _condition_holds(
    operator: str, key: str, expected: Any, context: Mapping[str, str], tokens: Mapping[str, str]
) -> bool:
    values = [
        v if isinstance(v, str) else str(v) if isinstance(v, int | float) else resolve(v, tokens)
        for v in _listed(expected)
    ]
    actual = context.get(key)
    if operator in ("StringEquals", "ArnEquals"):
        return actual is not None and actual in values
    if operator in ("StringNotEquals", "ArnNotEquals"):
        return actual is None or actual not in values
    if operator in ("StringLike", "ArnLike"):
        return actual is not None and any(glob_matches(v, actual) for v in values)
    if operator == "NumericLessThan":
        return actual is not None and float(actual) < float(values[0])
    if operator == "Bool":
        return actual is not None and actual.lower() in [v.lower() for v in values]
    raise NotImplementedError(f"condition operator {operator}")


def _applies(statement: Mapping[str, Any], request: Request, tokens: Mapping[str, str]) -> bool:
    if "NotAction" in statement or "NotPrincipal" in statement:
        raise NotImplementedError("NotAction, NotPrincipal")
    principal = statement.get("Principal")
    if principal is not None and principal not in ("*", {"AWS": "*"}):
        if not (isinstance(principal, dict) and set(principal) == {"AWS"}):
            raise NotImplementedError(f"principal {principal!r}")
        # Role ARNs as principals: the statement applies to that role's sessions (aws:PrincipalArn is the role's).
        principals = [resolve(arn, tokens) for arn in _listed(principal["AWS"])]
        if request.context.get("aws:PrincipalArn") not in principals:
            return False
    if not any(glob_matches(a, request.action, ignore_case=True) for a in _listed(statement["Action"])):
        return False
    listed_resources = statement["NotResource"] if "NotResource" in statement else statement["Resource"]
    resources = [_substitute(resolve(r, tokens), request.context) for r in _listed(listed_resources)]
    named = any(r is not None and glob_matches(r, request.resource) for r in resources)
    if named == ("NotResource" in statement):  # Resource: must be named; NotResource: must not be
        return False
    return all(
        _condition_holds(operator, key, expected, request.context, tokens)
        for operator, block in statement.get("Condition", {}).items()
        for key, expected in block.items()
    )


def decide(policies: Iterable[Sequence[Mapping[str, Any]]], request: Request, tokens: Mapping[str, str]) -> Decision:
    """The decision of all these policies together (identity and resource policies of one account)."""
    statements = [statement for policy in policies for statement in policy]
    applicable = [s for s in statements if _applies(s, request, tokens)]
    if any(s["Effect"] == "Deny" for s in applicable):
        return "deny"
    if any(s["Effect"] == "Allow" for s in applicable):
        return "allow"
    return "implicit-deny"


def decide_across_accounts(
    identity: Sequence[Mapping[str, Any]],
    resource_policy: Sequence[Mapping[str, Any]],
    request: Request,
    tokens: Mapping[str, str],
) -> Decision:
    """A principal of another account: a Deny in either policy wins, and both must Allow."""
    separately = [decide([policy], request, tokens) for policy in (identity, resource_policy)]
    if "deny" in separately:
        return "deny"
    if separately == ["allow", "allow"]:
        return "allow"
    return "implicit-deny"
