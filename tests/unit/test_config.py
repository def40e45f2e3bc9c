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
    assert tuple(map(str, config.safety.clusters)) == ("prod", "dev")


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


@pytest.mark.parametrize("value", ["no", "off", "n", "No", "OFF", "yes", "on", "y", "Yes", "'false'", "'true'"])
def test_dry_run_takes_only_true_or_false_not_a_yaml_1_1_boolean(value: str) -> None:
    # PyYAML alone reads no, off and n as false: `dry_run: no` was a live run that deletes.
    text = rules_file("- delete: {untagged: true}").replace("version: 1", f"version: 1\ndry_run: {value}")
    written = value.strip("'")
    assert error_of(text) == (
        f"retention.yaml: dry_run: should be a boolean, not a string ('{written}': write true or false)"
    )


@pytest.mark.parametrize(("value", "dry_run"), [("true", True), ("True", True), ("false", False), ("FALSE", False)])
def test_dry_run_takes_true_and_false_as_yaml_1_2_writes_them(value: str, dry_run: bool) -> None:
    text = rules_file("- delete: {untagged: true}").replace("version: 1", f"version: 1\ndry_run: {value}")
    assert parse_config(text).dry_run is dry_run


def test_every_boolean_of_the_rules_file_is_as_strict_as_dry_run() -> None:
    restore = rules_file("- delete: {untagged: true}").replace(
        "{clusters: [prod]}", "{clusters: [prod], restore_in_use: off}"
    )
    assert error_of(restore) == (
        "retention.yaml: safety.restore_in_use: should be a boolean, not a string ('off': write true or false)"
    )
    untagged = error_of(rules_file("- delete: {untagged: yes}"))
    assert untagged.startswith("retention.yaml: policies[0].rules[0].delete.untagged: should be")


def test_a_tag_written_like_a_yaml_1_1_boolean_stays_the_tag_written() -> None:
    keep = parse_config(rules_file("- keep: {tags: [on, off, yes, no]}")).policies[0].rules[0].keep
    assert keep is not None
    assert keep.tags == ("on", "off", "yes", "no")


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


# --- strict inputs: a guard's number is a number, a null is no value ------------------------------------------


def safety_file(safety: str) -> str:
    return rules_file("- delete: {untagged: true}").replace("safety: {clusters: [prod]}", f"safety: {{{safety}}}")


def test_a_boolean_max_delete_fraction_is_refused() -> None:
    assert error_of(safety_file("clusters: [prod], max_delete_fraction: true")) == (
        "retention.yaml: safety.max_delete_fraction: should be a number, not a boolean"
    )


def test_a_quoted_max_delete_fraction_is_refused() -> None:
    assert error_of(safety_file("clusters: [prod], max_delete_fraction: '0.5'")) == (
        "retention.yaml: safety.max_delete_fraction: should be a number, not a string"
    )


def test_a_whole_max_delete_fraction_is_still_a_number() -> None:
    assert parse_config(safety_file("clusters: [prod], max_delete_fraction: 1")).safety.max_delete_fraction == 1.0


def test_a_max_delete_fraction_that_is_not_finite_is_refused() -> None:
    assert error_of(safety_file("clusters: [prod], max_delete_fraction: .nan")) == (
        "retention.yaml: safety.max_delete_fraction: should be a finite number, not nan"
    )


def test_a_max_delete_fraction_above_one_names_the_value() -> None:
    assert error_of(safety_file("clusters: [prod], max_delete_fraction: 1.5")) == (
        "retention.yaml: safety.max_delete_fraction: 1.5: input should be less than or equal to 1"
    )


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("true", "should be a whole number, not a boolean"),
        ("'10'", "should be a whole number, not a string"),
        ("10.0", "should be a whole number, not a number"),
        ("null", "null is not a value; leave keep_newest out for the default (0)"),
    ],
)
def test_a_keep_newest_that_is_not_a_whole_number_is_refused(value: str, problem: str) -> None:
    message = error_of(rules_file(f"- delete: {{tags: ['*'], keep_newest: {value}}}"))
    assert message == f"retention.yaml: policies[0].rules[0].delete.keep_newest: {problem}"


