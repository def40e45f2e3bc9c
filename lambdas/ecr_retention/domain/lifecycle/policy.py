"""The lifecycle policy model, with the constraints PutLifecyclePolicy enforces on each rule and
across rules."""

from collections.abc import Sequence
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    StringConstraints,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

MAX_RULES = 50  # service quota, not adjustable
MIN_POLICY_TEXT, MAX_POLICY_TEXT = 100, 30_720  # LifecyclePolicyText length in the API model
MAX_WILDCARDS = 4  # per tagPatternList entry
MIN_ARCHIVE_DAYS = 90  # archive's minimum storage duration; sinceImageTransitioned below it is rejected

TagStatus = Literal["tagged", "untagged", "any"]
CountType = Literal["imageCountMoreThan", "sinceImagePushed", "sinceImagePulled", "sinceImageTransitioned"]
StorageClass = Literal["standard", "archive"]
ActionType = Literal["expire", "transition"]
TagText = Annotated[str, StringConstraints(min_length=1, max_length=300)]
TagList = Annotated[tuple[TagText, ...], Field(min_length=1)]


class PolicyShape(BaseModel):
    """The policy JSON as ECR reads it: camelCase keys, unknown keys rejected."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class LifecycleSelection(PolicyShape):
    tag_status: TagStatus
    tag_pattern_list: TagList | None = None
    tag_prefix_list: TagList | None = None
    storage_class: StorageClass | None = None
    count_type: CountType
    count_unit: Literal["days"] | None = None
    count_number: Annotated[StrictInt, Field(ge=1)]

    @field_validator("tag_pattern_list")
    @classmethod
    def _at_most_four_wildcards(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        for pattern in value or ():
            if pattern.count("*") > MAX_WILDCARDS:
                raise ValueError(f"{pattern!r} has {pattern.count('*')} wildcards; at most {MAX_WILDCARDS} allowed")
        return value

    @model_validator(mode="after")
    def _fields_fit_together(self) -> Self:
        self._tag_lists_fit_status()
        self._count_unit_fits_type()
        self._storage_class_fits_type()
        return self

    def _tag_lists_fit_status(self) -> None:
        lists = [name for name, value in self._tag_lists() if value is not None]
        if self.tag_status == "tagged" and not lists:
            raise ValueError("tagStatus tagged requires tagPatternList or tagPrefixList")
        if self.tag_status != "tagged" and lists:
            raise ValueError(f"{lists[0]} is only allowed with tagStatus tagged, not {self.tag_status}")
        if len(lists) > 1:
            raise ValueError("tagPatternList and tagPrefixList cannot both be given in one rule")

    def _count_unit_fits_type(self) -> None:
        if self.count_type == "imageCountMoreThan" and self.count_unit is not None:
            raise ValueError("countUnit is not allowed with countType imageCountMoreThan")
        if self.count_type != "imageCountMoreThan" and self.count_unit is None:
            raise ValueError(f"countUnit (days) is required with countType {self.count_type}")

    def _storage_class_fits_type(self) -> None:
        """The archive class goes with sinceImageTransitioned, and that at archive's minimum storage duration."""
        if self.count_type != "sinceImageTransitioned":
            if self.storage_class == "archive":
                raise ValueError(
                    f"storageClass archive is only allowed with sinceImageTransitioned, not {self.count_type}"
                )
            return
        if self.storage_class != "archive":
            raise ValueError("countType sinceImageTransitioned requires storageClass archive")
        if self.count_number < MIN_ARCHIVE_DAYS:
            raise ValueError(
                f"countNumber {self.count_number}: sinceImageTransitioned needs at least "
                f"{MIN_ARCHIVE_DAYS} days (archive's minimum storage duration)"
            )

    def _tag_lists(self) -> tuple[tuple[str, tuple[str, ...] | None], ...]:
        return (("tagPatternList", self.tag_pattern_list), ("tagPrefixList", self.tag_prefix_list))

    @property
    def effective_storage_class(self) -> StorageClass:
        return self.storage_class or "standard"

    @property
    def patterns(self) -> tuple[str, ...]:
        """The tag lists as `*` patterns: a prefix `p` is the pattern `p*`."""
        if self.tag_pattern_list is not None:
            return self.tag_pattern_list
        return tuple(f"{prefix}*" for prefix in self.tag_prefix_list or ())


