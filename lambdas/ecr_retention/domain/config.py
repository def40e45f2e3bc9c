"""The rules file (`retention.yaml`): one pydantic model, validated at synth time and at run time."""

import re
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Annotated, Any, ClassVar, Literal, Self

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ecr_retention.domain.durations import Duration, GraceDuration, format_duration, parse_duration
from ecr_retention.domain.errors import InputError, describe_validation_error, quoted
from ecr_retention.domain.inventory.clusters import ClusterId, ClusterRef
from ecr_retention.domain.registry.replication import AwsRegion

# The longest hold when the rules file says nothing (safety.max_hold; domain/holds/).
DEFAULT_MAX_HOLD = timedelta(days=90)

_TAG_PATTERN = re.compile(r"[A-Za-z0-9_.*?-]{1,300}")
_REPOSITORY_PATTERN = re.compile(r"[a-z0-9._/*?-]{1,256}")


def _glob_of(kind: str, form: re.Pattern[str], characters: str, longest: int) -> Callable[[str], str]:
    """A check that names the first character a pattern may not hold (an error line a user can act on, where
    pydantic would quote the regular expression)."""

    def check(value: str) -> str:
        if form.fullmatch(value):
            return value
        if not value or len(value) > longest:
            raise ValueError(f"{quoted(value)}: a {kind} pattern is 1 to {longest} characters long")
        char = next(char for char in value if not form.fullmatch(char))
        raise ValueError(
            f"{quoted(value)}: {char!r} (U+{ord(char):04X}) cannot be in a {kind} pattern, which holds {characters}"
        )

    return check


# The characters of ECR tags and repository names, plus the glob's * and ?.
TagPattern = Annotated[
    str, AfterValidator(_glob_of("tag", _TAG_PATTERN, "letters A-Z a-z, digits 0-9, _ . - and the globs * ?", 300))
]
RepositoryPattern = Annotated[
    str,
    AfterValidator(
        _glob_of("repository", _REPOSITORY_PATTERN, "lowercase letters a-z, digits 0-9, . _ / - and the globs * ?", 256)
    ),
]
Patterns = Annotated[tuple[TagPattern, ...], Field(min_length=1)]
RepositoryPatterns = Annotated[tuple[RepositoryPattern, ...], Field(min_length=1)]
# Numbers are numbers: lax pydantic reads `true` as 1 (`max_delete_fraction: true` would switch the guard off),
# "10" and 10.0 as 10. Strict fields take a YAML int (and a float field an int or a float), nothing else.
Count = Annotated[int, Field(strict=True, ge=0)]
PositiveCount = Annotated[int, Field(strict=True, ge=1)]


def _fraction(low_exclusive: float, high: float) -> Any:
    return Field(strict=True, gt=low_exclusive, le=high, allow_inf_nan=False)


def _whole_number(value: Any) -> Any:
    """`version: true` and `version: 1.0` equal 1 in Python; the file's version is the integer 1."""
    if type(value) is not int:
        raise PydanticCustomError("int_type", "Input should be a valid integer")
    return value


