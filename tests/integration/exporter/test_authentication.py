"""How the exporter authenticates: kubeconfig exec plugins (`aws eks get-token`), the in-cluster service
account over TLS, and bad configuration reported as one line."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ecr_retention.cli import main
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.inventory.kubernetes import POD
from ecr_retention.kube.client import ClusterLister, connect
from ecr_retention_dev.emulator.kubernetes_api import LOOPBACK, FakeApiServer, FakeCluster, self_signed_tls

# What `aws eks get-token` prints; a kubeconfig from `aws eks update-kubeconfig` runs it as an exec plugin.
EXEC_CREDENTIAL = {
    "kind": "ExecCredential",
    "apiVersion": "client.authentication.k8s.io/v1beta1",
    "spec": {},
    "status": {"expirationTimestamp": "2099-01-01T00:00:00Z", "token": "k8s-aws-v1.exec-token"},
}


def pod_names(api_client: Any) -> list[str]:
    return ClusterLister(api_client).list_all(POD, lambda item: item["metadata"]["name"])


def test_exec_plugin_token_is_sent(cluster: FakeCluster, make_kubeconfig: Any) -> None:
    exec_plugin = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": sys.executable,
            "args": ["-c", f"print({json.dumps(json.dumps(EXEC_CREDENTIAL))})"],
        }
    }
    with FakeApiServer(cluster, token="k8s-aws-v1.exec-token") as server:
        api_client = connect(str(make_kubeconfig(server.url, user=exec_plugin)))

        assert len(pod_names(api_client)) == 10


def test_context_option_selects_the_cluster(
    cluster: FakeCluster, api_server: FakeApiServer, tmp_path: Path, make_kubeconfig: Any
) -> None:
    kubeconfig = make_kubeconfig(api_server.url)
    document = yaml.safe_load(kubeconfig.read_text())
    document["clusters"].append({"name": "elsewhere", "cluster": {"server": "http://127.0.0.1:9"}})
    document["contexts"].append({"name": "elsewhere", "context": {"cluster": "elsewhere", "user": "exporter"}})
    document["current-context"] = "elsewhere"
    kubeconfig.write_text(json.dumps(document))

    assert len(pod_names(connect(str(kubeconfig), "fake"))) == 10


@pytest.fixture
def tls_server(cluster: FakeCluster, tmp_path: Path) -> Iterator[tuple[FakeApiServer, Path]]:
    """The fake API server over HTTPS with a self-signed certificate for 127.0.0.1, and that CA file."""
    context, cert_file = self_signed_tls(tmp_path)
    with FakeApiServer(cluster, token="service-account-token", tls_context=context) as server:
        yield server, cert_file


def test_in_cluster_service_account_token_and_ca(tls_server: tuple[FakeApiServer, Path], tmp_path: Path) -> None:
    server, ca_file = tls_server
    service_account = tmp_path / "serviceaccount"
    service_account.mkdir()
    (service_account / "token").write_text("service-account-token")
    (service_account / "ca.crt").write_bytes(ca_file.read_bytes())
    environ = {"KUBERNETES_SERVICE_HOST": LOOPBACK, "KUBERNETES_SERVICE_PORT": str(server.port)}

    api_client = connect(environ=environ, service_account_dir=service_account)

    assert api_client.configuration.host == server.url
    assert len(pod_names(api_client)) == 10


def test_in_cluster_without_token_is_bad_input(tmp_path: Path) -> None:
    environ = {"KUBERNETES_SERVICE_HOST": LOOPBACK, "KUBERNETES_SERVICE_PORT": "443"}

    with pytest.raises(InputError, match=r"^in-cluster service account \(.*\): Service token file does not exist"):
        connect(environ=environ, service_account_dir=tmp_path)


@pytest.mark.parametrize(
    ("contents", "message"),
    [
        (None, "no such file"),
        ("clusters: [", "while parsing a flow node"),
        ("apiVersion: v1\nkind: Config\ncontexts: []\n", "Expected key current-context"),
        ("- a list, not a mapping\n", "not a kubeconfig"),
        (
            "clusters: [{name: f, cluster: {server: 'http://127.0.0.1:9'}}]\n"
            "contexts: [{name: f, context: {cluster: f, user: u}}]\ncurrent-context: f\n"
            "users: [{name: u, user: a-string}]\n",
            "not a kubeconfig",
        ),
    ],
    ids=["missing", "not yaml", "no context", "a list", "user is a string"],
)
def test_unusable_kubeconfig_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], contents: str | None, message: str
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    if contents is not None:
        kubeconfig.write_text(contents)

    code = main(["export", "--cluster", "prod", "--kubeconfig", str(kubeconfig), "--out", str(tmp_path / "m.json")])

    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"ecr-retention export: error: kubeconfig {kubeconfig}: ")
    assert message in err
    assert err.count("\n") == 1
    assert not (tmp_path / "m.json").exists()


def test_failing_exec_plugin_exits_2_with_one_line(
    api_server: FakeApiServer, make_kubeconfig: Any, tmp_path: Path
) -> None:
    """The client only logs a failed exec plugin and goes on without credentials; the run must stop there."""
    missing_command = tmp_path / "no-such-aws"
    exec_plugin = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": str(missing_command)}}
    kubeconfig = make_kubeconfig(api_server.url, user=exec_plugin)
    out = tmp_path / "m.json"

    # A process of its own: the failure showed as a root-logger line that pytest's log capture would hide.
    command = ["export", "--cluster", "prod", "--kubeconfig", str(kubeconfig), "--out", str(out)]
    result = subprocess.run(
        [sys.executable, "-m", "ecr_retention", *command],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 2
    assert result.stderr.startswith(f"ecr-retention export: error: kubeconfig {kubeconfig}: exec plugin failed: ")
    assert str(missing_command) in result.stderr
    assert result.stderr.count("\n") == 1
    assert api_server.requests == []  # no list was sent without credentials
    assert not out.exists()
