"""Files that try to do more than configure: a rules file with Python tags (YAML is loaded safely: no object is
built, no code runs), and snapshots whose images lack what a plan needs. Each is refused with one line naming the
file and the field, exit 2, and nothing else happens."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ecr_retention.cli import main
from ecr_retention.domain.errors import InputError
from ecr_retention.loading import load_config

VALID_RULES = """\
version: 1
safety: {clusters: [prod]}
policies:
  - repositories: [app]
    rules:
      - delete: {untagged: true, older_than: 1d}
"""

# PyYAML's unsafe constructors: each would run code or import a module under yaml.load without a safe loader.
PYTHON_TAGS = [
    "!!python/object/apply:os.system ['touch {marker}']",
    "!!python/object/new:subprocess.Popen [['touch', '{marker}']]",
    "!!python/name:os.system",
    "!!python/module:os",
    "!!python/object:pathlib.PosixPath {{}}",
]


@pytest.mark.parametrize("tag", PYTHON_TAGS, ids=[tag.split()[0] for tag in PYTHON_TAGS])
@pytest.mark.parametrize("where", ["top level", "a rule's description", "a key"])
def test_a_rules_file_with_a_python_tag_is_refused_in_one_line_and_runs_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tag: str, where: str
) -> None:
    marker = tmp_path / "pwned"
    value = tag.format(marker=marker)
    if where == "top level":
        text = f"{VALID_RULES}extra: {value}\n"
    elif where == "a rule's description":
        text = VALID_RULES.replace("older_than: 1d}", f"older_than: 1d}}\n        description: {value}")
    else:
        text = f"? {value}\n: 1\n{VALID_RULES}"
    rules = tmp_path / "retention.yaml"
    rules.write_text(text)

    assert main(["validate", str(rules)]) == 2
    captured = capsys.readouterr()
    with pytest.raises(InputError) as raised:  # the Lambdas' door: the rules file shipped in the asset
        load_config(rules)

    assert captured.out == ""
    [line] = captured.err.strip().splitlines()
    assert line.startswith(f"ecr-retention validate: error: {rules}: invalid YAML")
    assert "could not determine a constructor for the tag" in line
    assert str(raised.value) == line.removeprefix("ecr-retention validate: error: ")
    assert not marker.exists()


DIGEST = "sha256:" + "1" * 64
IMAGE = {"imageDigest": DIGEST, "imageTags": ["v1"], "imagePushedAt": "2026-01-01T00:00:00Z"}


def without(name: str) -> dict[str, Any]:
    return {key: value for key, value in IMAGE.items() if key != name}


@pytest.mark.parametrize(
    ("images", "field"),
    [
        ([without("imageDigest")], "repositories[0].imageDetails[0].imageDigest: required but missing"),
        ([without("imagePushedAt")], "repositories[0].imageDetails[0].imagePushedAt: required but missing"),
        ([{**IMAGE, "imageDigest": "latest"}], "repositories[0].imageDetails[0].imageDigest"),
        ([{**IMAGE, "imagePushedAt": "yesterday"}], "repositories[0].imageDetails[0].imagePushedAt"),
        ([{**IMAGE, "imageTags": "v1"}], "repositories[0].imageDetails[0].imageTags"),
        ("none", "repositories[0].imageDetails"),
    ],
)
def test_a_snapshot_image_without_what_a_plan_needs_is_one_line_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], images: Any, field: str
) -> None:
    rules = tmp_path / "retention.yaml"
    rules.write_text(VALID_RULES)
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_text(json.dumps({"repositories": [{"repositoryName": "app", "imageDetails": images}]}))

    assert main(["plan", "--config", str(rules), "--snapshot", str(snapshot), "--now", "2026-11-30T06:00:00Z"]) == 2

    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.strip().splitlines()
    assert line.startswith(f"ecr-retention plan: error: {snapshot}: {field}"), line
