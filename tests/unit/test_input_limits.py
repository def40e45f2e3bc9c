"""Every input file is a regular file under its kind's size cap: `/dev/zero`, a FIFO or a huge file is one
line and exit 2, read no further than the cap, never a hang or a MemoryError."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

import pytest

from ecr_retention.cli import main
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.limits import (
    IMAGES_FILE,
    IN_USE_MANIFEST,
    KUBECONFIG,
    LIFECYCLE_POLICY,
    RULES_FILE,
    SNAPSHOT,
    MiB,
    SizeLimit,
    format_limit,
)
from ecr_retention.loading import read_limited

ROOT = Path(__file__).resolve().parents[2]
LIFECYCLE = ROOT / "examples" / "lifecycle"
NOW = "2026-11-30T06:00:00Z"
RULES = "version: 1\nsafety: {clusters: [prod]}\npolicies: [{repositories: [app], rules: [{keep: {tags: [v1]}}]}]\n"
MANIFEST = {"schemaVersion": 1, "cluster": "prod", "generatedAt": NOW, "complete": True, "images": []}
SNAPSHOT_DOCUMENT = {"repositories": [{"repositoryName": "app", "imageDetails": []}]}
KUBECONFIG_DOCUMENT = """
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Fail instead of hanging when a read blocks (a FIFO without a writer) or never ends (/dev/zero)."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"still reading after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, Path]:
    """A valid file of every kind; each test puts a hostile one beside it (a manifest in the manifest
    directory) and points the command at it."""
    (tmp_path / "retention.yaml").write_text(RULES)
    (tmp_path / "snapshot.json").write_text(json.dumps(SNAPSHOT_DOCUMENT))
    (tmp_path / "in-use").mkdir()
    (tmp_path / "in-use" / "prod.json").write_text(json.dumps(MANIFEST))
    (tmp_path / "kubeconfig").write_text(KUBECONFIG_DOCUMENT)
    (tmp_path / "policy.json").write_bytes((LIFECYCLE / "policy-fixed.json").read_bytes())
    (tmp_path / "images.json").write_bytes((LIFECYCLE / "describe-images.json").read_bytes())
    return {
        "rules": tmp_path / "retention.yaml",
        "snapshot": tmp_path / "snapshot.json",
        "manifest": tmp_path / "in-use" / "prod.json",
        "policy": tmp_path / "policy.json",
        "images": tmp_path / "images.json",
        "kubeconfig": tmp_path / "kubeconfig",
        "out": tmp_path / "out.json",
    }


def validate_command(files: dict[str, Path]) -> list[str]:
    return ["validate", str(files["rules"])]


def plan_command(files: dict[str, Path]) -> list[str]:
    config, snapshot, manifests = str(files["rules"]), str(files["snapshot"]), str(files["manifest"].parent)
    return ["plan", "--config", config, "--snapshot", snapshot, "--manifests", manifests, "--now", NOW]


def preview_command(files: dict[str, Path]) -> list[str]:
    return ["lifecycle-preview", "--policy", str(files["policy"]), "--images", str(files["images"]), "--now", NOW]


def export_command(files: dict[str, Path]) -> list[str]:
    return ["export", "--cluster", "prod", "--kubeconfig", str(files["kubeconfig"]), "--out", str(files["out"])]


Command = Callable[[dict[str, Path]], list[str]]
# Each kind of input, the file that carries it, its cap, and a command that reads it.
KINDS: list[tuple[str, SizeLimit, Command]] = [
    ("rules", RULES_FILE, validate_command),
    ("rules", RULES_FILE, plan_command),
    ("snapshot", SNAPSHOT, plan_command),
    ("manifest", IN_USE_MANIFEST, plan_command),
    ("policy", LIFECYCLE_POLICY, preview_command),
    ("images", IMAGES_FILE, preview_command),
    ("kubeconfig", KUBECONFIG, export_command),
]
KIND_IDS = [f"{name}-{command.__name__.removesuffix('_command')}" for name, _, command in KINDS]


def one_error_line(capsys: pytest.CaptureFixture[str], argv: list[str], name: str = "") -> str:
    """The one line that refuses the input: exit 2 and one line on stderr; for an in-use manifest, which is
    not bad input but an unreadable inventory, exit 1 and the plan's BLOCKED line naming the file."""
    with deadline(10):
        code = main(argv)
    captured = capsys.readouterr()
    if name == "manifest":
        assert code == 1, captured.err
        [line] = [line for line in captured.out.splitlines() if "unreadable in-use manifest" in line]
        return line.removeprefix("BLOCKED: ").replace(": unreadable in-use manifest: ", ": ")
    assert code == 2, captured.err
    assert captured.out == ""
    assert captured.err.count("\n") == 1, captured.err
    return captured.err.strip()


