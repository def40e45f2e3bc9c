"""`ecr-retention lifecycle-preview` and `doctor` on real describe-images files: output, exit codes 0/1/2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from ecr_retention.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "lifecycle"
NOW = "2026-11-30T06:00:00Z"
INCIDENT = str(EXAMPLES / "policy-incident.json")
FIXED = str(EXAMPLES / "policy-fixed.json")
ARCHIVE = str(EXAMPLES / "policy-archive.json")
IMAGES = str(EXAMPLES / "describe-images.json")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def preview_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, err = run(capsys, "lifecycle-preview", *argv, "--now", NOW, "--format", "json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def test_preview_of_the_seed_002_incident_expires_the_dev_image(capsys: pytest.CaptureFixture[str]) -> None:
    data = preview_json(capsys, "--policy", INCIDENT, "--images", IMAGES)
    assert [(r["imageTags"], r["appliedRulePriority"]) for r in data["previewResults"]] == [
        (["1.12.345"], 1),
        (["dev", "1.12.350-dev"], 1),
        (["1.12.352"], 1),
        ([], 2),
    ]
    assert data["summary"] == {"expiringImageTotalCount": 4}
    assert data["repositoryName"] == "app"
    assert data["status"] == "COMPLETE"


def test_preview_of_the_seed_002_fix_keeps_dev(capsys: pytest.CaptureFixture[str]) -> None:
    data = preview_json(capsys, "--policy", FIXED, "--images", IMAGES)
    assert [(r["imageTags"], r["appliedRulePriority"]) for r in data["previewResults"]] == [
        (["1.12.345"], 3),
        (["1.12.352"], 3),
        ([], 4),
    ]


def test_preview_reads_get_lifecycle_policy_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    wrapped = tmp_path / "get-lifecycle-policy.json"
    wrapped.write_text(
        json.dumps(
            {
                "registryId": "123456789012",
                "repositoryName": "app",
                "lifecyclePolicyText": (EXAMPLES / "policy-incident.json").read_text(),
            }
        )
    )
    direct = preview_json(capsys, "--policy", INCIDENT, "--images", IMAGES)
    assert preview_json(capsys, "--policy", str(wrapped), "--images", IMAGES) == direct


def test_preview_table_is_for_people(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "lifecycle-preview", "--policy", INCIDENT, "--images", IMAGES, "--now", NOW)
    assert code == 0
    lines = out.splitlines()
    assert (
        lines[0] == "lifecycle preview for app at 2026-11-30T06:00:00Z: 4 of 8 images expire, 0 transition to archive"
    )
    assert lines[1].split() == ["RULE", "ACTION", "DIGEST", "STORAGE", "AGE", "TAGS"]
    assert "dev, 1.12.350-dev" in lines[3]


def test_preview_reads_a_snapshot_repository(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    details = json.loads(Path(IMAGES).read_text())["imageDetails"]
    snap = tmp_path / "snapshot.json"
    snap.write_text(
        json.dumps(
            {
                "repositories": [
                    {"repositoryName": "app", "imageDetails": details},
                    {"repositoryName": "other", "imageDetails": []},
                ]
            }
        )
    )
    data = preview_json(capsys, "--policy", INCIDENT, "--images", str(snap), "--repository", "app")
    assert data["summary"] == {"expiringImageTotalCount": 4}
    code, _, err = run(capsys, "lifecycle-preview", "--policy", INCIDENT, "--images", str(snap))
    assert code == 2
    assert err.strip().endswith("a snapshot of 2 repositories; pick one with --repository")


def test_preview_warns_about_indexes_without_manifest(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    images = tmp_path / "images.json"
    images.write_text(
        json.dumps(
            {
                "imageDetails": [
                    {
                        "imageDigest": "sha256:" + "a" * 64,
                        "imageTags": ["v1.0"],
                        "imagePushedAt": 1764000000,
                        "imageManifestMediaType": "application/vnd.oci.image.index.v1+json",
                    }
                ]
            }
        )
    )
    code, _, err = run(capsys, "lifecycle-preview", "--policy", INCIDENT, "--images", str(images), "--now", NOW)
    assert code == 0
    assert err.startswith("warning: 1 image indexes have no manifest")


def write(tmp_path: Path, name: str, content: Any) -> str:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content, indent=2))
    return str(path)


BAD_RULE = {
    "rules": [
        {
            "rulePriority": 1,
            "selection": {
                "tagStatus": "tagged",
                "tagPatternList": ["v*"],
                "countType": "imageCountMoreThan",
                "countNumber": 3,
            },
            "action": {"type": "expire"},
        },
        {
            "rulePriority": 2,
            "selection": {"tagStatus": "untagged", "countType": "sinceImagePushed", "countNumber": 1},
            "action": {"type": "expire"},
        },
    ]
}


@pytest.mark.parametrize(
    ("policy", "images", "now", "expected"),
    [
        (
            BAD_RULE,
            None,
            NOW,
            "policy.json: rule 2 (rules[1]): selection: countUnit (days) is required with countType sinceImagePushed",
        ),
        ("{not json", None, NOW, "policy.json: invalid JSON (line 1, column 2)"),
        (None, {"images": []}, NOW, "images.json: expected `aws ecr describe-images` output"),
        (
            None,
            {"imageDetails": [{"imageDigest": "sha256:" + "a" * 64}]},
            NOW,
            "images.json: imageDetails[0].imagePushedAt",
        ),
        (None, None, "yesterday", "--now: invalid timestamp 'yesterday'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    policy: Any,
    images: Any,
    now: str,
    expected: str,
) -> None:
    policy_path = write(tmp_path, "policy.json", policy) if policy is not None else INCIDENT
    images_path = write(tmp_path, "images.json", images) if images is not None else IMAGES
    for command in ("lifecycle-preview", "doctor"):
        code, out, err = run(capsys, command, "--policy", policy_path, "--images", images_path, "--now", now)
        assert code == 2
        assert out == ""
        assert len(err.strip().splitlines()) == 1
        assert expected in err, err
        assert err.startswith(f"ecr-retention {command}: error: ")


def test_missing_file_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "lifecycle-preview", "--policy", "nope.json", "--images", IMAGES)
    assert code == 2
    assert "nope.json: no such file" in err


def test_doctor_exits_1_on_the_seed_002_incident(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "doctor",
        "--policy",
        INCIDENT,
        "--images",
        IMAGES,
        "--manifests",
        str(EXAMPLES / "in-use"),
        "--now",
        NOW,
        "--format",
        "json",
    )
    assert code == 1
    data = json.loads(out)
    codes = [(f["severity"], f["code"]) for f in data["findings"]]
    assert ("error", "expires-in-use") in codes
    assert ("error", "mutable-tag-expires") in codes
    [in_use] = [f for f in data["findings"] if f["code"] == "expires-in-use"]
    assert in_use["inUseBy"] == [{"cluster": "dev", "namespace": "dev", "workload": "Deployment/app", "source": "pod"}]


def test_doctor_exits_0_on_the_seed_002_fix_and_prints_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "doctor", "--policy", FIXED, "--images", IMAGES, "--manifests", str(EXAMPLES / "in-use"), "--now", NOW
    )
    assert code == 0
    assert out.startswith("lifecycle doctor for app: 0 errors, 1 warnings, 0 notes")
    assert "WARNING  count-reduced: rule 3" in out
    assert '"countNumber": 4' in out


def test_doctor_reports_an_archive_rule_that_takes_an_image_prod_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/lifecycle/policy-archive.json archives version images not pulled for a day; prod's old
    ReplicaSet still names 1.12.359, last pulled 1.8 days ago."""
    argv = ["doctor", "--policy", ARCHIVE, "--images", IMAGES, "--manifests", str(EXAMPLES / "in-use"), "--now", NOW]
    code, out, _ = run(capsys, *argv)
    assert code == 1
    assert out.startswith("lifecycle doctor for app: 1 errors, 2 warnings, 0 notes")
    assert (
        "ERROR  archives-in-use: rule 1 would archive sha256:c38b94aae2cf [1.12.359], which runs in cluster prod, "
        "namespace prod, Deployment/app (replicaset): an archived image cannot be pulled: its next pull (a restart, "
        "a rescheduled pod, a scale-out) fails until it is restored (ImagePullBackOff), and restores take up to 20 "
        "minutes. rule 1 counts days since the last recorded pull (sinceImagePulled, more than 1 day), and the "
        "image was last pulled 1.8 days ago" in out
    )
    assert "  in the fixed policy: a keep-1 rule ahead of every rule for tag 1.12.359" in out

    code, out, _ = run(capsys, *argv, "--format", "json")
    assert code == 1
    [finding] = [f for f in json.loads(out)["findings"] if f["code"] == "archives-in-use"]
    assert finding["severity"] == "error"
    assert finding["inUseBy"] == [
        {"cluster": "prod", "namespace": "prod", "workload": "Deployment/app", "source": "replicaset"}
    ]
    assert finding["policyEdit"] == {"kind": "keep-tags", "tags": ["1.12.359"]}


