"""Issue 43's smaller defects, one probe each: the doctor's one severity for one mistake and its CI gate, lifecycle-diff
without manifests, AWS_REGION, Regions unknown to botocore, a digest listed twice by DescribeImages."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from ecr_retention.cli import main
from ecr_retention.domain.config import parse_config
from ecr_retention.domain.doctor.diagnosis import diagnose
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.lifecycle.parsing import parse_policy
from ecr_retention.domain.registry.images import ImageDetail
from ecr_retention.domain.registry.regions import KnownRegions
from ecr_retention.domain.registry.replication import RegistryReplication
from ecr_retention.ports import ImagesUnreadable
from ecr_retention.services.evaluate import RunInputs, evaluate_repository
from ecr_retention.services.snapshot import MemoryManifestCache, snapshot_repository
from support.builders import NOW, image
from support.fakes import FakeRegistry

LIFECYCLE = Path(__file__).resolve().parents[2] / "examples" / "lifecycle"
NOW_TEXT = "2026-11-30T06:00:00Z"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --- the doctor: the same severity for the same mistake, and a gate on warnings -------------------------------------

AND_POLICY = parse_policy(
    json.dumps(
        {
            "rules": [
                {
                    "rulePriority": 1,
                    "selection": {
                        "tagStatus": "tagged",
                        "tagPatternList": ["alpha*", "beta*"],
                        "countType": "imageCountMoreThan",
                        "countNumber": 3,
                    },
                    "action": {"type": "expire"},
                },
                {
                    "rulePriority": 2,
                    "selection": {"tagStatus": "any", "countType": "imageCountMoreThan", "countNumber": 1},
                    "action": {"type": "expire"},
                },
            ]
        },
        indent=2,
    )
)


def details(*images: dict[str, Any]) -> list[ImageDetail]:
    return [ImageDetail.model_validate({**i, "repositoryName": "app"}) for i in images]


def and_list_severity(images: list[ImageDetail]) -> str:
    [finding] = [
        f for f in diagnose(AND_POLICY, images, now=NOW, repository_name="app").findings if f.code == "tag-list-is-and"
    ]
    return finding.severity


def test_the_doctor_gives_tag_list_is_and_one_severity_whether_or_not_an_image_carries_every_entry() -> None:
    """The same list, the same images lost below it: once with no image tagged both ways, once with one that CI
    happened to tag both ways. Before issue 43 the first was an error and the second a warning (exit 0 in CI)."""
    day = timedelta(days=1)
    none_carries_both = details(
        image("a1", "alpha-1", age=day), image("b1", "beta-1", age=2 * day), image("a2", "alpha-2", age=3 * day)
    )
    one_carries_both = details(
        image("ab", "alpha-0", "beta-0", age=day / 2),
        image("a1", "alpha-1", age=day),
        image("b1", "beta-1", age=2 * day),
        image("a2", "alpha-2", age=3 * day),
    )

    assert and_list_severity(none_carries_both) == and_list_severity(one_carries_both) == "error"


def doctor_fixed_policy(*more: str) -> list[str]:
    """The example's fixed policy: no error, one warning (count-reduced)."""
    return [
        "doctor",
        "--policy",
        str(LIFECYCLE / "policy-fixed.json"),
        "--images",
        str(LIFECYCLE / "describe-images.json"),
        "--manifests",
        str(LIFECYCLE / "in-use"),
        "--now",
        NOW_TEXT,
        *more,
    ]


def test_doctor_fail_on_warning_fails_a_ci_gate_on_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, *doctor_fixed_policy())
    assert code == 0
    assert "0 errors, 1 warnings" in out.splitlines()[0]

    assert run(capsys, *doctor_fixed_policy("--fail-on", "warning"))[0] == 1
    assert run(capsys, *doctor_fixed_policy("--fail-on", "info"))[0] == 1
    assert run(capsys, *doctor_fixed_policy("--fail-on", "error"))[0] == 0


