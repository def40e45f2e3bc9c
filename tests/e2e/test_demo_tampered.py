"""`ecr-retention demo --empty-manifest dev`: dev's manifest replaced by an empty, complete, fresh one right before the
real sweep (what a broken collector or a spoke choosing its session tags could write). The in-use memory the dry
run recorded keeps everything dev runs; the demo's own verification, which reads what runs where from the seeded
workloads and not from any manifest, holds; the report says why (SPEC "The in-use memory", docs/safety.md 19). The
manifest stays empty through step 5: the native policy that takes the image dev runs is alerted by the sentinel, and
the next sweep reports it in-use-missing, both saying the in-use memory speaks for dev (docs/safety.md 25)."""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from ecr_retention.cli import main

pytestmark = pytest.mark.slow


def test_an_emptied_manifest_before_the_real_run_changes_nothing_dev_ran(tmp_path: Path) -> None:
    printed = io.StringIO()
    with redirect_stdout(printed):
        code = main(["demo", "--out", str(tmp_path), "--empty-manifest", "dev"])
    output = printed.getvalue()

    assert code == 0, output
    assert "\nverified: no in-use, protected, young or referenced image was deleted or archived" in output
    assert re.search(
        r"^   warning  cluster dev: now reports 0 images, it reported 4 images at \S+; the references it dropped stay "
        r"protected through the in-use memory until \S+ \(safety.in_use_grace 1w\)$",
        output,
        flags=re.MULTILINE,
    )
    remembered = re.findall(r"^   (kept|restored) +(\S+ \S+): in-use \[remembered\]: dev: ", output, flags=re.MULTILINE)
    assert ("kept", "app 1.12.307-dev") in remembered
    assert ("restored", "docker.io/library/nginx 1.14.2") in remembered
    (live,) = tmp_path.glob("reports/live-*.json")
    report = json.loads(live.read_text())
    assert report["outcome"] == "ok"
    assert any(w.startswith("cluster dev: now reports 0 images") for w in report["warnings"])

    # Step 5: the broken collector silences neither the sentinel nor the sweep's in-use check
    memory = r"; dev's manifest now reports 0 images; by the in-use memory dev ran it \d+[smh] ago"
    assert (
        "\n   Subject: ecr-retention sentinel: app:dev deleted in eu-west-1 while dev/Deployment/app runs it\n"
        in output
    )
    assert re.search(
        r"^  Runs in: dev: dev/Deployment/app \(pod\), dev: dev/Deployment/app \(replicaset\), "
        rf"dev: dev/Deployment/app \(template\){memory}\.$",
        output,
        flags=re.MULTILINE,
    )
    assert re.search(
        r"^  the next pull of dev: dev/Deployment/app \(pod\), .* fails: app:dev no longer exists in eu-west-1 \(deleted \S+ \S+ "
        rf"UTC by lifecycle rule 1 of app's policy\){memory}$",
        output,
        flags=re.MULTILINE,
    )
    assert (
        "\n   ok   the in-use memory spoke: the alert and the finding say: dev's manifest now reports 0 images"
        in output
    )
    assert "\nverified: the sentinel named what runs app:dev, the image and the rule" in output


def test_a_deleted_manifest_of_an_expected_cluster_blocks_the_real_run_and_the_memory_is_named(tmp_path: Path) -> None:
    printed = io.StringIO()
    with redirect_stdout(printed):
        code = main(["demo", "--out", str(tmp_path), "--delete-manifest", "dev"])
    output = printed.getvalue()

    assert code == 0, output
    assert "\n   ok   blocked: eu-west-1, us-east-1: cluster dev: no in-use manifest: 0 deleted, 0 archived\n" in output
    assert re.search(
        r"^   warning  cluster dev: no in-use manifest now, it reported 4 images at ", output, re.MULTILINE
    )
    assert "\nverified: no in-use, protected, young or referenced image was deleted or archived" in output


def test_a_cluster_the_demo_does_not_have_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--empty-manifest", "staging"]) == 2
    assert capsys.readouterr().err == (
        "ecr-retention demo: error: --empty-manifest: the demo's clusters are prod, dev, us-prod, not 'staging'\n"
    )
