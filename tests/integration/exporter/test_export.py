"""The exporter against the fake API server over HTTP, with its real client code, uploading to moto S3."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ecr_retention.cli import main
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.inventory.manifest import InUseManifest, manifest_key
from ecr_retention.exporter.service import ExportSummary, FileDestination, S3Destination, export_inventory
from ecr_retention.kube.client import ClusterLister, connect
from ecr_retention.kube.errors import ExportFailed
from ecr_retention.kube.workloads import NamespaceFilter
from ecr_retention.loading import load_manifests
from ecr_retention_dev.emulator.kubernetes_api import FakeApiServer, FakeCluster, Fault
from tests.integration.exporter.conftest import BUCKET
from tests.integration.exporter.realistic_cluster import CACHE_304, EXPECTED_IMAGES

GENERATED_AT = datetime(2026, 11, 30, 3, 0, tzinfo=UTC)
KEY = "in-use/prod.json"


def export_to_bucket(
    kubeconfig: Path,
    s3: Any,
    *,
    page_size: int = 2,  # small pages, so that every kind is read across several continue tokens
    namespaces: NamespaceFilter | None = None,
    request_timeout: tuple[float, float] = (5.0, 5.0),
) -> ExportSummary:
    lister = ClusterLister(connect(str(kubeconfig)), page_size=page_size, request_timeout=request_timeout)
    destination = S3Destination(BUCKET, manifest_key("prod"), s3)
    return export_inventory("prod", lister, destination, namespaces=namespaces, clock=lambda: GENERATED_AT)


def stored_manifest(s3: Any, key: str = KEY) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    return document


class TestRealisticCluster:
    def test_manifest_lists_every_image_the_cluster_needs(self, kubeconfig: Path, s3: Any) -> None:
        export_to_bucket(kubeconfig, s3)

        assert stored_manifest(s3) == {
            "schemaVersion": 1,
            "cluster": "prod",
            "generatedAt": "2026-11-30T03:00:00Z",
            "complete": True,
            "images": EXPECTED_IMAGES,
        }

    def test_stored_manifest_validates_with_the_shared_model(self, kubeconfig: Path, s3: Any) -> None:
        summary = export_to_bucket(kubeconfig, s3)

        stored = InUseManifest.model_validate(stored_manifest(s3))
        assert stored == summary.manifest
        assert s3.head_object(Bucket=BUCKET, Key=KEY)["ContentType"] == "application/json"

    def test_counts_objects_of_every_kind(self, kubeconfig: Path, s3: Any) -> None:
        summary = export_to_bucket(kubeconfig, s3)

        assert summary.objects_by_kind == {
            "pods": 10,
            "deployments": 2,
            "statefulsets": 2,
            "daemonsets": 2,
            "replicasets": 3,
            "controllerrevisions": 5,
            "jobs": 1,
            "cronjobs": 2,
        }

    def test_follows_continue_tokens_until_the_last_page(
        self, kubeconfig: Path, s3: Any, api_server: FakeApiServer
    ) -> None:
        export_to_bucket(kubeconfig, s3, page_size=2)

        pages = api_server.requested_pages("pods")
        assert [page["limit"] for page in pages] == ["2"] * 5  # 10 pods
        assert "continue" not in pages[0]
        assert all("continue" in page for page in pages[1:])

    def test_old_stateful_set_revision_whose_pods_are_gone_stays_in_the_manifest(
        self, kubeconfig: Path, s3: Any
    ) -> None:
        """`kubectl rollout undo statefulset/cache` restores 3.0.4 from its ControllerRevision: keep that image."""
        export_to_bucket(kubeconfig, s3)

        entries = [entry for entry in stored_manifest(s3)["images"] if entry["image"] == CACHE_304]
        assert entries == [
            {
                "image": CACHE_304,
                "namespace": "shop",
                "workload": "StatefulSet/cache",
                "container": "redis",
                "source": "controllerrevision",
            }
        ]

    def test_page_size_does_not_change_the_manifest(self, kubeconfig: Path, s3: Any) -> None:
        one_by_one = export_to_bucket(kubeconfig, s3, page_size=1).manifest
        all_at_once = export_to_bucket(kubeconfig, s3, page_size=500).manifest

        assert one_by_one == all_at_once

    def test_namespace_globs_include_and_exclude(self, kubeconfig: Path, s3: Any) -> None:
        export_to_bucket(kubeconfig, s3, namespaces=NamespaceFilter(include=("*",), exclude=("kube-*", "data")))

        namespaces = {image["namespace"] for image in stored_manifest(s3)["images"]}
        assert namespaces == {"batch", "ingress", "shop"}

    def test_expired_continue_token_restarts_that_list(
        self, kubeconfig: Path, s3: Any, api_server: FakeApiServer
    ) -> None:
        api_server.inject("pods", Fault(410, page=3))

        summary = export_to_bucket(kubeconfig, s3)

        assert stored_manifest(s3)["images"] == EXPECTED_IMAGES  # nothing lost
        assert summary.objects_by_kind["pods"] == 10  # nothing counted twice: equal entries would merge unseen
        first_pages = [page for page in api_server.requested_pages("pods") if "continue" not in page]
        assert len(first_pages) == 2

    def test_throttled_list_is_retried_after_retry_after(
        self, kubeconfig: Path, s3: Any, api_server: FakeApiServer
    ) -> None:
        api_server.inject("replicasets", Fault(429, page=2, retry_after="0"))

        export_to_bucket(kubeconfig, s3)

        assert stored_manifest(s3)["images"] == EXPECTED_IMAGES


# Each fault, and a pattern for the start of the one line the run ends with.
FAILURES = {
    "forbidden kind": (
        "jobs",
        Fault(403),
        re.escape('listing jobs failed: 403 Forbidden: jobs.batch is forbidden: User "system:serviceaccount:'),
    ),
    "server error midway": (
        "pods",
        Fault(500, page=3),
        re.escape("listing pods failed: 500 Internal Server Error: Internal error occurred: etcdserver: request"),
    ),
    "continue token keeps expiring": (
        "replicasets",
        Fault(410, page=2, times=None),
        re.escape("listing replicasets failed: the continue token expired 4 times (410 Gone)"),
    ),
    "throttled without retry-after": (
        "cronjobs",
        Fault(429),
        re.escape("listing cronjobs failed: 429 Too Many Requests: too many requests"),
    ),
    "timeout": (
        "deployments",
        Fault(200, times=None, delay_seconds=1.0),
        r"listing deployments failed: API server http://127\.0\.0\.1:\d+: Read timed out\. \(read timeout=0\.2\)",
    ),
}


class TestEveryFailureStoresNothing:
    @pytest.mark.parametrize(("plural", "fault", "message"), FAILURES.values(), ids=FAILURES.keys())
    def test_failed_list_uploads_nothing(
        self,
        kubeconfig: Path,
        s3: Any,
        api_server: FakeApiServer,
        stored_keys: Callable[[], list[str]],
        plural: str,
        fault: Fault,
        message: str,
    ) -> None:
        api_server.inject(plural, fault)

        with pytest.raises(ExportFailed) as failure:
            export_to_bucket(kubeconfig, s3, request_timeout=(1.0, 0.2))

        assert re.match(message, str(failure.value))
        assert "\n" not in str(failure.value)
        assert stored_keys() == []

    @pytest.mark.parametrize(("plural", "fault", "message"), FAILURES.values(), ids=FAILURES.keys())
    def test_cli_exits_1_with_one_line_and_keeps_the_previous_manifest(
        self,
        kubeconfig: Path,
        s3: Any,
        api_server: FakeApiServer,
        capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
        plural: str,
        fault: Fault,
        message: str,
    ) -> None:
        previous = b'{"schemaVersion": 1, "cluster": "prod", "previous": true}'
        s3.put_object(Bucket=BUCKET, Key=KEY, Body=previous)
        monkeypatch.setattr("ecr_retention.kube.client.DEFAULT_REQUEST_TIMEOUT", (1.0, 0.2))
        api_server.inject(plural, fault)

        code = main(
            ["export", "--cluster", "prod", "--kubeconfig", str(kubeconfig), "--bucket", BUCKET, "--page-size", "2"]
        )

        err = capsys.readouterr().err
        assert code == 1
        assert re.match(f"ecr-retention export: error: cluster prod: {message}", err)
        assert err.endswith("; nothing was written\n")
        assert err.count("\n") == 1
        assert s3.get_object(Bucket=BUCKET, Key=KEY)["Body"].read() == previous

    def test_ok_answer_that_is_not_a_list_uploads_nothing(
        self, kubeconfig: Path, s3: Any, api_server: FakeApiServer, stored_keys: Callable[[], list[str]]
    ) -> None:
        """A 200 without `items` (a proxy's or another server's JSON) is no evidence of an empty kind."""
        answer = api_server.answer
        not_a_list = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 200}).encode()

        def answer_daemonsets_with_a_status(
            path: str, query: dict[str, str], authorization: str | None
        ) -> tuple[int, dict[str, str], bytes]:
            if path == "/apis/apps/v1/daemonsets":
                return 200, {}, not_a_list
            return answer(path, query, authorization)

        api_server.answer = answer_daemonsets_with_a_status  # type: ignore[method-assign]

        with pytest.raises(ExportFailed, match=r"^listing daemonsets failed: the response is not a DaemonSetList$"):
            export_to_bucket(kubeconfig, s3)
        assert stored_keys() == []

    def test_wrong_token_uploads_nothing(
        self, api_server: FakeApiServer, make_kubeconfig: Any, s3: Any, stored_keys: Callable[[], list[str]]
    ) -> None:
        kubeconfig = make_kubeconfig(api_server.url, user={"token": "stale"})

        with pytest.raises(ExportFailed, match=r"^listing pods failed: 401 Unauthorized: Unauthorized$"):
            export_to_bucket(kubeconfig, s3)
        assert stored_keys() == []

    def test_unreachable_api_server_uploads_nothing(
        self, make_kubeconfig: Any, s3: Any, stored_keys: Callable[[], list[str]]
    ) -> None:
        with FakeApiServer(FakeCluster()) as server:
            url = server.url
        # The port was bound and released: nothing listens there now.
        kubeconfig = make_kubeconfig(url)

        refused = r"^listing pods failed: API server http://127\.0\.0\.1:\d+: Failed to establish a new connection: "
        with pytest.raises(ExportFailed, match=refused):
            export_to_bucket(kubeconfig, s3, request_timeout=(0.5, 0.5))
        assert stored_keys() == []

    def test_missing_bucket_is_a_failed_upload(
        self, kubeconfig: Path, s3: Any, capsys: pytest.CaptureFixture[str]
    ) -> None:
        code = main(["export", "--cluster", "prod", "--kubeconfig", str(kubeconfig), "--bucket", "no-such-bucket"])

        assert code == 1
        assert capsys.readouterr().err == (
            "ecr-retention export: error: cluster prod: upload to s3://no-such-bucket/in-use/prod.json failed: "
            "NoSuchBucket: The specified bucket does not exist; nothing was written\n"
        )


class TestCommandLine:
    def test_export_to_bucket(self, kubeconfig: Path, s3: Any, capsys: pytest.CaptureFixture[str]) -> None:
        before = datetime.now(UTC)

        code = main(["export", "--cluster", "prod", "--kubeconfig", str(kubeconfig), "--bucket", BUCKET])

        assert code == 0
        manifest = InUseManifest.model_validate(stored_manifest(s3))
        assert manifest.cluster == "prod"
        assert manifest.complete is True
        assert before - timedelta(seconds=1) <= manifest.generated_at <= datetime.now(UTC)
        assert [image.model_dump(exclude_none=True) for image in manifest.images] == EXPECTED_IMAGES
        assert capsys.readouterr().out == (
            "cluster prod: 31 image references from 10 pods, 2 deployments, 2 statefulsets, 2 daemonsets, "
            f"3 replicasets, 5 controllerrevisions, 1 jobs, 2 cronjobs; wrote s3://{BUCKET}/in-use/prod.json\n"
        )

    def test_prefix_sets_the_key(self, kubeconfig: Path, s3: Any, stored_keys: Callable[[], list[str]]) -> None:
        code = main(
            ["export", "--cluster", "prod", "--kubeconfig", str(kubeconfig), "--bucket", BUCKET, "--prefix", "eks/"]
        )

        assert code == 0
        assert stored_keys() == ["eks/prod.json"]

    def test_file_output_is_read_by_the_planner(self, kubeconfig: Path, tmp_path: Path) -> None:
        manifests = tmp_path / "manifests"
        manifests.mkdir()

        code = main(
            ["export", "--cluster", "prod", "--kubeconfig", str(kubeconfig), "--out", str(manifests / "prod.json")]
        )

        assert code == 0
        inventory = load_manifests(manifests)  # what `ecr-retention plan --manifests` reads
        assert [manifest.cluster for manifest in inventory.manifests] == ["prod"]
        assert len(inventory.manifests[0].images) == len(EXPECTED_IMAGES)
        assert [path.name for path in manifests.iterdir()] == ["prod.json"]  # no temporary file left

    def test_kubeconfig_from_environment_and_namespace_options(
        self, kubeconfig: Path, s3: Any, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("KUBECONFIG", f"{kubeconfig.parent / 'absent'}:{kubeconfig}")

        code = main(
            [
                "export",
                "--cluster",
                "prod",
                "--bucket",
                BUCKET,
                "--include-namespace",
                "sh*",
                "--include-namespace",
                "batch",
                "--exclude-namespace",
                "batch",
            ]
        )

        assert code == 0
        assert {image["namespace"] for image in stored_manifest(s3)["images"]} == {"shop"}


class TestUnusableDestinationIsRefusedBeforeAnyList:
    """A destination that can never take the manifest is bad input: exit 2 before the cluster is read."""

    @pytest.mark.parametrize(
        ("out", "message"),
        [
            ("", "--out '': no file name given"),
            ("{tmp}/absent/prod.json", "--out '{tmp}/absent/prod.json': directory {tmp}/absent does not exist"),
            ("{tmp}", "--out '{tmp}': is a directory, not a file"),
            ("{tmp}/", "--out '{tmp}/': is a directory, not a file"),
            ("{tmp}/new/", "--out '{tmp}/new/': ends with '/', so it names a directory, not a file"),
            ("{tmp}/file.txt/prod.json", "--out '{tmp}/file.txt/prod.json': {tmp}/file.txt is not a directory"),
        ],
        ids=[
            "empty",
            "missing directory",
            "a directory",
            "a directory with slash",
            "new directory",
            "parent is a file",
        ],
    )
    def test_bad_out_exits_2_and_lists_nothing(
        self,
        kubeconfig: Path,
        api_server: FakeApiServer,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
        out: str,
        message: str,
    ) -> None:
        (tmp_path / "file.txt").write_text("not a directory")

        code = main(["export", "--cluster", "prod", "--kubeconfig", str(kubeconfig), "--out", out.format(tmp=tmp_path)])

        err = capsys.readouterr().err
        assert code == 2
        assert err == f"ecr-retention export: error: {message.format(tmp=tmp_path)}\n"
        assert api_server.requests == []

    def test_unwritable_directory_exits_2_and_lists_nothing(
        self,
        kubeconfig: Path,
        api_server: FakeApiServer,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o555)
        access = os.access
        # root may write into a 0555 directory; ask the kernel's answer for an ordinary user instead
        monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != locked and access(path, mode))

        code = main(["export", "--cluster", "prod", "--kubeconfig", str(kubeconfig), "--out", str(locked / "p.json")])

        assert code == 2
        assert capsys.readouterr().err.endswith(f"directory {locked} is not writable\n")
        assert api_server.requests == []

    def test_service_checks_the_destination_before_listing(
        self, kubeconfig: Path, api_server: FakeApiServer, tmp_path: Path
    ) -> None:
        lister = ClusterLister(connect(str(kubeconfig)))

        with pytest.raises(InputError, match="is a directory, not a file"):
            export_inventory("prod", lister, FileDestination(tmp_path))
        assert api_server.requests == []

    @pytest.mark.parametrize(
        ("arguments", "message"),
        [
            (["--bucket", "s3://inventory"], "--bucket 's3://inventory': not a bucket name"),
            (["--bucket", BUCKET, "--prefix", "in-use"], "--prefix 'in-use': must end with '/'"),
        ],
    )
    def test_bad_bucket_or_prefix_exits_2_and_lists_nothing(
        self,
        kubeconfig: Path,
        api_server: FakeApiServer,
        capsys: pytest.CaptureFixture[str],
        arguments: list[str],
        message: str,
    ) -> None:
        code = main(["export", "--cluster", "prod", "--kubeconfig", str(kubeconfig), *arguments])

        assert code == 2
        assert message in capsys.readouterr().err
        assert api_server.requests == []
