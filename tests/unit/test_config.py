"""The rules file: what validates, and the one line a user sees when it does not."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from ecr_retention.domain.config import parse_config
from ecr_retention.domain.durations import format_duration, parse_duration
from ecr_retention.domain.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
MINIMAL = """
version: 1
safety: {clusters: [prod]}
policies:
  - repositories: [app]
    rules:
{rules}
"""


def rules_file(rules: str) -> str:
    return MINIMAL.replace("{rules}", "\n".join("      " + line for line in rules.strip().splitlines()))


def error_of(text: str) -> str:
    with pytest.raises(InputError) as caught:
        parse_config(text, "retention.yaml")
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_example_rules_file_is_valid() -> None:
    config = parse_config((ROOT / "retention.yaml").read_text(), "retention.yaml")
    assert config.dry_run is True
    assert config.safety.clusters == ("prod", "dev")


def test_defaults_are_the_safe_ones() -> None:
    config = parse_config(rules_file("- delete: {untagged: true}"))
    assert config.dry_run is True
    assert config.safety.min_age == timedelta(days=1)
    assert config.safety.max_delete_fraction == 0.5
    assert config.safety.inventory_max_age == timedelta(hours=6)


def test_unknown_key_is_named_with_a_suggestion() -> None:
    message = error_of(rules_file("- delete: {tags: ['*'], keep_newset: 3}"))
    assert message.startswith("retention.yaml: policies[0].rules[0].delete.keep_newset: unknown key;")
    assert "did you mean keep_newest?" in message


def test_bad_duration_names_the_field() -> None:
    message = error_of(rules_file("- delete: {tags: ['*'], older_than: 30x}"))
    assert message.startswith("retention.yaml: policies[0].rules[0].delete.older_than: invalid duration '30x'")


def test_negative_count_is_rejected() -> None:
    message = error_of(rules_file("- delete: {tags: ['*'], keep_newest: -1}"))
    assert "policies[0].rules[0].delete.keep_newest" in message
    assert "-1" in message


def test_zero_newest_is_rejected() -> None:
    assert "policies[0].rules[0].keep.newest" in error_of(rules_file("- keep: {tags: ['*'], newest: 0}"))


def test_untagged_and_tags_in_one_rule_is_an_error() -> None:
    message = error_of(rules_file("- delete: {untagged: true, tags: ['*']}"))
    assert "policies[0].rules[0].delete: untagged: true cannot be combined with tags" in message


def test_rule_must_be_keep_or_delete_not_both() -> None:
    assert "exactly one of keep or delete" in error_of(rules_file("- {keep: {tags: [a]}, delete: {tags: [b]}}"))
    assert "exactly one of keep or delete" in error_of(rules_file("- description: nothing"))


def test_delete_rule_needs_a_selector_or_condition() -> None:
    assert "a delete rule needs a selector" in error_of(rules_file("- delete: {keep_newest: 3}"))


def test_missing_safety_explains_clusters() -> None:
    message = error_of("version: 1\npolicies: [{repositories: [app], rules: [{delete: {untagged: true}}]}]\n")
    assert "safety.clusters is required" in message
    assert "clusters: []" in message


def test_version_must_be_one() -> None:
    text = rules_file("- delete: {untagged: true}").replace("version: 1", "version: 2")
    assert "version: unsupported version 2" in error_of(text)


def test_dry_run_must_be_a_real_boolean() -> None:
    text = rules_file("- delete: {untagged: true}").replace("version: 1", "version: 1\ndry_run: 'false'")
    assert "dry_run" in error_of(text)


def test_duplicate_yaml_key_is_rejected() -> None:
    message = error_of(rules_file("- delete: {untagged: true}") + "policies: []\n")
    assert "key 'policies' appears twice" in message
    assert "line" in message


def test_yaml_syntax_error_names_line_and_column() -> None:
    message = error_of("version: 1\nsafety: {clusters: [prod]\n")
    assert message.startswith("retention.yaml: invalid YAML (line")


def test_empty_file_is_explained() -> None:
    assert "must be a YAML mapping" in error_of("")


def test_several_problems_are_counted_in_one_line() -> None:
    message = error_of(rules_file("- delete: {tags: ['*'], older_than: 1x, not_pulled_within: 2y}"))
    assert "(and 1 more problem)" in message


def test_rule_description_names_the_rule() -> None:
    config = parse_config(rules_file("- delete: {untagged: true}\n  description: untagged builds"))
    assert config.policies[0].rules[0].description == "untagged builds"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90m", timedelta(minutes=90)),
        ("6h", timedelta(hours=6)),
        ("30d", timedelta(days=30)),
        ("2w", timedelta(days=14)),
    ],
)
def test_durations_parse_and_format(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected
    assert format_duration(expected) == text


@pytest.mark.parametrize("text", ["0d", "30", "d", "1.5d", "-1d", "30 days", ""])
def test_invalid_durations_are_rejected(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_a_string_where_a_list_belongs_is_named_in_words_a_user_knows() -> None:
    text = rules_file("- delete: {untagged: true}").replace("repositories: [app]", "repositories: app")
    assert error_of(text) == "retention.yaml: policies[0].repositories: should be a list, not a string"


def test_null_where_an_object_belongs_is_named() -> None:
    assert "policies[0].rules[0]: should be an object, not null" in error_of(rules_file("- null"))