def test_doctor_warns_that_an_unreadable_manifest_is_not_checked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    manifests = tmp_path / "in-use"
    shutil.copytree(EXAMPLES / "in-use", manifests)
    (manifests / "lab.json").write_text('{"schemaVersion": 1, "cluster": "lab"}')
    code, _, err = run(capsys, "doctor", "--policy", INCIDENT, "--images", IMAGES, "--manifests", str(manifests))
    assert code == 1  # the readable manifests still find the incident
    assert (
        f"warning: {manifests / 'lab.json'}: unreadable in-use manifest: generatedAt: required but missing "
        "(and 2 more problems); the in-use check cannot see its images"
    ) in err


RULES = """
version: 1
safety: {clusters: [prod, dev]}
policies:
  - repositories: [app]
    rules:
      - keep: {tags: [latest, dev]}
      - delete: {tags: ["*.*"], older_than: 30d}
"""


def test_doctor_compares_count_rules_with_the_plan(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rules = write(tmp_path, "retention.yaml", RULES)
    code, out, _ = run(
        capsys,
        "doctor",
        "--policy",
        INCIDENT,
        "--images",
        IMAGES,
        "--config",
        rules,
        "--now",
        NOW,
        "--format",
        "json",
    )
    assert code == 1
    codes = {f["code"] for f in json.loads(out)["findings"]}
    assert {"expires-kept-image", "differs-from-plan"} <= codes


def test_doctor_prints_one_fixed_policy_for_the_repository(capsys: pytest.CaptureFixture[str]) -> None:
    """Three findings, three edits, one policy with all of them: not a whole policy per finding."""
    argv = ["doctor", "--policy", INCIDENT, "--images", IMAGES, "--manifests", str(EXAMPLES / "in-use"), "--now", NOW]

    code, out, _ = run(capsys, *argv)

    assert code == 1
    assert out.count('"rules": [') == 1
    assert out.count("  in the fixed policy: ") == 3
    assert "fixed policy for app: every fix above applied together, and checked again" in out
    code, out, _ = run(capsys, *argv, "--format", "json")
    data = json.loads(out)
    assert [r["selection"].get("tagPatternList") for r in data["fixedPolicy"]["rules"]] == [
        ["dev"],
        ["latest"],
        ["*.*"],
        None,
    ]
    assert all("fixPolicy" not in finding for finding in data["findings"])


def test_doctor_says_when_the_in_use_check_was_skipped(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "doctor", "--policy", INCIDENT, "--images", IMAGES, "--now", NOW)

    assert code == 1
    assert out.splitlines()[1] == (
        "note: in-use check skipped: no in-use manifest was given, so the doctor cannot tell whether the policy "
        "would remove an image that runs in a cluster (pass --manifests DIR)"
    )
    code, out, _ = run(capsys, "doctor", "--policy", INCIDENT, "--images", IMAGES, "--now", NOW, "--format", "json")
    data = json.loads(out)
    assert data["inUseChecked"] is False
    assert data["notes"][0].startswith("in-use check skipped")
    _, out, _ = run(
        capsys,
        "doctor",
        "--policy",
        INCIDENT,
        "--images",
        IMAGES,
        "--manifests",
        str(EXAMPLES / "in-use"),
        "--now",
        NOW,
    )
    assert "in-use check skipped" not in out
