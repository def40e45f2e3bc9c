"""`ecr-retention plan` writes its table and its JSON byte for byte as it always has, whatever text the snapshot, the
rules and the manifests hold: non-ASCII, controls, DEL, bidirectional overrides, characters beyond the BMP, a lone
surrogate (`json.loads` reads one from `"\\ud800"`). The references below are the code before issue 26: the JSON of
`json.dump(..., indent=2)` over the plan's dict with each repository's summary added last; the table of
`format_rows` over `row`, then the summary lines, each escaped."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from ecr_retention.cli import main
from ecr_retention.domain.planning import plan_registry
from ecr_retention.domain.planning.plan import Plan
from ecr_retention.loading import load_config, load_manifests, load_snapshots, parse_now
from ecr_retention.tables import COLUMNS, format_rows, plan_summary_lines, printable, render_plan_table, row
from support.builders import HOST, NOW, digest, image, repository

NOW_TEXT = NOW.isoformat()
DAY = timedelta(days=1)
# Rules whose descriptions (the rule's name in its reasons) hold non-ASCII, a bidirectional override, DEL.
RULES = """
version: 1
safety: {clusters: [prod], max_delete_fraction: 1, quarantine: 30d}
policies:
  - repositories: ["app*", "caf*", "evil*"]
    rules:
      - keep: {tags: ["garde-*", "keep*"]}
        description: "gardée \\u202e pour toujours\\x7f"
      - keep: {tags: ["trailing*"]}
        description: "ends in a no-break space\\xa0"
      - delete: {tags: ["*"], older_than: 30d}
      - delete: {untagged: true, older_than: 1d}
"""
TAGS = (
    "évolution",
    "\U0001f600-emoji",
    "evil\nrow",
    "\u202egnp.exe",
    "del\x7fete",
    "c1\x85\x9f",
    "garde-é1",
    "\u202ekeep-me",
    "trailing\xa0",
    "long-" + "\x1b" * 12 + "x" * 30,  # its escapes push it past the column's width
)


def snapshot_data(extra_tag: str | None = None) -> dict[str, Any]:
    repositories = [
        repository(
            "app",
            *(image(f"a{i}", tag) for i, tag in enumerate(TAGS)),
            image("untagged"),
            image("leaves", "v1", archived_ago=40 * DAY),  # quarantine: deleted for good
            image("waits", "v2", archived_ago=5 * DAY),  # quarantine: waits archived
        ),
        repository("café/naïve\u202e", image("c1", "v1"), image("c2", "ünïcode")),
        repository("evil\nrepo\x7f", image("e1", "\u2028line")),
        repository("unmanaged-\U0001f600", image("u1", "v1")),
    ]
    if extra_tag is not None:
        repositories.append(repository("app-extra", image("x1", extra_tag)))
    return {"registryId": "123456789012", "region": "eu-west-1", "repositories": repositories}


def manifest_data() -> dict[str, Any]:
    """The cluster runs an image of app, named in its reason with the manifest's words."""
    used = {"digest": digest("a0"), "namespace": "équipe\u202e", "container": "web", "source": "pod"}
    return {
        "schemaVersion": 1,
        "cluster": "prod",
        "generatedAt": NOW_TEXT,
        "complete": True,
        "images": [{**used, "image": f"{HOST}/app@{digest('a0')}", "workload": "Deployment/wéb\xa0 "}],
    }


@pytest.fixture
def write_inputs(tmp_path: Path) -> Any:
    def write(extra_tag: str | None = None) -> list[str]:
        (tmp_path / "retention.yaml").write_text(RULES)
        # json.dumps escapes every non-ASCII character, a lone surrogate too: json.loads reads it back as one.
        (tmp_path / "snapshot.json").write_text(json.dumps(snapshot_data(extra_tag)))
        (tmp_path / "in-use").mkdir(exist_ok=True)
        (tmp_path / "in-use" / "prod.json").write_text(json.dumps(manifest_data()))
        return [
            *("--config", str(tmp_path / "retention.yaml"), "--snapshot", str(tmp_path / "snapshot.json")),
            *("--manifests", str(tmp_path / "in-use")),
        ]

    return write