@pytest.mark.parametrize(("name", "limit", "command"), KINDS, ids=KIND_IDS)
def test_dev_zero_is_not_a_regular_file(
    inputs: dict[str, Path], capsys: pytest.CaptureFixture[str], name: str, limit: SizeLimit, command: Command
) -> None:
    inputs[name] = inputs[name].parent / f"zero-{inputs[name].name}"
    inputs[name].symlink_to("/dev/zero")  # a manifest directory holds it as <cluster>.json

    line = one_error_line(capsys, command(inputs), name)

    assert line.endswith(f"{inputs[name]}: not a regular file")


@pytest.mark.parametrize(("name", "limit", "command"), KINDS, ids=KIND_IDS)
def test_fifo_is_not_a_regular_file_and_is_not_waited_on(
    inputs: dict[str, Path], capsys: pytest.CaptureFixture[str], name: str, limit: SizeLimit, command: Command
) -> None:
    inputs[name] = inputs[name].parent / f"fifo-{inputs[name].name}"
    os.mkfifo(inputs[name])  # no writer: opening it to read would block forever

    line = one_error_line(capsys, command(inputs), name)

    assert line.endswith(f"{inputs[name]}: not a regular file")


@pytest.mark.parametrize(("name", "limit", "command"), KINDS, ids=KIND_IDS)
def test_file_over_its_kinds_cap_is_refused_without_reading_it(
    inputs: dict[str, Path], capsys: pytest.CaptureFixture[str], name: str, limit: SizeLimit, command: Command
) -> None:
    inputs[name] = inputs[name].parent / f"huge-{inputs[name].name}"
    with inputs[name].open("wb") as huge:  # sparse: no disk space, nothing to read but zeros
        huge.truncate(limit.max_bytes + 6 * MiB)

    line = one_error_line(capsys, command(inputs), name)

    size = f"{(limit.max_bytes + 6 * MiB) / MiB:.1f} MiB"
    expected = f"{size} is larger than the {format_limit(limit.max_bytes)} limit for {limit.described}"
    assert line.endswith(f"{inputs[name]}: {expected}")


def test_manifest_error_names_size_and_limit_as_people_read_them(tmp_path: Path) -> None:
    manifest = tmp_path / "prod.json"
    with manifest.open("wb") as huge:
        huge.truncate(70 * MiB)

    with pytest.raises(InputError) as error:
        read_limited(manifest, IN_USE_MANIFEST)

    assert str(error.value) == f"{manifest}: 70.0 MiB is larger than the 64 MiB limit for an in-use manifest"


def test_a_file_at_its_cap_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "exact"
    path.write_bytes(b"x" * 100)

    assert read_limited(path, SizeLimit("test input", 100)) == b"x" * 100


@pytest.mark.skipif(not Path("/proc/self/maps").is_file(), reason="needs Linux /proc")
def test_a_file_larger_than_its_stat_size_is_read_only_up_to_the_cap() -> None:
    # /proc files are regular files whose stat size is 0 whatever they hold: the size check passes and
    # only the bounded read stops them, as it stops a file that grows after it was measured.
    with pytest.raises(InputError) as error:
        read_limited("/proc/self/maps", SizeLimit("test input", 16))

    assert str(error.value) == "/proc/self/maps: larger than the 16 bytes limit for a test input"


def test_a_directory_is_not_a_regular_file(tmp_path: Path) -> None:
    with pytest.raises(InputError) as error:
        read_limited(tmp_path, RULES_FILE)

    assert str(error.value) == f"{tmp_path}: not a regular file"


def test_every_cap_is_generous_for_real_inputs() -> None:
    # The sizes measured for real use (issue 7): a 30,000-pod cluster's manifest is about 7 MB, a
    # 500-repository snapshot about 200 MB, and ECR caps a lifecycle policy at 30,720 characters.
    assert IN_USE_MANIFEST.max_bytes >= 8 * 7_000_000
    assert SNAPSHOT.max_bytes >= 2 * 200_000_000
    assert IMAGES_FILE.max_bytes == SNAPSHOT.max_bytes
    assert LIFECYCLE_POLICY.max_bytes >= 2 * 4 * 30_720  # 4 bytes a character, escaped in get-lifecycle-policy
    assert RULES_FILE.max_bytes >= 1024 * 1024