class StrictModel(BaseModel):
    """A mapping of the rules file: unknown keys and `null` values are errors.

    `null` is refused wherever a value is expected: a field whose absence means "off" (quarantine) or "no
    condition" (older_than) is left out, never written as null, so that what a file says is what it means."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    # What leaving an optional field out means, for the error line of a `null` written in its place; a field not
    # named here is explained by its default value.
    when_left_out: ClassVar[dict[str, str]] = {}

    @field_validator("*", mode="before")
    @classmethod
    def _null_is_not_a_value(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None and info.field_name is not None:
            raise PydanticCustomError("null_value", "{problem}", {"problem": cls._null_problem(info.field_name)})
        return value

    @classmethod
    def _null_problem(cls, name: str) -> str:
        field = cls.model_fields[name]
        if name in cls.when_left_out:
            return f"null is not a value; {cls.when_left_out[name]}"
        if field.is_required():
            return f"null is not a value; {name} is required"
        return f"null is not a value; leave {name} out for the default{_shown_default(field.default)}"


def _shown_default(default: Any) -> str:
    if isinstance(default, bool):
        return f" ({str(default).lower()})"
    if isinstance(default, timedelta):
        return f" ({format_duration(default)})"
    if isinstance(default, int | float):
        return f" ({default})"
    if default == ():
        return " ([])"
    return ""


class Selector(StrictModel):
    """Which images of a repository a rule looks at. Several selectors combine with AND."""

    tags: Patterns | None = None
    untagged: StrictBool = False
    tag_in_repositories: RepositoryPatterns | None = None

    when_left_out: ClassVar[dict[str, str]] = {
        "tags": "leave tags out to select images whatever their tags",
        "tag_in_repositories": "leave tag_in_repositories out to select images whatever other repositories hold",
    }

    @model_validator(mode="after")
    def _untagged_excludes_tags(self) -> Self:
        if self.untagged and (self.tags or self.tag_in_repositories):
            raise ValueError("untagged: true cannot be combined with tags or tag_in_repositories")
        return self

    @property
    def has_tag_selector(self) -> bool:
        return self.untagged or self.tags is not None or self.tag_in_repositories is not None


class KeepRule(Selector):
    pulled_within: Duration | None = None
    newest: PositiveCount | None = None

    when_left_out: ClassVar[dict[str, str]] = {
        **Selector.when_left_out,
        "pulled_within": "leave pulled_within out for no pull condition",
        "newest": "leave newest out to keep every image the rule selects",
    }


class DeleteRule(Selector):
    older_than: Duration | None = None
    not_pulled_within: Duration | None = None
    keep_newest: Count = 0
    archive: StrictBool = False

    when_left_out: ClassVar[dict[str, str]] = {
        **Selector.when_left_out,
        "older_than": "leave older_than out for no age condition",
        "not_pulled_within": "leave not_pulled_within out for no pull condition",
    }

    @model_validator(mode="after")
    def _selects_something(self) -> Self:
        if not self.has_tag_selector and self.older_than is None and self.not_pulled_within is None:
            raise ValueError(
                "a delete rule needs a selector (tags, untagged, tag_in_repositories) "
                "or a condition (older_than, not_pulled_within)"
            )
        return self


class Rule(StrictModel):
    keep: KeepRule | None = None
    delete: DeleteRule | None = None
    description: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = None

    when_left_out: ClassVar[dict[str, str]] = {
        "keep": "a rule has exactly one of keep or delete: leave keep out of a delete rule",
        "delete": "a rule has exactly one of keep or delete: leave delete out of a keep rule",
        "description": "leave description out to name the rule by its position",
    }

    @model_validator(mode="after")
    def _exactly_one_kind(self) -> Self:
        if (self.keep is None) == (self.delete is None):
            raise ValueError("a rule has exactly one of keep or delete")
        return self


class Policy(StrictModel):
    repositories: RepositoryPatterns
    # The Regions whose registries the policy applies to; None: every Region the deployment prunes.
    regions: Annotated[tuple[AwsRegion, ...], Field(min_length=1)] | None = None
    rules: Annotated[tuple[Rule, ...], Field(min_length=1)]

    when_left_out: ClassVar[dict[str, str]] = {
        "regions": "leave regions out to apply the policy in every Region the deployment prunes",
    }

    @field_validator("regions")
    @classmethod
    def _regions_once(cls, regions: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if regions is not None and len(set(regions)) < len(regions):
            twice = next(region for region in regions if regions.count(region) > 1)
            raise ValueError(f"Region {twice} is listed twice")
        return regions

    def applies_in(self, region: str | None) -> bool:
        """Whether the policy governs the registry of this Region (None: a registry of unknown Region, as an offline
        snapshot without one: only a policy that names no Region)."""
        return self.regions is None or region in self.regions


class Safety(StrictModel):
    min_age: Duration = parse_duration("1d")
    max_delete_fraction: Annotated[float, _fraction(0, 1)] = 0.5
    inventory_max_age: Duration = parse_duration("6h")
    # A cluster is its account and its name (domain/inventory/clusters.py): `prod` is this account's
    # (in-use/prod.json), `210987654321/prod` a spoke account's (in-use/210987654321/prod.json).
    clusters: tuple[ClusterRef, ...] = Field(
        description="Clusters whose fresh in-use manifests every run needs; [] runs without in-use protection."
    )
    # Clusters whose manifests are read, protect and are remembered, but never block a run by being missing,
    # stale or incomplete (an unreadable one still blocks: its images may run).
    optional_clusters: tuple[ClusterRef, ...] = ()
    # The in-use memory (domain/in_use/memory.py): a reference any manifest named keeps protecting its image for
    # this long after the last reading that named it, whatever becomes of the manifest. 0s turns the memory off.
    in_use_grace: GraceDuration = parse_duration("7d")
    # An ARCHIVED image that an in-use manifest names is restored (false: kept and reported as a finding).
    restore_in_use: StrictBool = True
    # What a delete rule would delete is archived instead, and deleted once archived longer than this (the
    # quarantine); None deletes at once. ECR bills an archived image at least 90 days however soon it goes.
    quarantine: Duration | None = None
    # The longest a hold (`ecr-retention hold add`, domain/holds/) protects after it was placed: a longer one is
    # refused when placed, and bounded when read.
    max_hold: Duration = DEFAULT_MAX_HOLD

    when_left_out: ClassVar[dict[str, str]] = {
        "clusters": (
            "list the clusters whose in-use manifests must be fresh, or write clusters: [] to run without in-use "
            "protection"
        ),
        "in_use_grace": "leave in_use_grace out for the default (7d), or write 0s to turn the in-use memory off",
        "quarantine": "leave quarantine out to turn it off",
    }

    @model_validator(mode="after")
    def _optional_is_not_expected(self) -> Self:
        both = sorted(set(self.clusters) & set(self.optional_clusters))
        if both:
            raise ValueError(
                f"cluster {both[0]} is in both clusters and optional_clusters: an expected cluster blocks runs "
                "without a fresh manifest, an optional one never does; keep it in one list"
            )
        return self

    @property
    def listed(self) -> frozenset[ClusterId]:
        """Every cluster either list names: expected or optional."""
        return frozenset((*self.clusters, *self.optional_clusters))


class TaggingRule(StrictModel):
    clusters: Annotated[tuple[ClusterRef, ...], Field(min_length=1)]
    namespaces: Patterns = ("*",)
    tag_prefix: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,100}$")]


class ReportSettings(StrictModel):
    # USD per GB-month of ECR storage, for the cost the report estimates; None: the region's standard rate
    # (domain/reporting/cost.py, with its source and date). Set it for a private price or a region the table lacks.
    storage_price_per_gb_month: Annotated[float, _fraction(0, 100)] | None = None

    when_left_out: ClassVar[dict[str, str]] = {
        "storage_price_per_gb_month": "leave storage_price_per_gb_month out for the region's standard rate",
    }


class RetentionConfig(StrictModel):
    version: Annotated[Literal[1], BeforeValidator(_whole_number)]
    dry_run: StrictBool = True
    safety: Safety
    tagging: tuple[TaggingRule, ...] = ()
    report: ReportSettings = ReportSettings()
    policies: Annotated[tuple[Policy, ...], Field(min_length=1)]

    @model_validator(mode="before")
    @classmethod
    def _explain_missing_clusters(cls, data: Any) -> Any:
        if isinstance(data, dict) and "safety" not in data:
            raise ValueError(
                "safety.clusters is required: list the clusters whose in-use manifests must be fresh, "
                "or write clusters: [] to run without in-use protection"
            )
        return data


def effective_dry_run(config: RetentionConfig, force_dry_run: bool) -> bool:
    """Whether a run only reports: nothing can force deletion past the rules file's dry_run."""
    return config.dry_run or force_dry_run


