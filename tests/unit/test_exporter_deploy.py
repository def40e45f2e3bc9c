"""deploy/: the exporter's RBAC matches what it lists, and the CronJob runs as the issue requires."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from ecr_retention.domain.inventory.kubernetes import COLLECTED_RESOURCES

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def load(name: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((DEPLOY / name).read_text(encoding="utf-8"))
    return document


@pytest.fixture(scope="module")
def pod_spec() -> dict[str, Any]:
    spec: dict[str, Any] = load("cronjob.yaml")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return spec


def test_cluster_role_grants_get_and_list_on_exactly_the_collected_kinds() -> None:
    rules = load("clusterrole.yaml")["rules"]

    granted = {(group, resource) for rule in rules for group in rule["apiGroups"] for resource in rule["resources"]}
    assert granted == {(resource.api_group, resource.plural) for resource in COLLECTED_RESOURCES}
    assert all(sorted(rule["verbs"]) == ["get", "list"] for rule in rules)


def test_binding_names_the_role_and_the_service_account() -> None:
    binding = load("clusterrolebinding.yaml")
    account = load("serviceaccount.yaml")["metadata"]

    assert binding["roleRef"]["name"] == load("clusterrole.yaml")["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
    ]


def test_cron_job_runs_every_ten_minutes_one_at_a_time() -> None:
    spec = load("cronjob.yaml")["spec"]

    assert spec["schedule"] == "*/10 * * * *"
    assert spec["concurrencyPolicy"] == "Forbid"


def test_pod_meets_the_restricted_pod_security_standard(pod_spec: dict[str, Any]) -> None:
    assert pod_spec["securityContext"]["runAsNonRoot"] is True
    assert pod_spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for container in pod_spec["containers"]:
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False
        assert context["capabilities"] == {"drop": ["ALL"]}
        assert context["readOnlyRootFilesystem"] is True
        assert set(container["resources"]) == {"requests", "limits"}


def test_pod_runs_the_export_command_as_the_service_account(pod_spec: dict[str, Any]) -> None:
    (container,) = pod_spec["containers"]

    assert pod_spec["serviceAccountName"] == load("serviceaccount.yaml")["metadata"]["name"]
    assert container["args"][:3] == ["export", "--cluster", "$(CLUSTER_NAME)"]
    assert {variable["name"] for variable in container["env"]} == {"CLUSTER_NAME", "INVENTORY_BUCKET", "AWS_REGION"}


def test_kustomization_lists_every_manifest() -> None:
    resources = load("kustomization.yaml")["resources"]

    assert sorted(resources) == sorted(path.name for path in DEPLOY.glob("*.yaml") if path.name != "kustomization.yaml")


def test_image_installs_the_pinned_kubernetes_client_without_breaking_botocore() -> None:
    pins = dict(
        line.split("==")
        for line in (DEPLOY / "requirements-exporter.txt").read_text().splitlines()
        if line and not line.startswith("#")
    )

    assert pins["kubernetes"] == "37.0.1"
    assert pins["python-dateutil"].startswith("2.")  # botocore requires python-dateutil<3
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "--no-deps" in dockerfile
    assert "\nUSER 65532:65532\n" in dockerfile