class LifecycleAction(PolicyShape):
    type: ActionType
    target_storage_class: Literal["archive"] | None = None

    @model_validator(mode="after")
    def _target_fits_type(self) -> Self:
        if self.type == "transition" and self.target_storage_class is None:
            raise ValueError("action type transition requires targetStorageClass archive")
        if self.type == "expire" and self.target_storage_class is not None:
            raise ValueError("targetStorageClass is only allowed with action type transition")
        return self


class LifecycleRule(PolicyShape):
    rule_priority: Annotated[StrictInt, Field(ge=1)]
    description: StrictStr | None = None
    selection: LifecycleSelection
    action: LifecycleAction

    @model_validator(mode="after")
    def _count_type_fits_action(self) -> Self:
        count_type, action = self.selection.count_type, self.action.type
        if count_type == "sinceImagePulled" and action != "transition":
            raise ValueError("countType sinceImagePulled can only be used with action type transition")
        if count_type == "sinceImageTransitioned" and action != "expire":
            raise ValueError("countType sinceImageTransitioned can only be used with action type expire")
        return self

    @property
    def label(self) -> str:
        return f"rule {self.rule_priority}"

    @property
    def is_count_rule(self) -> bool:
        return self.selection.count_type == "imageCountMoreThan"


class LifecyclePolicy(PolicyShape):
    rules: Annotated[tuple[LifecycleRule, ...], Field(min_length=1, max_length=MAX_RULES)]

    @model_validator(mode="after")
    def _rules_fit_together(self) -> Self:
        self._priorities_unique()
        for storage_class in ("standard", "archive"):
            rules = [r for r in self.ordered_rules if r.selection.effective_storage_class == storage_class]
            where = f"among rules selecting storageClass {storage_class}"
            _any_rule_last(rules, where)
            _one_untagged_rule(rules, where)
            _unique_prefixes(rules, where)
        return self

    def _priorities_unique(self) -> None:
        seen: dict[int, int] = {}
        for index, rule in enumerate(self.rules):
            if rule.rule_priority in seen:
                raise ValueError(
                    f"rules[{seen[rule.rule_priority]}] and rules[{index}] both have rulePriority "
                    f"{rule.rule_priority}; priorities must be unique"
                )
            seen[rule.rule_priority] = index

    @property
    def ordered_rules(self) -> tuple[LifecycleRule, ...]:
        return tuple(sorted(self.rules, key=lambda rule: rule.rule_priority))

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


# The constraints among the rules of one storage class, in priority order; `where` names the class.


def _any_rule_last(rules: Sequence[LifecycleRule], where: str) -> None:
    any_rules = [r for r in rules if r.selection.tag_status == "any"]
    if any_rules and rules[-1] is not any_rules[0]:
        raise ValueError(
            f"{any_rules[0].label}: a rule with tagStatus any must have the highest rulePriority "
            f"{where}, but {rules[-1].label} comes after it"
        )


def _one_untagged_rule(rules: Sequence[LifecycleRule], where: str) -> None:
    untagged = [r for r in rules if r.selection.tag_status == "untagged"]
    if len(untagged) > 1:
        raise ValueError(
            f"{untagged[1].label}: only one rule may select untagged images {where} ({untagged[0].label} already does)"
        )


def _unique_prefixes(rules: Sequence[LifecycleRule], where: str) -> None:
    prefixes: dict[frozenset[str], LifecycleRule] = {}
    for rule in rules:
        if rule.selection.tag_prefix_list is None:
            continue
        key = frozenset(rule.selection.tag_prefix_list)
        if key in prefixes:
            raise ValueError(
                f"{rule.label}: tagPrefixList {sorted(key)} repeats {prefixes[key].label}; "
                f"the rules {where} must have a unique set of prefixes"
            )
        prefixes[key] = rule