def test_doctor_fail_on_warning_gates_templates_too(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "templates.json"
    template = {
        "prefix": "ROOT",
        "appliedFor": ["CREATE_ON_PUSH"],
        "lifecyclePolicy": (LIFECYCLE / "policy-incident.json").read_text(),
    }
    path.write_text(json.dumps({"registryId": "123456789012", "repositoryCreationTemplates": [template]}))

    assert run(capsys, "doctor", "--templates", str(path))[0] == 0
    assert run(capsys, "doctor", "--templates", str(path), "--fail-on", "warning")[0] == 1


def test_doctor_fail_on_an_unknown_severity_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(doctor_fixed_policy("--fail-on", "warnings"))
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert len(err.splitlines()) == 1
    assert "--fail-on" in err
    assert "Traceback" not in err


def test_doctor_warns_of_an_in_use_image_on_a_host_that_looks_like_ecr(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    manifest = json.loads((LIFECYCLE / "in-use" / "dev.json").read_text())
    lookalike = "123456789012.dkr-ecr.eu-west-1.on.aws.mirror.example/app:dev"
    manifest["images"].append({**manifest["images"][0], "image": lookalike, "digest": None})
    (tmp_path / "dev.json").write_text(json.dumps(manifest))
    args = doctor_fixed_policy()
    args[args.index("--manifests") + 1] = str(tmp_path)

    _, _, err = run(capsys, *args)

    assert f"in-use image {lookalike!r} names host 123456789012.dkr-ecr.eu-west-1.on.aws.mirror.example" in err
    assert "looks like ECR" in err


# --- lifecycle-diff without manifests: the in-use effect is unknown, in every format ---------------------------------


def lifecycle_diff(*more: str) -> list[str]:
    return [
        "lifecycle-diff",
        "--base",
        str(LIFECYCLE / "policy-fixed.json"),
        "--policy",
        str(LIFECYCLE / "policy-incident.json"),
        "--images",
        str(LIFECYCLE / "describe-images.json"),
        "--now",
        NOW_TEXT,
        *more,
    ]


UNKNOWN = "whether any of them runs is unknown: no in-use manifest was read (pass --manifests DIR, or --bucket)"


def test_lifecycle_diff_without_manifests_says_the_in_use_effect_is_unknown_and_fails_in_a_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, *lifecycle_diff())

    assert code == 1
    assert out.splitlines()[0] == f"this policy change expires 1 more image; {UNKNOWN}"
    assert "no running image" not in out


def test_lifecycle_diff_without_manifests_says_so_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, *lifecycle_diff("--format", "json"))

    assert code == 1
    assert json.loads(out)["inUseUnknown"] == "no in-use manifest was read (pass --manifests DIR, or --bucket)"


def test_lifecycle_diff_without_manifests_says_so_in_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, *lifecycle_diff("--format", "markdown"))

    assert code == 1
    assert f"**this policy change expires 1 more image; {UNKNOWN}**" in out
    assert "- :x: **fails**: the change expires or archives 1 image, and whether a workload runs any of them is " in out
    assert "no running image" not in out


def test_lifecycle_diff_with_manifests_knows_and_says_nothing_is_unknown(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, *lifecycle_diff("--manifests", str(LIFECYCLE / "in-use"), "--format", "json"))

    assert code == 1  # it expires the image dev runs
    assert json.loads(out)["inUseUnknown"] is None


def test_lifecycle_diff_with_an_unreadable_manifest_says_which(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "prod.json").write_text("{not json")

    code, out, _ = run(capsys, *lifecycle_diff("--manifests", str(tmp_path)))

    assert code == 1
    assert "whether any of them runs is unknown: in-use manifest " in out.splitlines()[0]
    assert "prod.json could not be read" in out.splitlines()[0]


def test_lifecycle_diff_that_removes_nothing_more_needs_no_manifest(capsys: pytest.CaptureFixture[str]) -> None:
    """The fix spares an image and newly removes none: nothing can break, known without any manifest."""
    args = lifecycle_diff()
    args[2], args[4] = args[4], args[2]

    code, out, _ = run(capsys, *args)

    assert code == 0
    assert out.splitlines()[0].endswith("; no running image is newly expired or archived")


# --- AWS_REGION, wherever a Region is read from the environment --------------------------------------------------------


def only_aws_region(monkeypatch: pytest.MonkeyPatch, region: str) -> None:
    """The AWS CLI v2's and Lambda's variable alone: boto3 reads AWS_DEFAULT_REGION and profiles only."""
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_REGION", region)


