"""`ecr-retention run`, `tag` and `snapshot` as an operator meets them, on faithful moto: bad input is one line
and exit 2 before any AWS call, an AWS failure is one line and exit 1 without a traceback, a snapshot file plans
exactly as the services' own snapshot does, and progress goes to stderr, never into the output."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ecr_retention.aws.ecr_registry import EcrRegistry
from ecr_retention.domain.registry.images import Snapshot
from ecr_retention.services.snapshot import MemoryManifestCache, snapshot_registry
from support.api_calls import ApiCallRecorder
from support.pipeline_harness import NOW, CliResult, Pipeline, run_cli, write_rules
from support.realistic_registry import ACCOUNT, BUCKET, REGION, in_use_manifests

TOPIC = f"arn:aws:sns:{REGION}:{ACCOUNT}:ecr-retention-reports"


def one_line(text: str) -> str:
    lines = text.splitlines()
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


BAD_INPUT: dict[str, tuple[list[str], str]] = {
    # case: (arguments, the line on stderr); {rules} is a valid rules file, {tmp} a directory
    "run: rules file missing": (
        ["run", "--config", "{tmp}/retention.yml", "--bucket", BUCKET],
        "ecr-retention run: error: {tmp}/retention.yml: no such file",
    ),
    "run: bucket name invalid": (
        ["run", "--config", "{rules}", "--bucket", "Inventory_Bucket"],
        "ecr-retention run: error: --bucket: 'Inventory_Bucket' is not an S3 bucket name",
    ),
    "run: topic ARN invalid": (
        ["run", "--config", "{rules}", "--bucket", BUCKET, "--topic-arn", "arn:aws:sns:eu-west-1:1234:reports"],
        "ecr-retention run: error: --topic-arn: 'arn:aws:sns:eu-west-1:1234:reports' is not an SNS topic ARN",
    ),
    "run: sentinel role not a role ARN": (
        ["run", "--config", "{rules}", "--bucket", BUCKET, "--sentinel-role", "ecr-retention-Sentinel"],
        "ecr-retention run: error: --sentinel-role: 'ecr-retention-Sentinel' is not an IAM role ARN "
        "(arn:aws:iam::123456789012:role/...)",
    ),
    "run: a bucket given as a URL": (
        ["run", "--config", "{rules}", "--bucket", f"s3://{BUCKET}", "--topic-arn", TOPIC],
        f"ecr-retention run: error: --bucket: 's3://{BUCKET}' is not an S3 bucket name",
    ),
    "run: --format html without --out": (
        ["run", "--config", "{rules}", "--bucket", BUCKET, "--format", "html"],
        "ecr-retention run: error: --format html needs --out FILE",
    ),
    "run: --out with --format json": (
        ["run", "--config", "{rules}", "--bucket", BUCKET, "--format", "json", "--out", "{tmp}/run.json"],
        "ecr-retention run: error: --out is for --format html or csv; --format json prints to standard output",
    ),
    "run: --out in a missing directory": (
        ["run", "--config", "{rules}", "--bucket", BUCKET, "--format", "csv", "--out", "{tmp}/no/run.csv"],
        "ecr-retention run: error: --out: directory {tmp}/no does not exist",
    ),
    "tag: rules file missing": (
        ["tag", "--config", "{tmp}/retention.yml", "--bucket", BUCKET],
        "ecr-retention tag: error: {tmp}/retention.yml: no such file",
    ),
    "tag: bucket name invalid": (
        ["tag", "--config", "{rules}", "--bucket", "ab"],
        "ecr-retention tag: error: --bucket: 'ab' is not an S3 bucket name",
    ),
    "run: --region not a Region's name": (
        ["run", "--config", "{rules}", "--bucket", BUCKET, "--region", "EU-WEST-1"],
        "ecr-retention run: error: --region: 'EU-WEST-1' is not an AWS Region (such as us-east-1)",
    ),
    "run: --region empty": (
        ["run", "--config", "{rules}", "--bucket", BUCKET, "--region", REGION, "--region", ""],
        "ecr-retention run: error: --region: '' is not an AWS Region (such as us-east-1)",
    ),
    "snapshot: --region not a Region's name": (
        ["snapshot", "--out", "{tmp}/registry.json", "--region", "Europe"],
        "ecr-retention snapshot: error: --region: 'Europe' is not an AWS Region (such as us-east-1)",
    ),
    "snapshot: --region empty": (
        ["snapshot", "--out", "{tmp}/registry.json", "--region", ""],
        "ecr-retention snapshot: error: --region: '' is not an AWS Region (such as us-east-1)",
    ),
    "snapshot: output directory missing": (
        ["snapshot", "--out", "{tmp}/snapshots/registry.json"],
        "ecr-retention snapshot: error: --out: directory {tmp}/snapshots does not exist",
    ),
    "snapshot: output is a directory": (
        ["snapshot", "--out", "{tmp}"],
        "ecr-retention snapshot: error: --out: {tmp} is a directory, expected a file",
    ),
}
NO_REGION = "error: no AWS region: set AWS_REGION (or AWS_DEFAULT_REGION, or a profile's region)"


@pytest.mark.parametrize("case", sorted(BAD_INPUT))
def test_bad_input_is_one_line_and_exit_2_before_any_aws_call(
    case: str, empty_account: ApiCallRecorder, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arguments, expected = BAD_INPUT[case]
    rules = write_rules(tmp_path, dry_run=False)

    def fill(text: str) -> str:
        return text.format(rules=rules, tmp=tmp_path)

    result = run_cli(empty_account, capsys, *map(fill, arguments))

    assert result.code == 2
    assert one_line(result.stderr) == fill(expected)
    assert result.stdout == ""
    assert empty_account.calls == []


@pytest.mark.parametrize("command", ["run", "tag", "snapshot"])
def test_no_region_is_one_line_and_exit_2_before_any_aws_call(
    command: str,
    empty_account: ApiCallRecorder,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    arguments = {
        "run": ["--config", str(write_rules(tmp_path, dry_run=False)), "--bucket", BUCKET, "--topic-arn", TOPIC],
        "tag": ["--config", str(write_rules(tmp_path, dry_run=False)), "--bucket", BUCKET],
        "snapshot": ["--out", str(tmp_path / "registry.json")],
    }[command]

    result = run_cli(empty_account, capsys, command, *arguments)

    assert result.code == 2
    assert one_line(result.stderr) == f"ecr-retention {command}: {NO_REGION}"
    assert empty_account.calls == []
    assert not (tmp_path / "registry.json").exists()


@pytest.mark.parametrize("command", ["run", "snapshot"])
def test_a_region_of_a_regions_shape_that_aws_has_not_is_refused_before_any_aws_call(
    command: str, empty_account: ApiCallRecorder, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # us-east-3 passes the pattern (issue 44: a mistyped --region): botocore's partition data has no such Region.
    arguments = {
        "run": ["--config", str(write_rules(tmp_path, dry_run=False)), "--bucket", BUCKET],
        "snapshot": ["--out", str(tmp_path / "registry.json")],
    }[command]

    result = run_cli(empty_account, capsys, command, *arguments, "--region", "us-east-3")

    assert result.code == 2
    assert one_line(result.stderr).startswith(
        f"ecr-retention {command}: error: --region: 'us-east-3' is not an AWS Region: botocore "
    )
    assert result.stdout == ""
    assert empty_account.calls == []
    assert not (tmp_path / "registry.json").exists()


def test_run_refuses_a_policy_naming_a_region_it_does_not_prune_before_it_reads_a_registry(
    empty_account: ApiCallRecorder, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = tmp_path / "retention.yaml"
    rules.write_text(
        "version: 1\nsafety: {clusters: []}\n"
        "policies: [{repositories: [app], regions: [ap-southeast-2], rules: [{delete: {untagged: true}}]}]\n"
    )

    result = run_cli(empty_account, capsys, "run", "--config", str(rules), "--bucket", BUCKET, "--region", "us-east-1")

    assert result.code == 2
    assert one_line(result.stderr) == (
        f"ecr-retention run: error: {rules}: policies[0].regions: ap-southeast-2 is not a Region this deployment "
        f"prunes (regions: {REGION}, us-east-1)"
    )
    assert {call.service for call in empty_account.calls} <= {"sts"}  # who the account is; no registry, no bucket


def deny(operation: str) -> Callable[[Pipeline], None]:
    def inject(pipeline: Pipeline) -> None:
        pipeline.fidelity.fail(
            operation,
            "AccessDeniedException",
            message=f"User: arn:aws:sts::{ACCOUNT}:assumed-role/ci/runner is not authorized to perform: "
            f"ecr:{operation} because no identity-based policy allows the ecr:{operation} action",
        )

    return inject


AWS_FAILURES: dict[str, tuple[list[str], Callable[[Pipeline], None], str]] = {
    # case: (arguments, fault, the line on stderr starts with)
    "run: the bucket does not exist": (
        ["run", "--config", "{rules}", "--bucket", "no-such-inventory"],
        lambda pipeline: None,
        "ecr-retention run: AWS error: s3://no-such-inventory/in-use/: ListObjectsV2 failed: NoSuchBucket: ",
    ),
    "run: access denied listing repositories": (
        ["run", "--config", "{rules}", "--bucket", BUCKET],
        deny("DescribeRepositories"),
        "ecr-retention run: AWS error: DescribeRepositories failed: AccessDeniedException: User: ",
    ),
    "run: the topic does not exist": (
        ["run", "--config", "{rules}", "--bucket", BUCKET, "--topic-arn", f"{TOPIC}-gone"],
        lambda pipeline: None,
        f"ecr-retention run: AWS error: {TOPIC}-gone: Publish failed: NotFound: ",
    ),
    "tag: the bucket does not exist": (
        ["tag", "--config", "{rules}", "--bucket", "no-such-inventory"],
        lambda pipeline: None,
        "ecr-retention tag: AWS error: s3://no-such-inventory/in-use/: ListObjectsV2 failed: NoSuchBucket: ",
    ),
    "snapshot: access denied describing the registry": (
        ["snapshot", "--out", "{tmp}/registry.json"],
        deny("DescribeRegistry"),
        "ecr-retention snapshot: AWS error: DescribeRegistry failed: AccessDeniedException: User: ",
    ),
    "snapshot: access denied describing images": (
        ["snapshot", "--out", "{tmp}/registry.json"],
        deny("DescribeImages"),
        "ecr-retention snapshot: AWS error: DescribeImages failed: AccessDeniedException: User: ",
    ),
}


@pytest.mark.parametrize("case", sorted(AWS_FAILURES))
def test_an_aws_failure_is_one_line_and_exit_1_without_a_traceback(
    case: str, pipeline: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arguments, inject, expected = AWS_FAILURES[case]
    rules = write_rules(tmp_path, dry_run=True)
    inject(pipeline)

    result: CliResult = run_cli(pipeline.recorder, capsys, *(a.format(rules=rules, tmp=tmp_path) for a in arguments))

    assert result.code == 1
    assert one_line(result.stderr).startswith(expected)
    assert result.stdout == ""
    assert not (tmp_path / "registry.json").exists()


def plan_offline(
    recorder: ApiCallRecorder, capsys: pytest.CaptureFixture[str], rules: Path, snapshot: Path, manifests: Path
) -> CliResult:
    """`ecr-retention plan --format json` on a snapshot and a directory of manifests, as of the harness's NOW."""
    return run_cli(
        recorder,
        capsys,
        "plan",
        "--config",
        str(rules),
        "--snapshot",
        str(snapshot),
        "--manifests",
        str(manifests),
        "--now",
        NOW.isoformat(),
        "--format",
        "json",
    )


