"""Reading images out of Kubernetes objects: which containers count and which imageIDs carry a digest."""

from __future__ import annotations

from typing import Any

import pytest

from ecr_retention.domain.inventory.kubernetes import (
    COLLECTED_RESOURCES,
    CONTROLLER_REVISION,
    CRON_JOB,
    DEPLOYMENT,
    POD,
    REPLICA_SET,
)
from ecr_retention.kube.workloads import (
    ContainerImage,
    NamespaceFilter,
    Owner,
    manifest_digest_from_image_id,
    read_controller_revision,
    read_cron_job,
    read_object,
    read_pod,
    read_workload,
)

DIGEST = "sha256:" + "ab" * 32
ECR = "123456789012.dkr.ecr.eu-west-1.amazonaws.com"


class TestManifestDigestFromImageId:
    @pytest.mark.parametrize(
        "image_id",
        [
            f"docker-pullable://{ECR}/shop/web@{DIGEST}",  # Docker (dockershim, cri-dockerd)
            f"{ECR}/shop/web@{DIGEST}",  # containerd, CRI-O
            f"{ECR}/docker.io/library/nginx@{DIGEST}",  # image-swapper / pull-through cache path
            f"docker.io/library/nginx@{DIGEST}",
            f"localhost:5000/tools/netshoot@{DIGEST}",
        ],
    )
    def test_repository_at_digest_yields_the_manifest_digest(self, image_id: str) -> None:
        assert manifest_digest_from_image_id(image_id) == DIGEST

    @pytest.mark.parametrize(
        "image_id",
        [
            DIGEST,  # containerd: an image without a repo digest, such as one imported onto the node
            f"docker://{DIGEST}",  # Docker's image ID: the config digest
            "",  # container still waiting for its image
            None,
            f"{ECR}/shop/web@sha256:abc",  # truncated
            f"{ECR}/shop/web@sha512:{'ab' * 64}",
            f"@{DIGEST}",
        ],
    )
    def test_config_digests_and_malformed_ids_yield_none(self, image_id: str | None) -> None:
        assert manifest_digest_from_image_id(image_id) is None


def pod(**spec_and_status: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "web-7d4b9c8f6-2xk9p",
            "namespace": "shop",
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9c8f6", "controller": True}
            ],
        },
        "spec": spec_and_status.get("spec", {}),
        "status": spec_and_status.get("status", {}),
    }


class TestReadPod:
    def test_containers_init_and_ephemeral_containers_with_their_digests(self) -> None:
        item = pod(
            spec={
                "containers": [{"name": "web", "image": f"{ECR}/shop/web:1.4.0"}],
                "initContainers": [{"name": "migrate", "image": f"{ECR}/shop/migrate:1.4.0"}],
                "ephemeralContainers": [{"name": "debugger", "image": "busybox:1.36"}],
            },
            status={
                "containerStatuses": [{"name": "web", "imageID": f"{ECR}/shop/web@{DIGEST}"}],
                "initContainerStatuses": [{"name": "migrate", "imageID": DIGEST}],
                "ephemeralContainerStatuses": [
                    {"name": "debugger", "imageID": f"docker-pullable://docker.io/library/busybox@{DIGEST}"}
                ],
            },
        )

        images = read_pod(item)

        assert images.kind == "Pod"
        assert (images.namespace, images.name) == ("shop", "web-7d4b9c8f6-2xk9p")
        assert images.controller == Owner("ReplicaSet", "web-7d4b9c8f6")
        assert images.containers == (
            ContainerImage("web", f"{ECR}/shop/web:1.4.0", DIGEST),
            ContainerImage("migrate", f"{ECR}/shop/migrate:1.4.0", None),  # bare sha256: config digest
            ContainerImage("debugger", "busybox:1.36", DIGEST),
        )

    def test_the_spec_image_is_recorded_not_the_runtime_spelling(self) -> None:
        item = pod(
            spec={"containers": [{"name": "db", "image": "postgres:16.4"}]},
            status={
                "containerStatuses": [
                    {
                        "name": "db",
                        "image": "docker.io/library/postgres:16.4",
                        "imageID": f"docker.io/library/postgres@{DIGEST}",
                    }
                ]
            },
        )

        assert read_pod(item).containers == (ContainerImage("db", "postgres:16.4", DIGEST),)

    def test_pod_without_status_or_owner(self) -> None:
        item = {
            "metadata": {"name": "debug", "namespace": "shop"},
            "spec": {"containers": [{"name": "shell", "image": "busybox"}]},
        }

        images = read_pod(item)

        assert images.controller is None
        assert images.containers == (ContainerImage("shell", "busybox", None),)

    def test_owner_that_is_not_the_controller_is_ignored(self) -> None:
        item = pod(spec={"containers": [{"name": "web", "image": "web:1"}]})
        item["metadata"]["ownerReferences"][0]["controller"] = False

        assert read_pod(item).controller is None