def plan_of(arguments: list[str]) -> Plan:
    config, snapshot, inventory = (
        load_config(arguments[1]),
        load_snapshots(arguments[3])[0],
        load_manifests(arguments[5]),
    )
    return plan_registry(config, snapshot, inventory, parse_now(NOW_TEXT))


def json_before(plan: Plan) -> str:
    data = plan.model_dump(mode="json", by_alias=True)
    for repo_data, repo in zip(data["repositories"], plan.repositories, strict=True):
        repo_data["summary"] = repo.summary.model_dump(mode="json", by_alias=True)
    return json.dumps(data, indent=2) + "\n"


def table_before(plan: Plan) -> str:
    rows = [
        row(repo.repository_name, image, plan) for repo in plan.repositories if repo.policy for image in repo.images
    ]
    lines = [*format_rows([COLUMNS, *rows]), ""] if rows else []
    return "\n".join(printable(line) for line in [*lines, *plan_summary_lines(plan)])


def run_plan(arguments: list[str], capsys: pytest.CaptureFixture[str], *output: str) -> str:
    capsys.readouterr()
    main(["plan", *arguments, "--now", NOW_TEXT, *output])
    captured = capsys.readouterr()
    assert captured.err == "", captured.err
    return captured.out


def test_the_inputs_reach_every_kind_of_text_and_the_quarantine(write_inputs: Any) -> None:
    plan = plan_of(write_inputs())
    text = json.dumps(plan.model_dump(mode="json", by_alias=True), ensure_ascii=False)
    assert all(part in text for part in ("gardée \u202e pour toujours\x7f", "\U0001f600", "\u2028"))
    assert "prod: équipe\u202e/Deployment/wéb\xa0  (pod)" in text
    stages = {image.quarantine_stage for repo in plan.repositories for image in repo.images}
    assert {"enters", "leaves", "waits"} <= stages


@pytest.mark.parametrize("extra_tag", [None, "\ud800-lone-surrogate"])
def test_plan_json_is_what_json_dump_wrote(
    write_inputs: Any, capsys: pytest.CaptureFixture[str], extra_tag: str | None
) -> None:
    arguments = write_inputs(extra_tag)

    document = run_plan(arguments, capsys, "--format", "json")

    plan = plan_of(arguments)
    assert document == json_before(plan)
    assert document.isascii()
    assert json.dumps(plan.to_json_dict(), indent=2) + "\n" == document  # the demo's plan.json: the same keys in order


def test_plan_table_is_what_format_rows_wrote(write_inputs: Any, capsys: pytest.CaptureFixture[str]) -> None:
    arguments = write_inputs()
    plan = plan_of(arguments)

    table = run_plan(arguments, capsys)

    assert table == table_before(plan) + "\n"
    assert render_plan_table(plan) == table_before(plan)
    assert "app (policies[0]): 13 images" in table
    assert "; quarantine: 8 enter (archived instead of deleted), 1 leave for good, 1 wait" in table


def test_a_plan_without_rows_is_its_summary_alone(write_inputs: Any) -> None:
    plan = plan_of(write_inputs())
    unmanaged = plan.model_copy(update={"repositories": tuple(r for r in plan.repositories if r.policy is None)})

    assert render_plan_table(unmanaged) == table_before(unmanaged)
    assert render_plan_table(unmanaged).startswith("unmanaged-\U0001f600: 1 images, untouched")


def test_plan_json_reaches_a_standard_output_of_text_alone(write_inputs: Any) -> None:
    arguments = write_inputs()
    printed = io.StringIO()  # no bytes buffer beneath it, as in a caller that redirects standard output

    with redirect_stdout(printed):
        main(["plan", *arguments, "--now", NOW_TEXT, "--format", "json"])

    assert printed.getvalue() == json_before(plan_of(arguments))
