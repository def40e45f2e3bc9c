"""Inputs that used to end in a traceback: YAML nested thousands deep, durations beyond any date. Each is
one line naming the file (and the field) and exit 2; valid extremes plan without error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ecr_retention.cli import main
from ecr_retention.domain.durations import MAX_DURATION, parse_duration

NOW = "2026-11-30T06:00:00Z"
DEEP = "[" * 5000 + "]" * 5000
RULES = """
version: 1
safety: {clusters: [prod], max_delete_fraction: 1, min_age: 1d, inventory_max_age: 6h}
policies:
  - repositories: [app]
    rules:
      - keep: {tags: [latest], pulled_within: 30d}
      - delete: {tags: ["*"], older_than: 30d, not_pulled_within: 14d}
"""
IMAGES = [
    {"imageDigest": "sha256:" + "1" * 64, "imageTags": ["v1"], "imagePushedAt": "2026-01-01T00:00:00Z"},
    {"imageDigest": "sha256:" + "2" * 64, "imageTags": ["latest"], "imagePushedAt": "2026-01-02T00:00:00Z"},
]


def write_inputs(tmp_path: Path, rules: str, images: list[dict[str, str]], generated: str = NOW) -> list[str]:
    """The arguments of a plan over these rules, one repository of these images and a prod manifest."""
    (tmp_path / "retention.yaml").write_text(rules)
    snapshot = {"repositories": [{"repositoryName": "app", "imageDetails": images}]}
    (tmp_path / "snapshot.json").write_text(json.dumps(snapshot))
    (tmp_path / "in-use").mkdir(exist_ok=True)
    manifest = {"schemaVersion": 1, "cluster": "prod", "generatedAt": generated, "complete": True, "images": []}
    (tmp_path / "in-use" / "prod.json").write_text(json.dumps(manifest))
    return [
        "--config",
        str(tmp_path / "retention.yaml"),
        "--snapshot",
        str(tmp_path / "snapshot.json"),
        "--manifests",
        str(tmp_path / "in-use"),
    ]


def one_error_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 2, captured.err
    assert captured.out == ""
    assert captured.err.count("\n") == 1, captured.err
    return captured.err.strip()


# 9. Deeply nested YAML


@pytest.mark.parametrize("command", ["validate", "plan"])
def test_deeply_nested_rules_file_is_one_line_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    arguments = write_inputs(tmp_path, RULES.replace("max_delete_fraction: 1", f"max_delete_fraction: {DEEP}"), IMAGES)
    argv = ["validate", arguments[1]] if command == "validate" else ["plan", *arguments, "--now", NOW]

    line = one_error_line(capsys, argv)

    assert line == f"ecr-retention {command}: error: {tmp_path / 'retention.yaml'}: YAML nested too deeply to read"


def test_deeply_nested_mappings_are_caught_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "retention.yaml"
    rules.write_text("version: 1\nsafety: " + "{a: " * 2000 + "1" + "}" * 2000 + "\n")

    line = one_error_line(capsys, ["validate", str(rules)])

    assert line.endswith(f"{rules}: YAML nested too deeply to read")


def test_deeply_nested_kubeconfig_is_one_line_before_any_cluster_is_contacted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(f"apiVersion: v1\nkind: Config\nclusters: {DEEP}\n")
    out = tmp_path / "prod.json"

    line = one_error_line(capsys, ["export", "--cluster", "prod", "--kubeconfig", str(kubeconfig), "--out", str(out)])

    assert line == f"ecr-retention export: error: kubeconfig {kubeconfig}: YAML nested too deeply to read"
    assert not out.exists()


# 10. Durations too large for a date

DURATION_FIELDS = [
    ("min_age: 1d", "safety.min_age"),
    ("inventory_max_age: 6h", "safety.inventory_max_age"),
    ("pulled_within: 30d", "policies[0].rules[0].keep.pulled_within"),
    ("older_than: 30d", "policies[0].rules[1].delete.older_than"),
    ("not_pulled_within: 14d", "policies[0].rules[1].delete.not_pulled_within"),
]


@pytest.mark.parametrize("command", ["validate", "plan"])
@pytest.mark.parametrize(("setting", "field"), DURATION_FIELDS)
def test_duration_beyond_100_years_names_the_field_and_the_maximum(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, setting: str, field: str
) -> None:
    name = setting.split(":")[0]
    arguments = write_inputs(tmp_path, RULES.replace(setting, f"{name}: 999999999w"), IMAGES)
    argv = ["validate", arguments[1]] if command == "validate" else ["plan", *arguments, "--now", NOW]

    line = one_error_line(capsys, argv)

    assert line == (
        f"ecr-retention {command}: error: {tmp_path / 'retention.yaml'}: {field}: "
        "duration '999999999w' is longer than the maximum of 100 years (36500d)"
    )


@pytest.mark.parametrize(
    ("text", "accepted"),
    [
        ("36500d", True),
        ("5214w", True),
        ("3153600000s", True),
        ("000000000000000000000001d", True),
        ("36501d", False),
        ("5215w", False),
        ("876001h", False),
        ("99999999999999999999w", False),
        ("9" * 5000 + "s", False),  # beyond int()'s 4,300-digit limit for a string
    ],
)
def test_durations_up_to_100_years_are_accepted(text: str, accepted: bool) -> None:
    if accepted:
        assert parse_duration(text) <= MAX_DURATION
    else:
        with pytest.raises(ValueError, match="is longer than the maximum of 100 years"):
            parse_duration(text)


def test_an_overlong_value_is_quoted_short_so_the_error_stays_one_readable_line() -> None:
    with pytest.raises(ValueError, match="longer than the maximum") as error:
        parse_duration("9" * 5000 + "s")

    assert len(str(error.value)) < 120


CENTURY_RULES = RULES.replace("1d", "36500d").replace("6h", "36500d").replace("30d", "36500d").replace("14d", "36500d")
EARLIEST, LATEST = "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"


@pytest.mark.parametrize(
    ("now", "generated", "oldest_action"),
    [
        (EARLIEST, EARLIEST, "keep"),  # pushed at the run's time: within min_age
        (LATEST, LATEST, "delete"),  # 9,999 years old, beyond every 100-year window
        (LATEST, EARLIEST, "keep"),  # the manifest is 9,999 years stale: the run is blocked
    ],
)
def test_longest_durations_plan_at_the_ends_of_the_calendar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], now: str, generated: str, oldest_action: str
) -> None:
    # Ages are compared with durations, never subtracted from the run's time: no date falls off the
    # calendar, however early or late `--now`, the images and the manifest are.
    images = [{**IMAGES[0], "imagePushedAt": EARLIEST}, {**IMAGES[1], "imagePushedAt": LATEST}]
    arguments = write_inputs(tmp_path, CENTURY_RULES, images, generated=generated)

    code = main(["plan", *arguments, "--now", now, "--format", "json"])

    captured = capsys.readouterr()
    assert code in (0, 1), captured.err
    actions = {
        image["imageTags"][0]: image["action"] for image in json.loads(captured.out)["repositories"][0]["images"]
    }
    assert actions == {"v1": oldest_action, "latest": "keep"}
    assert main(["plan", *arguments, "--now", now]) in (0, 1)  # the table, with its ages, as well
