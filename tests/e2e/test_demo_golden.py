"""The demo's output stays the same through the refactor of issue 16: `python -m ecr_retention demo --out DIR`,
run as `make demo` runs it, printed what tests/golden/data/demo.stdout.txt records, wrote the plan that
demo.plan.txt records, and stored the reports that demo.reports.summary.txt records (the sha256 of each
normalized report, and per repository a sha256 of its lists: see support.golden.digest_summary).

The demo seeds its registry relative to the current time and runs against moto on a free port, so these vary from
run to run, and only these are normalized (two runs of the recorded code differed in exactly these):

* the emulator's port (`127.0.0.1:<port>`) and the output directory (`<out>`);
* run ids and the tagger's run ids: their time (`<stamp>`) and their 8 random hex digits (`<uuid>`);
* wall-clock times: ISO 8601 timestamps (`<time>`: the report's startedAt, imagePushedAt, ...; the --now of the
  replay hint), the summary's "YYYY-MM-DD HH:MM UTC", and the date folders of the report keys (`reports/<date>/`);
* `InUseManifestAgeSeconds <n>` (the seconds between writing the collector's manifest and reading it),
  `Done in <n> s` and the restore's `ACTIVE <n> s after the sweep`;
* the unix seconds in the tagger's `deployed-prod-<unix>` tags, and the seconds since the in-use memory last saw a
  reference (`last seen 5s ago`: the memory's reading is the dry run's, a few seconds before);
* the ids of the events EventBridge delivered to the sentinel (random UUIDs), which its record of removals keeps and
  the report after the native policy names (`<event-id>`).

Ages (`1h`, `135d`, `1y11mo`), sizes, digests, counts and every reason are compared as printed: the seeds are
deterministic and their ages are offsets from the time of the run. To re-record after a deliberate change:

    UPDATE_GOLDEN=1 PYTHONPATH=lambdas:. .venv/bin/python -m pytest -q tests/e2e/test_demo_golden.py -p no:cacheprovider
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from support.golden import GOLDEN_DATA, check_golden, digest_summary, normalize_run_ids

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]

NORMALIZE = (
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:<port>"),
    (re.compile(r"\d{8}T\d{6}Z"), "<stamp>"),
    (re.compile(r"reports/\d{4}/\d{2}/\d{2}/"), "reports/<date>/"),
    (re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?"), "<time>"),
    (re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC"), "<time> UTC"),
    (re.compile(r"InUseManifestAgeSeconds \d+"), "InUseManifestAgeSeconds <n>"),
    (re.compile(r"Done in \d+(?:\.\d+)? s"), "Done in <n> s"),
    (re.compile(r"ACTIVE \d+(?:\.\d+)? s after the sweep"), "ACTIVE <n> s after the sweep"),
    (re.compile(r"deployed-prod-\d+"), "deployed-prod-<unix>"),
    (re.compile(r"last seen \d+s ago"), "last seen <n>s ago"),
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<event-id>"),
)


def normalize(text: str, out: Path) -> str:
    text = normalize_run_ids(text.replace(str(out), "<out>"))
    for pattern, replacement in NORMALIZE:
        text = pattern.sub(replacement, text)
    return text


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    out = tmp_path_factory.mktemp("demo-golden")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "lambdas"), str(ROOT)])}
    env.pop("AWS_PROFILE", None)
    done = subprocess.run(
        [sys.executable, "-m", "ecr_retention", "demo", "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == "", done.stderr
    return done.stdout, out


def test_the_demo_prints_what_it_printed(demo: tuple[str, Path]) -> None:
    stdout, out = demo
    check_golden(GOLDEN_DATA / "demo.stdout.txt", normalize(stdout, out))


def test_the_demo_writes_the_plan_it_wrote(demo: tuple[str, Path]) -> None:
    _, out = demo
    check_golden(GOLDEN_DATA / "demo.plan.txt", normalize((out / "plan.txt").read_text(), out))


def test_the_demo_stores_the_reports_it_stored(demo: tuple[str, Path]) -> None:
    _, out = demo
    reports = sorted((out / "reports").glob("*.json"))
    assert [normalize(path.name, out) for path in reports] == [
        "after-policy-<stamp>-schedule-<uuid>.json",  # step 5: the dry-run sweep after a native policy's deletions
        "dry-run-<stamp>-schedule-<uuid>.json",
        "live-<stamp>-schedule-<uuid>.json",
    ]
    summaries = [f"{normalize(path.name, out)}\n{digest_summary(normalize(path.read_text(), out))}" for path in reports]
    check_golden(GOLDEN_DATA / "demo.reports.summary.txt", "\n".join(summaries))
