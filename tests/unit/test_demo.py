"""The demo's parts that need no emulator: nothing of it runs at import, a missing moto is one line, and the
verification fails when the registry shows what must not happen."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from ecr_retention.demo.emulator import MotoEcr
from ecr_retention.demo.registry import DemoRegistry, SeededImage
from ecr_retention.demo.verify import RegistryState, verify
from ecr_retention.domain.report import ImageEntry, RepositoryReport, RunReport, build_run_report

NOW = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)

IMPORT_PROBE = """
import json, os, sys, threading
before = (dict(os.environ), threading.active_count())
from ecr_retention.cli import build_parser
build_parser().parse_args(["demo", "--keep-running"])
import ecr_retention.demo, ecr_retention.commands.demo
moto_after_cli = "moto" in sys.modules
import ecr_retention.demo.runner  # imports moto, the handlers' modules, boto3
after = (dict(os.environ), threading.active_count())
print(json.dumps({"moto_after_cli": moto_after_cli, "environment": before[0] == after[0],
                  "threads": [before[1], after[1]]}))
"""


def test_importing_the_demo_starts_nothing_and_the_cli_does_not_load_moto() -> None:
    probe = subprocess.run([sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True, check=True)

    result = json.loads(probe.stdout)
    assert result == {"moto_after_cli": False, "environment": True, "threads": [1, 1]}


def test_without_moto_the_demo_says_in_one_line_to_run_make_demo() -> None:
    script = "import sys; sys.modules['moto'] = None; from ecr_retention.cli import main; sys.exit(main(['demo']))"

    probe = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)

    assert probe.returncode == 1
    assert probe.stdout == ""
    assert probe.stderr.count("\n") == 1
    assert "ecr-retention demo: moto (a development dependency) is not installed; run `make demo`" in probe.stderr


# The verification, on a small registry: an index (tagged stable) with its child, a release a cluster runs, the
# latest and an old release, a young build, a pull-request build for the archive, and an image no policy governs.

INDEX, CHILD, RUNNING, OLD, YOUNG, PR, TRY, LATEST = ("sha256:" + c * 64 for c in "abcdef01")
API, APP, WORKER, SANDBOX = "platform/api", "app", "team-payments/worker", "sandbox/experiments"
Key = tuple[str, str]


def registry() -> DemoRegistry:
    ecr = MotoEcr(SimpleNamespace(meta=SimpleNamespace(region_name="eu-west-1")))
    seeded = DemoRegistry(ecr=ecr, now=NOW)
    seeded.repositories = [API, APP, WORKER, SANDBOX]
    for repository, digest, children in (
        (API, INDEX, (CHILD,)),
        (API, CHILD, ()),
        (APP, RUNNING, ()),
        (APP, OLD, ()),
        (APP, YOUNG, ()),
        (APP, LATEST, ()),
        (WORKER, PR, ()),
        (SANDBOX, TRY, ()),
    ):
        seeded.images[(repository, digest)] = SeededImage(
            repository, digest, f"{repository} {digest[7:9]}", NOW, children
        )
    seeded.tags = {APP: {"1.0": RUNNING}}
    seeded.uses("prod", f"{seeded.host}/app:1.0", "Deployment/app")
    return seeded


def detail(digest: str, *tags: str, age: timedelta = timedelta(days=90)) -> dict[str, Any]:
    return {"imageDigest": digest, "imageTags": list(tags), "imagePushedAt": NOW - age, "imageStatus": "ACTIVE"}


BEFORE = RegistryState(
    {
        (API, INDEX): detail(INDEX, "v1", "stable"),
        (API, CHILD): detail(CHILD),
        (APP, RUNNING): detail(RUNNING, "1.0"),
        (APP, OLD): detail(OLD, "0.9"),
        (APP, YOUNG): detail(YOUNG, age=timedelta(hours=2)),
        (APP, LATEST): detail(LATEST, "1.1", "latest"),
        (WORKER, PR): detail(PR, "pr-1"),
        (SANDBOX, TRY): detail(TRY, "try-0"),
    },
    NOW,
)
CLEAN_DELETED, CLEAN_ARCHIVED = [(APP, OLD)], [(WORKER, PR)]


def report(deleted: list[Key], archived: list[Key], *, dry_run: bool = False) -> RunReport:
    def entry(digest: str) -> ImageEntry:
        return ImageEntry(image_digest=digest, image_tags=(), image_pushed_at=NOW, kind="delete-rule", detail="")

    return build_run_report(
        run_id="20261130T060000Z-schedule-1a2b3c4d",
        trigger="schedule",
        dry_run=dry_run,
        started_at=NOW,
        finished_at=NOW,
        repositories=[
            RepositoryReport(
                repository_name=name,
                outcome="ok",
                deleted=tuple(entry(d) for n, d in deleted if n == name),
                archived=tuple(entry(d) for n, d in archived if n == name),
            )
            for name in sorted({name for name, _ in [*deleted, *archived]})
        ],
    )


def after(deleted: list[Key], archived: list[Key]) -> RegistryState:
    images = {key: value for key, value in BEFORE.images.items() if key not in deleted}
    for key in archived:
        images[key] = {**images[key], "imageStatus": "ARCHIVED"}
    return RegistryState(images, NOW)


def failed_checks(
    deleted: list[Key], archived: list[Key] = CLEAN_ARCHIVED, announced: RunReport | None = None
) -> list[str]:
    done = report(deleted, archived)
    result = verify(registry(), BEFORE, after(deleted, archived), announced or done, done)
    failed = [check.name for check in result.checks if not check.ok]
    assert result.ok is not bool(failed)
    return failed


def test_a_clean_run_is_verified() -> None:
    done = report(CLEAN_DELETED, CLEAN_ARCHIVED)
    result = verify(registry(), BEFORE, after(CLEAN_DELETED, CLEAN_ARCHIVED), done, done)

    assert result.ok
    assert (result.deleted, result.archived) == (set(CLEAN_DELETED), set(CLEAN_ARCHIVED))


@pytest.mark.parametrize(
    ("also_deleted", "failed"),
    [
        ((APP, RUNNING), "in use"),
        ((API, CHILD), "referenced"),
        ((APP, YOUNG), "young"),
        ((SANDBOX, TRY), "untouched"),
        ((APP, LATEST), "protected"),
    ],
)
def test_deleting_what_must_stay_fails_the_verification(also_deleted: Key, failed: str) -> None:
    assert failed_checks([*CLEAN_DELETED, also_deleted]) == [failed]


def test_archiving_an_in_use_image_fails_the_verification() -> None:
    assert failed_checks(CLEAN_DELETED, [*CLEAN_ARCHIVED, (APP, RUNNING)]) == ["in use"]


def test_a_report_that_does_not_match_the_registry_fails_the_verification() -> None:
    done = report([], CLEAN_ARCHIVED)  # the run deleted OLD but its report does not say so
    result = verify(registry(), BEFORE, after(CLEAN_DELETED, CLEAN_ARCHIVED), done, done)

    assert [check.name for check in result.checks if not check.ok] == [
        "the report is exact",
        "the dry run announced it",
    ]
    assert not result.ok


def test_a_removal_the_dry_run_did_not_announce_fails_the_verification() -> None:
    announced = report([], CLEAN_ARCHIVED, dry_run=True)
    assert failed_checks(CLEAN_DELETED, announced=announced) == ["the dry run announced it"]


def test_a_run_that_removed_nothing_is_not_verified() -> None:
    assert failed_checks([], []) == ["something removed"]


@pytest.mark.parametrize("status", ["ACTIVE", "ARCHIVED"])
def test_states_read_the_storage_class(status: str) -> None:
    image = {**detail(OLD), "imageStatus": status}
    assert RegistryState({(APP, OLD): image}, NOW).active((APP, OLD)) is (status == "ACTIVE")
