"""The EcrRetention construct in a user's stack: settings as typed properties of the one settings model, one line for a
bad one, one instance per stack (its role and alarm names derive from the stack's name), and app.py's stack keeping
the logical IDs it had before the construct existed (the hidden id)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.infra_stacks import MINIMAL_RULES, rules_file


@pytest.mark.slow
def test_a_second_ecr_retention_in_one_stack_is_refused_in_one_line(tmp_path: Path) -> None:
    import aws_cdk as cdk

    from ecr_retention.cdk.retention import EcrRetention
    from ecr_retention.domain.errors import InputError

    stack = cdk.Stack(cdk.App(context={"aws:cdk:bundling-stacks": []}), "Platform")
    rules = rules_file(tmp_path, MINIMAL_RULES)
    EcrRetention(stack, "Retention", rules=rules, aws_inventory=False)
    with pytest.raises(InputError, match=r"^Platform/Again: stack Platform already holds an EcrRetention") as raised:
        EcrRetention(stack, "Again", rules=rules, aws_inventory=False)
    assert "\n" not in str(raised.value)


def test_a_bad_property_is_one_line_naming_it(tmp_path: Path) -> None:
    import aws_cdk as cdk

    from ecr_retention.cdk.retention import EcrRetention
    from ecr_retention.domain.errors import InputError

    stack = cdk.Stack(cdk.App(context={"aws:cdk:bundling-stacks": []}), "Platform")
    with pytest.raises(
        InputError, match=r"^EcrRetention: map_concurrency: 0: input should be greater than or equal to 1$"
    ) as raised:
        EcrRetention(stack, "Retention", rules=rules_file(tmp_path, MINIMAL_RULES), map_concurrency=0)
    assert "\n" not in str(raised.value)


def test_properties_are_the_settings_fields_and_override_the_settings_given(tmp_path: Path) -> None:
    import aws_cdk as cdk

    from ecr_retention.cdk.deploy_settings import DeploySettings
    from ecr_retention.cdk.retention import EcrRetention

    stack = cdk.Stack(cdk.App(context={"aws:cdk:bundling-stacks": []}), "Platform")
    base = DeploySettings(report_emails=("platform@example.com",), map_concurrency=5)
    retention = EcrRetention(
        stack, "Retention", rules=rules_file(tmp_path, MINIMAL_RULES), settings=base, map_concurrency=7
    )
    assert retention.settings.map_concurrency == 7
    assert retention.settings.report_emails == ("platform@example.com",)
    assert retention.settings.rules_file == tmp_path / "retention.yaml"


def test_a_property_named_as_its_context_key_overrides_the_settings_given(tmp_path: Path) -> None:
    import aws_cdk as cdk

    from ecr_retention.cdk.deploy_settings import DeploySettings
    from ecr_retention.cdk.retention import EcrRetention

    stack = cdk.Stack(cdk.App(context={"aws:cdk:bundling-stacks": []}), "Platform")
    base = DeploySettings(report_emails=("platform@example.com",), map_concurrency=5)
    retention = EcrRetention(
        stack,
        "Retention",
        rules=rules_file(tmp_path, MINIMAL_RULES),
        settings=base,
        reportEmails=["oncall@example.com"],
        mapConcurrency=7,
    )
    assert retention.settings.report_emails == ("oncall@example.com",)
    assert retention.settings.map_concurrency == 7


def test_a_loaded_config_ships_as_a_document_the_functions_read_back_as_the_same_rules(tmp_path: Path) -> None:
    from ecr_retention.cdk.deploy_settings import DeploySettings
    from ecr_retention.cdk.retention import _rules
    from ecr_retention.domain.config import parse_config
    from ecr_retention.loading import load_config

    config = load_config(rules_file(tmp_path, MINIMAL_RULES))
    read, document = _rules(config, DeploySettings())
    assert read is config
    assert parse_config(document.decode()) == config


@pytest.mark.slow
def test_app_py_stack_keeps_its_logical_ids_under_the_hidden_id(tmp_path: Path) -> None:
    """EcrRetentionStack holds the construct as "Default", which logical IDs skip: the inventory bucket of a deployed
    stack is updated in place, never replaced. A user's id (Retention) begins its logical IDs."""
    import aws_cdk as cdk

    from ecr_retention.cdk.deploy_settings import DeploySettings
    from ecr_retention.cdk.retention import EcrRetention
    from ecr_retention.cdk.stack import HIDDEN_ID, EcrRetentionStack

    rules = rules_file(tmp_path, MINIMAL_RULES)
    app = cdk.App(context={"aws:cdk:bundling-stacks": []})
    ours = EcrRetentionStack(app, "EcrRetention", rules=rules, settings=DeploySettings(aws_inventory=False))
    theirs = EcrRetention(cdk.Stack(app, "Platform"), "Retention", rules=rules, aws_inventory=False)
    assert ours.retention.node.id == HIDDEN_ID
    bucket = ours.get_logical_id(ours.retention.inventory.bucket.node.default_child)
    assert bucket.startswith("InventoryBucket")
    assert (
        cdk.Stack.of(theirs)
        .get_logical_id(theirs.inventory.bucket.node.default_child)
        .startswith("RetentionInventoryBucket")
    )