def test_a_client_without_a_region_is_in_aws_region_when_it_is_the_only_one_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """export-aws writes to the bucket and assumes spoke roles through clients created without a Region: before
    issue 43 they ignored AWS_REGION (S3 in us-east-1, STS without a Region)."""
    from ecr_retention.aws.clients import ClientFactory

    only_aws_region(monkeypatch, "ap-southeast-2")
    factory = ClientFactory()

    assert factory.client("s3").meta.region_name == "ap-southeast-2"
    assert factory.client("sts").meta.region_name == "ap-southeast-2"
    assert factory.client("ecr", "eu-west-1").meta.region_name == "eu-west-1"  # a Region given is the Region used


def test_aws_region_wins_over_aws_default_region_for_clients_too(monkeypatch: pytest.MonkeyPatch) -> None:
    from ecr_retention.aws.clients import ClientFactory

    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-central-1")
    monkeypatch.setenv("AWS_REGION", "ap-southeast-2")

    assert ClientFactory().client("s3").meta.region_name == "ap-southeast-2"


def test_the_in_cluster_exporter_writes_in_aws_region(monkeypatch: pytest.MonkeyPatch) -> None:
    """deploy/cronjob.yaml sets AWS_REGION only."""
    from ecr_retention.exporter.storage import new_s3_client

    only_aws_region(monkeypatch, "ap-southeast-2")

    assert new_s3_client().meta.region_name == "ap-southeast-2"


# --- a Region unknown to botocore's partition data: one line, exit 2 ------------------------------------------------

MARS = "mars-north-1"
UNKNOWN_REGION = f"'{MARS}' is not an AWS Region: botocore "


def rules_with_policy_regions(tmp_path: Path, regions: str) -> str:
    path = tmp_path / "retention.yaml"
    path.write_text(
        "version: 1\n"
        "safety: {clusters: []}\n"
        "policies:\n"
        f"  - repositories: [app]\n    regions: {regions}\n"
        "    rules:\n      - delete: {untagged: true, older_than: 1d}\n"
    )
    return str(path)


def test_a_policy_region_unknown_to_botocore_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, "validate", rules_with_policy_regions(tmp_path, f"[eu-west-1, {MARS}]"))

    assert code == 2
    assert err.count("\n") == 1
    assert f"retention.yaml: policies[0].regions: {UNKNOWN_REGION}" in err
    assert "needs a newer botocore" in err  # a brand-new Region may be missing from an old botocore


@pytest.mark.parametrize("region", ["eu-west-1", "us-gov-west-1", "cn-north-1", "eusc-de-east-1", "us-isof-south-1"])
def test_every_partitions_regions_still_validate(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, region: str
) -> None:
    assert run(capsys, "validate", rules_with_policy_regions(tmp_path, f"[{region}]"))[0] == 0


@pytest.mark.parametrize(
    "argv",
    [
        ["snapshot", "--out", "snapshot.json", "--region", MARS],
        ["run", "--config", "retention.yaml", "--bucket", "my-bucket", "--region", MARS],
        ["export-aws", "--out", "aws.json", "--regions", "eu-west-1", MARS],
        ["plan", "--config", "retention.yaml", "--bucket", "my-bucket", "--region", MARS],
        [
            "lifecycle-diff",
            "--base",
            "p.json",
            "--policy",
            "p.json",
            "--bucket",
            "b-1",
            "--repository",
            "app",
            "--region",
            MARS,
        ],
    ],
)
def test_a_region_option_unknown_to_botocore_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.json").write_text((LIFECYCLE / "policy-fixed.json").read_text())
    (tmp_path / "retention.yaml").write_text(
        "version: 1\nsafety: {clusters: []}\npolicies: [{repositories: [app], rules: [{delete: {untagged: true}}]}]\n"
    )

    code, out, err = run(capsys, *argv)

    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert UNKNOWN_REGION in err


