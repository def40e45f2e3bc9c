"""Enough of IAM's evaluation to ask a synthesized template "may this request succeed?": explicit Deny wins,
then any Allow (across accounts, an Allow on both sides); `*`, role-ARN and account principals; Action, Resource
and NotResource globs (`*`, `?`); policy variables (`${aws:PrincipalTag/...}`, `${aws:PrincipalAccount}`) in
Resource, NotResource and condition values; and the condition operators the stack uses. Anything else raises, so
a test never passes on a shape it did not understand. CloudFormation tokens (Ref, Fn::GetAtt, Fn::Join) are
resolved from a table the test gives.

A policy variable whose key is absent from the request: IAM's documentation says "If AWS cannot resolve a
variable this might cause the entire statement to be invalid" (IAM User Guide, "IAM policy elements: Variables and
tags", https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_variables.html). "Might": so this model
takes the reading that is worst for a Deny, an invalid statement that applies to nothing (an Allow with it allows
nothing either). A denial the tests prove therefore never rests on a statement whose variable has no value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Decision = Literal["allow", "deny", "implicit-deny"]
VARIABLE = re.compile(r"\$\{([^}]+)\}")
# The pseudo parameters a test need not give (AWS::AccountId it must: the stack's account).
PSEUDO_PARAMETERS = {"AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com"}


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
            return tokens[argument] if argument in tokens else PSEUDO_PARAMETERS[argument]
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


class UnresolvedVariable(Exception):
    """A policy variable whose key the request does not carry: the statement is invalid (module docstring)."""


def _substitute(pattern: str, context: Mapping[str, str]) -> str:
    """The pattern with its policy variables filled in; UnresolvedVariable when a variable's key is absent."""
    missing = [name for name in VARIABLE.findall(pattern) if name not in context]
    if missing:
        raise UnresolvedVariable(missing[0])
    return VARIABLE.sub(lambda match: context[match.group(1)], pattern)


def with_principal_account(context: Mapping[str, str]) -> dict[str, str]:
    """aws:PrincipalAccount, which IAM sets on every request: the account of aws:PrincipalArn."""
    full = dict(context)
    if "aws:PrincipalArn" in full and "aws:PrincipalAccount" not in full:
        full["aws:PrincipalAccount"] = full["aws:PrincipalArn"].split(":")[4]
    return full


def _condition_holds(
    operator: str, key: str, expected: Any, context: Mapping[str, str], tokens: Mapping[str, str]
) -> bool:
    values = [
        _substitute(v if isinstance(v, str) else str(v) if isinstance(v, int | float) else resolve(v, tokens), context)
        for v in _listed(expected)
    ]
    actual = context.get(key)
    if operator == "Null":  # "true": the key is absent; "false": it is present
        return (actual is None) == (values[0].lower() == "true")
    if operator in ("StringEquals", "ArnEquals"):
        return actual is not None and actual in values
    if operator in ("StringNotEquals", "ArnNotEquals"):
        return actual is None or actual not in values
    if operator in ("StringLike", "ArnLike", "ForAnyValue:StringLike"):
        # ForAnyValue on a multivalued key: the request carries one value here (an account has one path in its
        # organization, aws:PrincipalOrgPaths).
        return actual is not None and any(glob_matches(v, actual) for v in values)
    if operator in ("StringNotLike", "ArnNotLike"):  # like every negated operator, true when the key is absent
        return actual is None or not any(glob_matches(v, actual) for v in values)
    if operator == "NumericLessThan":
        return actual is not None and float(actual) < float(values[0])
    if operator == "Bool":
        return actual is not None and actual.lower() in [v.lower() for v in values]
    raise NotImplementedError(f"condition operator {operator}")


def _names_the_principal(principal: Any, context: Mapping[str, str], tokens: Mapping[str, str]) -> bool:
    if principal is None or principal in ("*", {"AWS": "*"}):
        return True
    if not (isinstance(principal, dict) and set(principal) == {"AWS"}):
        raise NotImplementedError(f"principal {principal!r}")
    for arn in (resolve(each, tokens) for each in _listed(principal["AWS"])):
        # An account (its root ARN or its ID) names every principal of that account; a role ARN, that role's
        # sessions (aws:PrincipalArn is the role's).
        account = arn.split(":")[4] if arn.endswith(":root") else arn if arn.isdigit() else None
        if account is not None and context.get("aws:PrincipalAccount") == account:
            return True
        if context.get("aws:PrincipalArn") == arn:
            return True
    return False


def _applies(statement: Mapping[str, Any], request: Request, tokens: Mapping[str, str]) -> bool:
    if "NotAction" in statement or "NotPrincipal" in statement:
        raise NotImplementedError("NotAction, NotPrincipal")
    context = with_principal_account(request.context)
    if not _names_the_principal(statement.get("Principal"), context, tokens):
        return False
    if not any(glob_matches(a, request.action, ignore_case=True) for a in _listed(statement["Action"])):
        return False
    try:
        listed_resources = statement["NotResource"] if "NotResource" in statement else statement["Resource"]
        resources = [_substitute(resolve(r, tokens), context) for r in _listed(listed_resources)]
        named = any(glob_matches(r, request.resource) for r in resources)
        if named == ("NotResource" in statement):  # Resource: must be named; NotResource: must not be
            return False
        return all(
            _condition_holds(operator, key, expected, context, tokens)
            for operator, block in statement.get("Condition", {}).items()
            for key, expected in block.items()
        )
    except UnresolvedVariable:
        return False


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