def check_pruned_regions(config: RetentionConfig, pruned: Sequence[str], source: str) -> None:
    """Every Region a policy names is one the deployment prunes; raises InputError with one line naming the first
    that is not (its rules would silently never apply)."""
    for index, policy in enumerate(config.policies):
        outside = [region for region in policy.regions or () if region not in pruned]
        if outside:
            raise InputError(
                f"{source}: policies[{index}].regions: {outside[0]} is not a Region this deployment prunes "
                f"(regions: {', '.join(pruned)})"
            )


def rule_name(policy_index: int, rule_index: int, rule: Rule) -> str:
    """How plans name a rule: its description, or its position in the file."""
    return rule.description or f"policies[{policy_index}].rules[{rule_index}]"


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects a key written twice in one mapping (PyYAML silently keeps the last)."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} appears twice in one mapping", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)

# Numbers in decimal only. YAML 1.1, which PyYAML reads, also takes `010` for 8 (octal), `1:30` for 90
# (sexagesimal), `0x10`, `0b10` and `1_000`: a keep_newest or a fraction written so would silently mean another
# number. Those forms stay strings here, and a string is no number (the field's error names it).
# Booleans as YAML 1.2 has them: true and false (also True, TRUE, False, FALSE). YAML 1.1 also reads yes, no, on, off,
# y and n as booleans, so `dry_run: no` would silently mean a live run that deletes; here they stay strings, and a
# string is no boolean (the field's error names it), as every other field is strict.
_INT_TAG, _FLOAT_TAG, _BOOL_TAG = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool"
_UniqueKeyLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in (_INT_TAG, _FLOAT_TAG, _BOOL_TAG)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_UniqueKeyLoader.add_implicit_resolver(_BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
_UniqueKeyLoader.add_implicit_resolver(_INT_TAG, re.compile(r"^[-+]?(?:0|[1-9][0-9]*)$"), list("-+0123456789"))
_UniqueKeyLoader.add_implicit_resolver(
    _FLOAT_TAG,
    re.compile(r"^(?:[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
    list("-+0123456789."),
)


def load_yaml(text: str, source: str) -> Any:
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise InputError(f"{source}: invalid YAML{where}: {problem}") from None
    except RecursionError:  # PyYAML composes and constructs nested collections recursively
        raise InputError(f"{source}: YAML nested too deeply to read") from None


def parse_config(text: str, source: str = "retention.yaml") -> RetentionConfig:
    """Parse and validate a rules file; raises InputError with one line naming the field and the problem."""
    data = load_yaml(text, source)
    if not isinstance(data, dict):
        raise InputError(f"{source}: the rules file must be a YAML mapping with version, safety and policies")
    try:
        return RetentionConfig.model_validate(data)
    except ValidationError as error:
        raise InputError(f"{source}: {describe_validation_error(error, RetentionConfig)}") from None
