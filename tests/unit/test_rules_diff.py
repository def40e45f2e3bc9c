"""`ecr-retention diff` (issue 28): both rules files planned on the same inputs; only what changes is shown."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest

from ecr_retention.commands.diff_text import MARKDOWN_BUDGET, diff_markdown, diff_table_lines, headline
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.review.diff_conditions import breaches, parse_conditions, parse_size
from ecr_retention.domain.review.rules_diff import RulesDiff, diff_rules
from support.builders import HOST, NOW, config, digest, image, in_use, repository, snapshot

MiB = 1024 * 1024
VERSIONS = {"delete": {"tags": ["v*"], "older_than": "30d"}}
EVERYTHING_OLD = {"delete": {"tags": ["*"], "older_than": "30d"}}
APP = repository(
    "app",
    image("v1", "v1", size=100 * MiB),
    image("v2", "v2", size=200 * MiB),
    image("dev", "dev-1", size=50 * MiB),
    image("young", "v9", age=timedelta(days=2)),
)


def diff_of(base: Any, new: Any, *repositories: dict[str, Any], inventory: Inventory | None = None) -> RulesDiff:
    snap = snapshot(*(repositories or (APP,)))
    return diff_rules(base, new, snap, inventory or Inventory(), NOW)


def changed(diff: RulesDiff) -> dict[str, tuple[str, str]]:
    """Tag (or digest) of each changed image -> (action before, action after)."""
    return {
        (change.image_tags[0] if change.image_tags else change.image_digest): (
            change.before.action,
            change.after.action,
        )
        for repository in diff.repositories
        for change in repository.changes
    }


def test_the_same_rules_change_nothing() -> None:
    rules = config([VERSIONS])
    diff = diff_of(rules, rules)
    assert diff.repositories == ()
    assert headline(diff) == "this change changes no image's fate; no in-use image changes fate"
    assert breaches(parse_conditions(["deletions-increase", "deletions-over", "0"]), diff) == []


def test_a_widened_glob_deletes_more_and_says_how_much() -> None:
    diff = diff_of(config([VERSIONS]), config([EVERYTHING_OLD]))
    assert changed(diff) == {"dev-1": ("keep", "delete")}
    change = diff.repositories[0].changes[0]
    assert change.before.reasons[0].kind == "no-delete-rule"
    assert change.after.reasons[0].kind == "delete-rule"
    assert headline(diff) == (
        "this change deletes 1 more image (50.0 MiB) in 1 repository; no in-use image changes fate"
    )


def test_a_tightened_keep_spares_what_was_to_be_deleted() -> None:
    keep_v1 = {"keep": {"tags": ["v1"]}}
    diff = diff_of(config([VERSIONS]), config([keep_v1, VERSIONS]))
    assert changed(diff) == {"v1": ("delete", "keep")}
    assert diff.repositories[0].changes[0].after.main_reason.kind == "keep-rule"
    assert headline(diff) == "this change keeps 1 that were to be deleted; no in-use image changes fate"


def test_a_new_policy_brings_a_repository_under_management() -> None:
    other = repository("other", image("o1", "o1"))
    base = config(policies=[{"repositories": ["app"], "rules": [VERSIONS]}])
    new = config(
        policies=[
            {"repositories": ["app"], "rules": [VERSIONS]},
            {"repositories": ["other"], "rules": [EVERYTHING_OLD]},
        ]
    )
    diff = diff_of(base, new, APP, other)
    (repo,) = diff.repositories
    assert (repo.repository_name, repo.management, repo.policy_after) == ("other", "starts", "policies[1]")
    assert changed(diff) == {"o1": ("keep", "delete")}
    assert "other: starts being managed (policies[1])" in "\n".join(diff_table_lines(diff))


def test_a_repository_that_leaves_every_policy_is_named_and_its_deletions_go() -> None:
    diff = diff_of(config([VERSIONS], repositories=("app",)), config([VERSIONS], repositories=("nothing-*",)))
    (repo,) = diff.repositories
    assert repo.management == "stops"
    assert changed(diff) == {"v1": ("delete", "keep"), "v2": ("delete", "keep")}
    assert repo.changes[0].after.main_reason.kind == "no-policy"
    assert "app: leaves every policy (was policies[0])" in "\n".join(diff_table_lines(diff))


def test_quarantine_switched_on_archives_instead_of_deleting() -> None:
    diff = diff_of(config([VERSIONS]), config([VERSIONS], quarantine="30d"))
    assert changed(diff) == {"v1": ("delete", "archive"), "v2": ("delete", "archive")}
    assert all(change.quarantined for change in diff.repositories[0].changes)
    assert diff.totals.archived_instead == 2
    assert headline(diff) == "this change archives 2 that were to be deleted; no in-use image changes fate"


def test_quarantine_switched_off_deletes_what_it_would_have_archived() -> None:
    diff = diff_of(config([VERSIONS], quarantine="30d"), config([VERSIONS]))
    assert changed(diff) == {"v1": ("archive", "delete"), "v2": ("archive", "delete")}
    assert diff.totals.deleted_instead == 2


def test_in_use_images_keep_their_fate_whatever_the_rules() -> None:
    prod = in_use("prod", (f"{HOST}/app:dev-1", "dev"))
    diff = diff_of(config([VERSIONS]), config([EVERYTHING_OLD]), inventory=Inventory(manifests=(prod,)))
    assert changed(diff) == {}
    assert headline(diff).endswith("no in-use image changes fate")


def test_stale_inputs_do_not_hide_the_change_they_are_named() -> None:
    stale = in_use("prod", (f"{HOST}/app:v1", "v1"), age=timedelta(days=3))
    rules = {"clusters": ["prod"], "inventory_max_age": "6h"}
    diff = diff_of(
        config([VERSIONS], **rules), config([EVERYTHING_OLD], **rules), inventory=Inventory(manifests=(stale,))
    )
    assert changed(diff) == {"dev-1": ("keep", "delete")}
    assert diff.blocked
    assert "prod" in diff.blocked[0]


def test_fail_on_conditions() -> None:
    diff = diff_of(config([VERSIONS]), config([EVERYTHING_OLD]))
    assert breaches(parse_conditions(["deletions-increase"]), diff) == [
        "deletions-increase: the new rules remove 3 images, the old ones 2"
    ]
    assert breaches(parse_conditions(["deletions-over", "1"]), diff) == []
    assert breaches(parse_conditions(["deletions-over=0"]), diff) == [
        "deletions-over 0: the change removes 1 more images"
    ]
    assert breaches(parse_conditions(["bytes-over", "50MiB"]), diff) == []
    assert breaches(parse_conditions(["bytes-over", "49MiB"]), diff) != []
    spared = diff_of(config([EVERYTHING_OLD]), config([VERSIONS]))
    assert breaches(parse_conditions(["deletions-increase", "deletions-over", "0"]), spared) == []


@pytest.mark.parametrize(
    ("words", "error"),
    [
        (["deletions-over"], "deletions-over needs a number"),
        (["deletions-over", "many"], "is not a whole number"),
        (["bytes-over", "5 parsecs"], "is not a size"),
        (["fewer-deletions"], "is not a condition"),
    ],
)
def test_fail_on_that_cannot_be_read_is_refused(words: list[str], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_conditions(words)


def test_sizes_read_in_both_unit_systems() -> None:
    assert parse_size("2GB") == 2 * 10**9
    assert parse_size("1.5 GiB") == 3 * 2**29
    assert parse_size("1024") == 1024


def test_markdown_stays_under_the_comment_limit_however_large_the_change() -> None:
    images = [image(f"i{n}", f"v{n}-{'x' * 60}") for n in range(300)]
    repositories = [repository(f"team-{r}/service-{'y' * 80}", *images) for r in range(60)]
    diff = diff_of(
        config([{"keep": {"tags": ["*"]}}], repositories=("team-*",)),
        config([EVERYTHING_OLD], repositories=("team-*",)),
        *repositories,
    )
    assert diff.changed_images == 60 * 300
    text = diff_markdown(diff, images_per_repository=20)
    assert len(text) <= MARKDOWN_BUDGET
    assert "and 280 more changed images" in text
    assert "more repositories changed: see the job log" in text
    assert text.count("<details>") == text.count("</details>")


def test_markdown_is_inert_whatever_the_tags_hold() -> None:
    hostile = repository("app", image("h", "v1|<img src=x>**`"))
    diff = diff_of(config([{"keep": {"tags": ["*"]}}]), config([EVERYTHING_OLD]), hostile)
    text = diff_markdown(diff)
    assert "<img" not in text
    assert "v1\\|&lt;img src=x&gt;\\*\\*\\`" in text
    assert digest("h")[7:19] in text


def test_a_policy_for_repositories_the_inputs_lack_is_named_not_silently_empty() -> None:
    new = config(
        policies=[
            {"repositories": ["app"], "rules": [VERSIONS]},
            {"repositories": ["team-x/*"], "rules": [EVERYTHING_OLD]},
        ]
    )
    diff = diff_of(config([VERSIONS]), new)
    assert diff.repositories == ()
    assert diff.warnings == (
        "policies[1] (team-x/*) matches no repository of these inputs, so its effect is not shown: review it on a "
        "snapshot of those repositories (ecr-retention snapshot --repositories ...)",
    )


def test_markdown_mentions_nobody_whatever_the_rules_file_says() -> None:
    """A rule's description is the rules author's text: `@user` and `@org/team` in it must not notify anyone when the
    comment is posted. GitHub renders `@&#8203;user` as the plain text `@user`, and no mention."""
    described = {"delete": {"tags": ["*"], "older_than": "30d"}, "description": "cc @platform-team and @acme/sre"}
    diff = diff_of(config([VERSIONS]), config([described]))
    text = diff_markdown(diff)
    assert "cc @&#8203;platform-team and @&#8203;acme/sre" in text
    assert re.search(r"@(?!&#8203;)", text) is None  # no other @ left