def test_a_snapshot_file_plans_exactly_as_the_services_snapshot_and_progress_goes_to_stderr(
    pipeline: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for number in range(1, 21):  # enough repositories for progress lines
        pipeline.ecr.create_repository(repositoryName=f"team-web/service-{number:02d}")
    rules = write_rules(tmp_path, dry_run=False)
    manifests = tmp_path / "in-use"
    manifests.mkdir()
    for key, body in in_use_manifests(pipeline.seeded).items():
        (manifests / key.removeprefix("in-use/")).write_bytes(body)
    out = tmp_path / "registry.json"
    replication = {
        "rules": [
            {
                "destinations": [{"region": "us-east-1", "registryId": ACCOUNT}],
                "repositoryFilters": [{"filter": "team-web/", "filterType": "PREFIX_MATCH"}],
                "deleteReplication": {"enabled": True},
            }
        ]
    }
    pipeline.ecr.put_replication_configuration(replicationConfiguration=replication)

    snapshot = run_cli(pipeline.recorder, capsys, "snapshot", "--out", str(out))
    planned = plan_offline(pipeline.recorder, capsys, rules, out, manifests)

    assert snapshot.code == 0
    assert snapshot.stdout == ""
    progress = snapshot.stderr.splitlines()
    assert progress == [
        "snapshot: 10/29 repositories (team-web/service-01)",
        "snapshot: 20/29 repositories (team-web/service-11)",
        "snapshot: 29/29 repositories (team-web/service-20)",
        f"snapshot: 29 repositories, 1129 images -> {out}",
    ]
    services = snapshot_registry(EcrRegistry(pipeline.ecr, ACCOUNT, REGION), MemoryManifestCache())
    assert Snapshot.model_validate_json(out.read_text()) == services
    assert json.loads(out.read_text())["replication"] == replication
    assert planned.code == 0
    assert json.loads(planned.stdout) == json.loads(
        json.dumps(pipeline.plan(pipeline.config(dry_run=False), services).to_json_dict())
    )
    assert pipeline.recorder.mutating() == []


def test_run_prints_its_table_and_summary_on_stdout_and_nothing_on_stderr(
    pipeline: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_cli(
        pipeline.recorder,
        capsys,
        "run",
        "--config",
        str(write_rules(tmp_path, dry_run=True)),
        "--bucket",
        BUCKET,
    )

    assert result.code == 0
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["REPOSITORY", "DIGEST", "TAGS", "AGE", "SIZE", "RESULT", "REASON"]
    v107 = pipeline.seeded.digest("app v1.0.7").removeprefix("sha256:")[:12]
    assert any(line.split()[:3] == ["app", v107, "v1.0.7"] and "would delete" in line for line in lines)
    # the summary, one line each, as subscribers read it
    assert "DRY RUN: nothing was deleted; the lists show what a real run would delete." in lines
    assert "  team-data/etl-jobs: ok, 1050 images, kept 334, would delete 716, 13.3 GiB" in lines
    assert lines[-1].startswith(f"Full report: s3://{BUCKET}/reports/")


@pytest.mark.parametrize("output", ["html", "csv"])
def test_run_writes_its_page_or_sheet_to_the_file_and_names_it_on_stderr(
    output: str, pipeline: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / f"run.{output}"
    rules = str(write_rules(tmp_path, dry_run=True))
    result = run_cli(
        pipeline.recorder, capsys, "run", "--config", rules, "--bucket", BUCKET, "--format", output, "--out", str(out)
    )

    assert result.code == 0
    assert result.stdout == ""
    what = "page" if output == "html" else "sheet"
    assert one_line(result.stderr) == f"ecr-retention run: wrote the {what} to {out}"
    stored = pipeline.s3.list_objects_v2(Bucket=BUCKET, Prefix="reports/")["Contents"]
    [key] = [item["Key"] for item in stored if item["Key"].endswith(f".{output}")]
    # the file is what the report step stored in the bucket beside the JSON report
    assert out.read_bytes() == pipeline.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith(".")] == []


def test_a_run_that_cannot_read_the_replication_rules_is_blocked_exit_1_and_changes_nothing(
    pipeline: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deny("DescribeRegistry")(pipeline)
    before = pipeline.state()

    result = run_cli(
        pipeline.recorder, capsys, "run", "--config", str(write_rules(tmp_path, dry_run=False)), "--bucket", BUCKET
    )

    assert result.code == 1
    assert pipeline.state() == before
    assert [call for call in pipeline.recorder.mutating() if call.service == "ecr"] == []
    blocked = [line for line in result.stdout.splitlines() if "DescribeRegistry failed: AccessDeniedException" in line]
    assert blocked
    assert all("nothing is deleted until it can be read" in line for line in blocked)


def test_snapshot_with_the_bucket_records_the_manifests_and_the_memory_so_plan_decides_as_the_pipeline(
    pipeline: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a run that read dev's manifest (the memory remembers it), when dev.json is deleted from the bucket,
    # then a snapshot with the bucket records prod's manifest and the memory, and plan keeps what dev ran, as the
    # pipeline's own plan on the bucket does.
    from ecr_retention.layout import MEMORY_FILE
    from ecr_retention.services.run import run_pipeline

    config = pipeline.config(dry_run=True)
    run_pipeline(config, pipeline.adapters())
    pipeline.s3.delete_object(Bucket=BUCKET, Key="in-use/dev.json")
    rules = write_rules(tmp_path, dry_run=True)
    out, manifests = tmp_path / "registry.json", tmp_path / "recorded"
    recorder = ApiCallRecorder()  # the CLI's calls alone

    snapshot = run_cli(
        recorder, capsys, "snapshot", "--out", str(out), "--bucket", BUCKET, "--manifests", str(manifests)
    )
    planned = plan_offline(recorder, capsys, rules, out, manifests)

    assert snapshot.code == 0, snapshot.stderr
    assert snapshot.stderr.splitlines()[-1] == f"snapshot: 1 in-use manifests, with the in-use memory -> {manifests}"
    assert sorted(path.name for path in manifests.iterdir()) == [MEMORY_FILE, "prod.json"]
    result = json.loads(planned.stdout)
    assert result == json.loads(json.dumps(pipeline.plan(config).to_json_dict()))
    remembered = [
        reason
        for repository in result["repositories"]
        for image in repository["images"]
        for reason in image["reasons"]
        if reason["rule"] == "remembered"
    ]
    assert remembered
    assert all(reason["detail"].startswith("dev: ") for reason in remembered)
    assert recorder.mutating() == []


def test_snapshot_bucket_and_manifests_go_together(
    pipeline: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_cli(pipeline.recorder, capsys, "snapshot", "--out", str(tmp_path / "s.json"), "--bucket", BUCKET)

    assert result.code == 2
    assert result.stderr == (
        "ecr-retention snapshot: error: --bucket and --manifests go together: the inventory is recorded into the "
        "directory\n"
    )


def test_snapshot_of_two_regions_writes_one_file_that_plan_plans_per_region(
    pipeline: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the harness's registry and a second one in another Region (moto's ECR is per Region), when both are
    # snapshot with --region, then one file holds both registries, each read through its own Region's client, and
    # plan plans each with its coordinates; without --region the file is today's, byte for byte.
    import boto3

    other = "us-east-1" if REGION != "us-east-1" else "eu-west-1"
    ecr = boto3.client("ecr", region_name=other)
    ecr.create_repository(repositoryName="edge/cdn")
    ecr.put_image(
        repositoryName="edge/cdn",
        imageManifest=json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                "config": {
                    "mediaType": "application/vnd.docker.container.image.v1+json",
                    "size": 2,
                    "digest": "sha256:" + "a" * 64,
                },
                "layers": [],
            }
        ),
        imageTag="1",
    )
    rules = write_rules(tmp_path, dry_run=True)
    manifests = tmp_path / "in-use"
    manifests.mkdir()
    for key, body in in_use_manifests(pipeline.seeded).items():
        (manifests / key.removeprefix("in-use/")).write_bytes(body)
    home, both, named = tmp_path / "home.json", tmp_path / "both.json", tmp_path / "named.json"

    assert run_cli(pipeline.recorder, capsys, "snapshot", "--out", str(home)).code == 0
    assert run_cli(pipeline.recorder, capsys, "snapshot", "--out", str(named), "--region", REGION).code == 0
    result = run_cli(pipeline.recorder, capsys, "snapshot", "--out", str(both), "--region", REGION, "--region", other)
    planned = plan_offline(pipeline.recorder, capsys, rules, both, manifests)
    alone = plan_offline(pipeline.recorder, capsys, rules, home, manifests)

    assert result.code == 0, result.stderr
    assert named.read_bytes() == home.read_bytes()
    document = json.loads(both.read_text())
    assert list(document) == ["registries"]
    assert [(r["registryId"], r["region"]) for r in document["registries"]] == [(ACCOUNT, REGION), (ACCOUNT, other)]
    assert document["registries"][0] == json.loads(home.read_text())
    assert [r["repositoryName"] for r in document["registries"][1]["repositories"]] == ["edge/cdn"]
    assert result.stderr.splitlines()[-1] == f"snapshot: 1 repositories, 1 images in {other} -> {both}"
    regional = json.loads(planned.stdout)["repositories"]
    assert {r["region"] for r in regional} == {REGION, other}
    home_plan = [{k: v for k, v in r.items() if k != "region"} for r in regional if r["region"] == REGION]
    assert home_plan == json.loads(alone.stdout)["repositories"]