class TestReadTemplates:
    def test_deployment_template_containers_and_init_containers(self) -> None:
        item = {
            "metadata": {"name": "worker", "namespace": "shop"},
            "spec": {
                "replicas": 0,
                "template": {
                    "spec": {
                        "containers": [{"name": "worker", "image": f"{ECR}/shop/worker:2.0.1"}],
                        "initContainers": [{"name": "wait", "image": "busybox:1.36"}],
                    }
                },
            },
        }

        images = read_workload("Deployment", item)

        assert images.containers == (
            ContainerImage("worker", f"{ECR}/shop/worker:2.0.1"),
            ContainerImage("wait", "busybox:1.36"),
        )

    def test_cron_job_reads_the_pod_template_inside_the_job_template(self) -> None:
        item = {
            "metadata": {"name": "nightly-report", "namespace": "batch"},
            "spec": {
                "schedule": "0 3 * * *",
                "jobTemplate": {
                    "spec": {"template": {"spec": {"containers": [{"name": "report", "image": "report:0.9"}]}}}
                },
            },
        }

        assert read_cron_job(item).containers == (ContainerImage("report", "report:0.9"),)

    def test_container_without_an_image_is_skipped(self) -> None:
        item = {
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"template": {"spec": {"containers": [{"name": "web"}, {"name": "proxy", "image": " "}]}}},
        }

        assert read_workload("ReplicaSet", item).containers == ()

    def test_read_object_dispatches_on_the_resource(self) -> None:
        template = {"spec": {"containers": [{"name": "c", "image": "i:1"}]}}
        item: dict[str, Any] = {"metadata": {"name": "n", "namespace": "ns"}}

        assert read_object(POD, {**item, "spec": template["spec"]}).kind == "Pod"
        assert read_object(REPLICA_SET, {**item, "spec": {"template": template}}).kind == "ReplicaSet"
        assert read_object(DEPLOYMENT, {**item, "spec": {"template": template}}).kind == "Deployment"
        cron = read_object(CRON_JOB, {**item, "spec": {"jobTemplate": {"spec": {"template": template}}}})
        assert cron.containers == (ContainerImage("c", "i:1"),)


def controller_revision(owner_kind: str, name: str, data: Any) -> dict[str, Any]:
    """As `kubectl get controllerrevisions -o json` lists it: `data` patches the whole pod template."""
    return {
        "metadata": {
            "name": name,
            "namespace": "data",
            "labels": {"controller-revision-hash": name.rpartition("-")[2]},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": owner_kind,
                    "name": name.rpartition("-")[0],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "data": data,
        "revision": 1,
    }


class TestReadControllerRevisions:
    def test_stateful_set_revision_yields_its_template_images_owned_by_the_stateful_set(self) -> None:
        data = {
            "spec": {
                "template": {
                    "$patch": "replace",
                    "metadata": {"labels": {"app": "cache"}},
                    "spec": {
                        "containers": [{"name": "redis", "image": f"{ECR}/data/redis:7.2.4"}],
                        "initContainers": [{"name": "init", "image": f"{ECR}/data/redis-init:1.0"}],
                    },
                }
            }
        }

        images = read_controller_revision(controller_revision("StatefulSet", "cache-5d8f9b7c6", data))

        assert images.kind == "ControllerRevision"
        assert (images.namespace, images.name) == ("data", "cache-5d8f9b7c6")
        assert images.controller == Owner("StatefulSet", "cache")
        assert images.containers == (
            ContainerImage("redis", f"{ECR}/data/redis:7.2.4"),
            ContainerImage("init", f"{ECR}/data/redis-init:1.0"),
        )

    def test_daemon_set_revision_is_read_the_same_way(self) -> None:
        data = {"spec": {"template": {"$patch": "replace", "spec": {"containers": [{"name": "n", "image": "n:1"}]}}}}

        images = read_object(CONTROLLER_REVISION, controller_revision("DaemonSet", "proxy-6b7d", data))

        assert images.controller == Owner("DaemonSet", "proxy")
        assert images.containers == (ContainerImage("n", "n:1"),)

    @pytest.mark.parametrize(
        "data",
        [
            None,
            "opaque",
            {"spec": {"replicas": 3}},  # another controller's free-form revision data
            {"spec": {"template": "x"}},
            {"spec": {"template": {"spec": {"containers": ["not-a-container", {"name": "c", "image": 7}]}}}},
        ],
    )
    def test_revision_without_a_pod_template_names_no_image(self, data: Any) -> None:
        assert read_controller_revision(controller_revision("StatefulSet", "cache-1", data)).containers == ()


def test_collected_resources_and_their_list_paths() -> None:
    assert [(resource.kind, resource.list_path) for resource in COLLECTED_RESOURCES] == [
        ("Pod", "/api/v1/pods"),
        ("Deployment", "/apis/apps/v1/deployments"),
        ("StatefulSet", "/apis/apps/v1/statefulsets"),
        ("DaemonSet", "/apis/apps/v1/daemonsets"),
        ("ReplicaSet", "/apis/apps/v1/replicasets"),
        ("ControllerRevision", "/apis/apps/v1/controllerrevisions"),
        ("Job", "/apis/batch/v1/jobs"),
        ("CronJob", "/apis/batch/v1/cronjobs"),
    ]


class TestNamespaceFilter:
    def test_everything_by_default(self) -> None:
        assert NamespaceFilter().admits("kube-system")

    def test_include_globs_then_exclude_globs(self) -> None:
        namespaces = NamespaceFilter(include=("team-*", "shop"), exclude=("team-sandbox-*",))

        assert namespaces.admits("team-a")
        assert namespaces.admits("shop")
        assert not namespaces.admits("shop-staging")  # globs match whole names
        assert not namespaces.admits("team-sandbox-1")
        assert not namespaces.admits("kube-system")
