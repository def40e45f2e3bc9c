"""Text from registries and clusters stays text: escaped, and unable to reorder the page around it."""

from __future__ import annotations

from ecr_retention.domain.planning.plan_parts import Reason
from ecr_retention.report_page import render_page
from ecr_retention.report_page.text import visible
from tests.unit.report_page.dom import parse
from tests.unit.report_page.reports import DELETE_RULE, PRICE, entry, kept, repo, run

SCRIPT_TAG = '"><script>alert(1)</script>'
SCRIPT_REPOSITORY = "team/</script><script>alert(2)</script>"
OVERRIDE = "v1\u202egpj.exe"
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def hostile_run() -> str:
    evil_reason = Reason(kind="in-use", rule=None, detail=f"Deployment/{SCRIPT_TAG} in namespace \u2067evil")
    report = run(
        repo(
            SCRIPT_REPOSITORY,
            kept_images=[kept("k1", SCRIPT_TAG, OVERRIDE)],
            deleted=[entry("d1", "<b>bold</b>", reasons=[DELETE_RULE])],
            skipped=f"over max_delete_fraction {SCRIPT_TAG}",
            outcome="skipped",
        ),
        repo("app", kept_images=[entry("k2", "x", reasons=[evil_reason])]),
        run_warnings=(f"warning {SCRIPT_TAG} {OVERRIDE}",),
    )
    return render_page(report, PRICE)


def test_only_the_page_own_script_runs() -> None:
    html = hostile_run()
    root = parse(html)

    assert len(root.find_all("script")) == 1
    assert "alert" not in root.find("script").text()
    assert "<script>alert" not in html
    assert not root.find_all("b", class_=None) or all(b.text() != "bold" for b in root.find_all("b"))


def test_a_hostile_tag_shows_as_text() -> None:
    rows = parse(hostile_run()).find_all("tr", class_="image")

    tags = {row.find_all("td")[2].text() for row in rows}

    assert f"{SCRIPT_TAG}, {visible(OVERRIDE)}" in tags
    assert "<b>bold</b>" in tags


def test_a_hostile_repository_name_shows_as_text_everywhere() -> None:
    root = parse(hostile_run())

    row = root.by_id("repositories").find("tr", data_repository=SCRIPT_REPOSITORY)
    assert row.find_all("td")[0].text() == SCRIPT_REPOSITORY
    images = root.by_id("images").find_all("tr", data_repository=SCRIPT_REPOSITORY)
    assert [r.find_all("td")[0].text() for r in images] == [SCRIPT_REPOSITORY, SCRIPT_REPOSITORY]
    assert root.find("svg", class_="age-chart", data_repository=SCRIPT_REPOSITORY)
    assert SCRIPT_REPOSITORY in root.find(data_check="max-delete-fraction").text()


def test_reasons_and_warnings_are_escaped() -> None:
    root = parse(hostile_run())

    assert SCRIPT_TAG in root.find(data_check="warnings").text()
    assert any(SCRIPT_TAG in row.text() for row in root.find_all("tr", data_repository="app"))


def test_bidi_controls_are_shown_not_applied() -> None:
    html = hostile_run()
    root = parse(html)

    for element in root.iter():
        for child in element.children:
            if isinstance(child, str):
                assert not set(BIDI) & set(child), (element.tag, child)
        for name, value in element.attrs.items():
            if set(BIDI) & set(value):
                assert name.startswith("data-"), name  # machine data, never rendered
    assert "v1⟨U+202E⟩gpj.exe" in root.by_id("images").text()
    assert "⟨U+2067⟩evil" in root.by_id("images").text()


def test_data_in_sentences_is_isolated() -> None:
    check = parse(hostile_run()).find(data_check="warnings")

    (evidence,) = check.find("ul", class_="evidence").find_all("li")
    assert evidence.find("bdi").text() == f"warning {SCRIPT_TAG} {visible(OVERRIDE)}"


def test_visible_names_every_bidi_control() -> None:
    shown = visible(BIDI + "\u200e\u200f\u061c")

    assert shown == "".join(f"⟨U+{ord(c):04X}⟩" for c in BIDI + "\u200e\u200f\u061c")
    assert visible("plain שלום") == "plain שלום"