def test_the_deployment_context_refuses_a_region_unknown_to_botocore() -> None:
    from ecr_retention.cdk.deploy_settings import DeploySettings

    def refusal(**context: Any) -> str:
        with pytest.raises(InputError) as raised:
            DeploySettings.from_context(lambda key: context.get(key))
        return str(raised.value)

    assert refusal(regions=["eu-west-1", MARS]).startswith(f"cdk context: regions[1]: {UNKNOWN_REGION}")
    assert refusal(collectRegions=[MARS]).startswith(f"cdk context: collectRegions[0]: {UNKNOWN_REGION}")
    assert "\n" not in refusal(regions=[MARS])
    assert DeploySettings.from_context(lambda key: {"regions": ["eu-west-1", "eusc-de-east-1"]}.get(key)).regions == (
        "eu-west-1",
        "eusc-de-east-1",
    )


def test_the_known_regions_are_every_partitions_and_the_domain_is_told_them() -> None:
    from ecr_retention.aws.regions import botocore_regions

    known = botocore_regions()

    assert {
        "eu-west-1",
        "cn-north-1",
        "us-gov-east-1",
        "us-iso-east-1",
        "eu-isoe-west-1",
        "eusc-de-east-1",
    } <= known.names
    assert "aws-global" not in known.names
    assert known.problem("eu-west-1") is None
    assert KnownRegions(frozenset({"eu-west-1"}), "botocore 0.0.1").problem("eu-west-9") == (
        "'eu-west-9' is not an AWS Region: botocore 0.0.1's partition data lists no such Region (a Region newer than "
        "botocore 0.0.1 needs a newer botocore: pip install -U botocore)"
    )


# --- a DescribeImages answer listing one digest twice: one line, the repository failed, nothing deleted --------------


class RepeatingRegistry(FakeRegistry):
    """A registry whose DescribeImages answer lists its first image twice (a paginator repeating a page)."""

    def describe_images(self, repository: str) -> list[ImageDetail]:
        images = super().describe_images(repository)
        return [*images, images[0]]


def duplicated_registry() -> tuple[RepeatingRegistry, str]:
    registry = RepeatingRegistry(registry_id="123456789012", region="eu-west-1")
    old = NOW - timedelta(days=90)
    first = registry.add_image("app", tags=["v1"], pushed_at=old, seed="v1")
    registry.add_image("app", tags=["v2"], pushed_at=old, seed="v2")
    registry.add_image("app", pushed_at=old, seed="untagged")
    return registry, first


def test_a_digest_listed_twice_fails_the_repository_in_one_line_and_deletes_nothing() -> None:
    registry, first = duplicated_registry()
    config = parse_config(
        "version: 1\ndry_run: false\nsafety: {clusters: [], max_delete_fraction: 1.0}\n"
        "policies:\n  - repositories: [app]\n    rules:\n      - delete: {older_than: 1d}\n"
    )
    inputs = RunInputs(
        run_id="r", config=config, inventory=Inventory(), dry_run=False, replication=RegistryReplication()
    )

    report = evaluate_repository("app", inputs, registry=registry, cache=MemoryManifestCache(), clock=lambda: NOW)

    assert report.outcome == "failed"
    assert report.error == (
        f"ImagesUnreadable: repository app: DescribeImages listed image {first} twice; an answer that lists an image "
        "twice is not read, so nothing is planned or deleted in this repository"
    )
    assert registry.mutating_calls == []


def test_snapshot_repository_names_the_repository_and_the_digest_in_one_line() -> None:
    registry, first = duplicated_registry()

    with pytest.raises(ImagesUnreadable) as raised:
        snapshot_repository(registry, "app", MemoryManifestCache())

    assert "\n" not in str(raised.value)
    assert str(raised.value).startswith(f"repository app: DescribeImages listed image {first} twice")


def test_lifecycle_diff_warns_of_an_in_use_image_on_a_host_that_looks_like_ecr(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    manifest = json.loads((LIFECYCLE / "in-use" / "dev.json").read_text())
    lookalike = "123456789012.dkr.ecr.eu-west-1.amazonaws.com.mirror.example/app:dev"
    manifest["images"].append({**manifest["images"][0], "image": lookalike, "digest": None})
    (tmp_path / "dev.json").write_text(json.dumps(manifest))

    _, _, err = run(capsys, *lifecycle_diff("--manifests", str(tmp_path)))

    assert f"warning: cluster dev: in-use image {lookalike!r} names host" in err