@pytest.mark.parametrize(("value", "kind"), [("true", "a boolean"), ("'20'", "a string"), ("2.0", "a number")])
def test_a_newest_that_is_not_a_whole_number_is_refused(value: str, kind: str) -> None:
    message = error_of(rules_file(f"- keep: {{tags: ['*'], newest: {value}}}"))
    assert message == f"retention.yaml: policies[0].rules[0].keep.newest: should be a whole number, not {kind}"


@pytest.mark.parametrize("value", ["010", "1:30", "0x10", "0b10", "1_0"])
def test_a_yaml_1_1_number_form_is_refused_not_read_as_another_number(value: str) -> None:
    # PyYAML alone reads 010 as 8, 1:30 as 90, 0x10 as 16, 0b10 as 2 and 1_0 as 10.
    message = error_of(rules_file(f"- delete: {{tags: ['*'], keep_newest: {value}}}"))
    assert message == "retention.yaml: policies[0].rules[0].delete.keep_newest: should be a whole number, not a string"


def test_a_decimal_count_is_read_as_written() -> None:
    config = parse_config(rules_file("- delete: {tags: ['*'], keep_newest: 10}"))
    delete = config.policies[0].rules[0].delete
    assert delete is not None
    assert delete.keep_newest == 10


def test_a_tag_written_like_an_octal_number_stays_the_tag_written() -> None:
    config = parse_config(rules_file("- keep: {tags: [010]}"))
    keep = config.policies[0].rules[0].keep
    assert keep is not None
    assert keep.tags == ("010",)


@pytest.mark.parametrize(("value", "kind"), [("true", "a boolean"), ("'1'", "a string"), ("1.0", "a number")])
def test_a_version_that_only_equals_one_is_refused(value: str, kind: str) -> None:
    text = rules_file("- delete: {untagged: true}").replace("version: 1", f"version: {value}")
    assert error_of(text) == f"retention.yaml: version: should be a whole number, not {kind}"


@pytest.mark.parametrize(("value", "kind"), [("true", "a boolean"), ("'0.10'", "a string")])
def test_a_storage_price_that_is_not_a_number_is_refused(value: str, kind: str) -> None:
    text = rules_file("- delete: {untagged: true}") + f"report: {{storage_price_per_gb_month: {value}}}\n"
    assert error_of(text) == f"retention.yaml: report.storage_price_per_gb_month: should be a number, not {kind}"


@pytest.mark.parametrize("value", ["٣d", "３d", "1٠d"])
def test_a_duration_in_other_digits_than_ascii_is_refused(value: str) -> None:
    # Python's \d and int() read Arabic-Indic and full-width digits: ٣d would be 3 days.
    assert error_of(safety_file(f"clusters: [prod], min_age: '{value}'")) == (
        f"retention.yaml: safety.min_age: invalid duration '{value}': write its number in the digits 0-9, "
        "such as 90m, 6h or 30d"
    )


def test_an_in_use_grace_of_zero_in_other_digits_is_refused() -> None:
    message = error_of(safety_file("clusters: [prod], in_use_grace: '٠s'"))
    assert message.startswith(
        "retention.yaml: safety.in_use_grace: invalid duration '٠s': write its number in the digits"
    )


def test_an_in_use_grace_of_zero_turns_the_memory_off() -> None:
    assert parse_config(safety_file("clusters: [prod], in_use_grace: 0s")).safety.in_use_grace == timedelta(0)


def test_a_null_quarantine_is_refused_not_read_as_off() -> None:
    assert error_of(safety_file("clusters: [prod], quarantine: null")) == (
        "retention.yaml: safety.quarantine: null is not a value; leave quarantine out to turn it off"
    )


