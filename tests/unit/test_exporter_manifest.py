"""Building the in-use manifest: top-level workloads, sources, merged duplicates, stable order."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from ecr_retention.domain.inventory.manifest import InUseManifest, manifest_json
from ecr_retention.kube.errors import ExportFailed
from ecr_retention.kube.manifest import build_manifest, check_key_names_cluster
from ecr_retention.kube.workloads import ContainerImage, ObjectImages, Owner

NOW = datetime(2026, 11, 30, 3, 0, tzinfo=UTC)
DIGEST_A = "sha256:" + "aa" * 32
DIGEST_B = "sha256:" + "bb" * 32


def obj(
    kind: str,
    name: str,
    *containers: ContainerImage,
    controller: Owner | None = None,
    namespace: str = "shop",
) -> ObjectImages:
    return ObjectImages(kind=kind, namespace=namespace, name=name, controller=controller, containers=containers)


def entries(manifest: InUseManifest) -> list[tuple[str, str, str, str, str | None]]:
    return [(i.workload, i.source, i.container, i.image, i.digest) for i in manifest.images]


class TestWorkloads:
    def test_pod_of_a_replica_set_of_a_deployment_belongs_to_the_deployment(self) -> None:
        objects = [
            obj("ReplicaSet", "web-7d4b", ContainerImage("web", "web:1"), controller=Owner("Deployment", "web")),
            obj(
                "Pod",
                "web-7d4b-x",
                ContainerImage("web", "web:1", DIGEST_A),
                controller=Owner("ReplicaSet", "web-7d4b"),
            ),
        ]

        assert entries(build_manifest("prod", NOW, objects)) == [
            ("Deployment/web", "pod", "web", "web:1", DIGEST_A),
            ("Deployment/web", "replicaset", "web", "web:1", None),
        ]

    def test_pod_of_a_job_of_a_cron_job_belongs_to_the_cron_job(self) -> None:
        objects = [
            obj("CronJob", "cleanup", ContainerImage("c", "cleanup:2")),
            obj("Job", "cleanup-2939", ContainerImage("c", "cleanup:2"), controller=Owner("CronJob", "cleanup")),
            obj("Pod", "cleanup-2939-x", ContainerImage("c", "cleanup:2"), controller=Owner("Job", "cleanup-2939")),
        ]

        assert [workload for workload, *_ in entries(build_manifest("prod", NOW, objects))] == ["CronJob/cleanup"] * 3

    def test_controller_revision_belongs_to_its_stateful_set(self) -> None:
        objects = [
            obj("StatefulSet", "cache", ContainerImage("redis", "redis:7.4")),
            obj(
                "ControllerRevision",
                "cache-7f9",
                ContainerImage("redis", "redis:7.4"),
                controller=Owner("StatefulSet", "cache"),
            ),
            obj(
                "ControllerRevision",
                "cache-5d8",
                ContainerImage("redis", "redis:7.2"),
                controller=Owner("StatefulSet", "cache"),
            ),
        ]

        assert entries(build_manifest("prod", NOW, objects)) == [
            ("StatefulSet/cache", "controllerrevision", "redis", "redis:7.2", None),
            ("StatefulSet/cache", "controllerrevision", "redis", "redis:7.4", None),
            ("StatefulSet/cache", "template", "redis", "redis:7.4", None),
        ]

    def test_owners_are_resolved_within_the_namespace(self) -> None:
        objects = [
            obj("ReplicaSet", "web-1", controller=Owner("Deployment", "web"), namespace="other"),
            obj("Pod", "web-1-x", ContainerImage("web", "web:1"), controller=Owner("ReplicaSet", "web-1")),
        ]

        assert entries(build_manifest("prod", NOW, objects))[0][0] == "ReplicaSet/web-1"

    def test_bare_pod_and_unlisted_owner(self) -> None:
        objects = [
            obj("Pod", "debug", ContainerImage("shell", "busybox:1.36")),
            obj("Pod", "web-9-x", ContainerImage("web", "web:1"), controller=Owner("ReplicaSet", "web-9")),
            obj("Pod", "proxy-x", ContainerImage("proxy", "proxy:1"), controller=Owner("Rollout", "proxy")),
        ]

        assert [workload for workload, *_ in entries(build_manifest("prod", NOW, objects))] == [
            "Pod/debug",
            "ReplicaSet/web-9",
            "Rollout/proxy",
        ]

    def test_ownership_cycle_ends(self) -> None:
        objects = [
            obj("ReplicaSet", "a", controller=Owner("Job", "b")),
            obj("Job", "b", controller=Owner("ReplicaSet", "a")),
            obj("Pod", "p", ContainerImage("c", "i:1"), controller=Owner("ReplicaSet", "a")),
        ]

        assert len(build_manifest("prod", NOW, objects).images) == 1


class TestSourcesAndMerging:
    def test_source_follows_the_kind(self) -> None:
        image = ContainerImage("c", "i:1")
        objects = [
            obj(kind, "x", image)
            for kind in (
                "Pod",
                "Deployment",
                "StatefulSet",
                "DaemonSet",
                "ReplicaSet",
                "ControllerRevision",
                "Job",
                "CronJob",
            )
        ]

        assert sorted({i.source for i in build_manifest("prod", NOW, objects).images}) == [
            "controllerrevision",
            "cronjob",
            "pod",
            "replicaset",
            "template",
        ]

    def test_identical_entries_merge_and_different_digests_do_not(self) -> None:
        owner = Owner("DaemonSet", "proxy")
        objects = [
            obj("Pod", "proxy-1", ContainerImage("nginx", "nginx:1.14.2", DIGEST_A), controller=owner),
            obj("Pod", "proxy-2", ContainerImage("nginx", "nginx:1.14.2", DIGEST_A), controller=owner),
            obj("Pod", "proxy-3", ContainerImage("nginx", "nginx:1.14.2", DIGEST_B), controller=owner),  # tag moved
            obj("Pod", "proxy-4", ContainerImage("nginx", "nginx:1.14.2"), controller=owner),  # not pulled yet
        ]

        assert entries(build_manifest("prod", NOW, objects)) == [
            ("DaemonSet/proxy", "pod", "nginx", "nginx:1.14.2", None),
            ("DaemonSet/proxy", "pod", "nginx", "nginx:1.14.2", DIGEST_A),
            ("DaemonSet/proxy", "pod", "nginx", "nginx:1.14.2", DIGEST_B),
        ]

    def test_order_is_independent_of_listing_order(self) -> None:
        objects = [
            obj("Deployment", "b", ContainerImage("c", "i:2"), namespace="z"),
            obj("Deployment", "a", ContainerImage("c", "i:1"), namespace="a"),
            obj("CronJob", "a", ContainerImage("c", "i:1"), namespace="a"),
        ]

        forwards = manifest_json(build_manifest("prod", NOW, objects))
        backwards = manifest_json(build_manifest("prod", NOW, reversed(objects)))

        assert forwards == backwards


class TestStoredForm:
    def test_json_has_the_documented_shape_and_omits_unknown_digests(self) -> None:
        objects = [
            obj("Pod", "p", ContainerImage("c", "i:1", DIGEST_A)),
            obj("Deployment", "d", ContainerImage("c", "i:1")),
        ]

        document = json.loads(manifest_json(build_manifest("prod", NOW, objects)))

        assert document == {
            "schemaVersion": 1,
            "cluster": "prod",
            "generatedAt": "2026-11-30T03:00:00Z",
            "complete": True,
            "images": [
                {
                    "image": "i:1",
                    "namespace": "shop",
                    "workload": "Deployment/d",
                    "container": "c",
                    "source": "template",
                },
                {
                    "image": "i:1",
                    "digest": DIGEST_A,
                    "namespace": "shop",
                    "workload": "Pod/p",
                    "container": "c",
                    "source": "pod",
                },
            ],
        }
        assert InUseManifest.model_validate(document) == build_manifest("prod", NOW, objects)

    def test_empty_cluster_is_a_complete_manifest(self) -> None:
        manifest = build_manifest("dev", NOW, [])

        assert manifest.complete is True
        assert manifest.images == ()


class TestKeyCheck:
    @pytest.mark.parametrize("key", ["in-use/prod.json", "prod.json", "eks/eu-west-1/prod.json"])
    def test_key_that_names_the_cluster(self, key: str) -> None:
        check_key_names_cluster(key, "prod")

    @pytest.mark.parametrize("key", ["in-use/dev.json", "in-use/prod", "in-useprod.json", "in-use/prod.json/"])
    def test_key_that_names_another_cluster_is_refused(self, key: str) -> None:
        with pytest.raises(
            ExportFailed, match=r"^refusing key .*: the manifest of cluster prod is stored as \.\.\./prod\.json$"
        ):
            check_key_names_cluster(key, "prod")