@pytest.mark.parametrize(
    ("safety", "problem"),
    [
        ("min_age: null", "safety.min_age: null is not a value; leave min_age out for the default (1d)"),
        (
            "max_delete_fraction: ~",
            "safety.max_delete_fraction: null is not a value; leave max_delete_fraction out for the default (0.5)",
        ),
        (
            "restore_in_use: null",
            "safety.restore_in_use: null is not a value; leave restore_in_use out for the default (true)",
        ),
        (
            "optional_clusters: null",
            "safety.optional_clusters: null is not a value; leave optional_clusters out for the default ([])",
        ),
        (
            "in_use_grace: null",
            "safety.in_use_grace: null is not a value; leave in_use_grace out for the default (7d), "
            "or write 0s to turn the in-use memory off",
        ),
    ],
)
def test_a_null_safety_value_is_refused_with_its_default(safety: str, problem: str) -> None:
    assert error_of(safety_file(f"clusters: [prod], {safety}")) == f"retention.yaml: {problem}"


def test_null_clusters_say_how_to_run_without_in_use_protection() -> None:
    assert error_of(safety_file("clusters: null")) == (
        "retention.yaml: safety.clusters: null is not a value; list the clusters whose in-use manifests must be "
        "fresh, or write clusters: [] to run without in-use protection"
    )


@pytest.mark.parametrize(
    ("rule", "problem"),
    [
        (
            "- delete: {tags: ['*'], older_than: null}",
            "delete.older_than: null is not a value; leave older_than out for no age condition",
        ),
        (
            "- delete: {tags: null, older_than: 1d}",
            "delete.tags: null is not a value; leave tags out to select images whatever their tags",
        ),
        (
            "- keep: {tags: ['*'], newest: null}",
            "keep.newest: null is not a value; leave newest out to keep every image the rule selects",
        ),
        (
            "- keep: {tags: ['*'], pulled_within: null}",
            "keep.pulled_within: null is not a value; leave pulled_within out for no pull condition",
        ),
        (
            "- {keep: {tags: ['*']}, delete: null}",
            "delete: null is not a value; a rule has exactly one of keep or delete: leave delete out of a keep rule",
        ),
        (
            "- {delete: {untagged: true}, description: null}",
            "description: null is not a value; leave description out to name the rule by its position",
        ),
    ],
)
def test_a_null_in_a_rule_is_refused_naming_what_leaving_it_out_means(rule: str, problem: str) -> None:
    assert error_of(rules_file(rule)) == f"retention.yaml: policies[0].rules[0].{problem}"


def test_a_null_storage_price_is_refused() -> None:
    text = rules_file("- delete: {untagged: true}") + "report: {storage_price_per_gb_month: null}\n"
    assert error_of(text) == (
        "retention.yaml: report.storage_price_per_gb_month: null is not a value; leave storage_price_per_gb_month "
        "out for the region's standard rate"
    )


def test_a_null_required_section_is_refused() -> None:
    text = rules_file("- delete: {untagged: true}").replace("safety: {clusters: [prod]}", "safety: null")
    assert error_of(text) == ("retention.yaml: safety: null is not a value; safety is required")


# --- patterns: the characters they hold, and the one line for another --------------------------------------


def test_a_tag_pattern_with_a_character_no_tag_holds_names_that_character() -> None:
    assert error_of(rules_file("- keep: {tags: ['v1 beta']}")) == (
        "retention.yaml: policies[0].rules[0].keep.tags[0]: 'v1 beta': ' ' (U+0020) cannot be in a tag pattern, "
        "which holds letters A-Z a-z, digits 0-9, _ . - and the globs * ?"
    )


def test_a_tag_pattern_with_a_letter_outside_ascii_is_refused() -> None:
    assert "'é' (U+00E9) cannot be in a tag pattern" in error_of(rules_file("- keep: {tags: ['vé*']}"))


def test_a_repository_pattern_in_capitals_names_the_capital() -> None:
    text = rules_file("- keep: {tags: [latest]}").replace("repositories: [app]", "repositories: [App]")
    assert error_of(text) == (
        "retention.yaml: policies[0].repositories[0]: 'App': 'A' (U+0041) cannot be in a repository pattern, "
        "which holds lowercase letters a-z, digits 0-9, . _ / - and the globs * ?"
    )


def test_an_empty_tag_pattern_says_how_long_a_pattern_is() -> None:
    assert error_of(rules_file("- keep: {tags: ['']}")) == (
        "retention.yaml: policies[0].rules[0].keep.tags[0]: '': a tag pattern is 1 to 300 characters long"
    )
