"""The collector reads EKS clusters through their API (eksClusters): moto EKS answers DescribeCluster with the
endpoint and CA of the loopback fake Kubernetes API server, served over HTTPS with a test CA, which accepts only
a bearer token shaped as EKS takes it (k8s-aws-v1., a presigned GetCallerIdentity URL signing x-k8s-aws-id)."""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
from moto.eks.models import eks_backends

from ecr_retention.aws.accounts import AwsAccounts
from ecr_retention.aws.clients import ClientFactory
from ecr_retention.aws.eks_clusters import EksClusters
from ecr_retention.aws.eks_token import presigned_token
from ecr_retention.aws.s3_bucket import S3Bucket
from ecr_retention.domain.inventory.eks_clusters import EksCluster
from ecr_retention.domain.inventory.kubernetes import POD
from ecr_retention.domain.inventory.manifest import InUseManifest
from ecr_retention.exporter.service import FileDestination, export_inventory
from ecr_retention.handlers import collector
from ecr_retention.handlers.wiring import forget_cold_start
from ecr_retention.kube.client import ClusterLister, connect_with_token
from ecr_retention.services.aws_inventory import BucketManifestStore
from ecr_retention.services.eks_inventory import export_eks_inventory
from ecr_retention_dev.emulator.kubernetes_api import (
    LOOPBACK,
    FakeApiServer,
    FakeCluster,
    eks_token_problem,
    pod,
    self_signed_tls,
)
from ecr_retention_dev.emulator.seeding import MotoEcr
from ecr_retention_dev.emulator.workloads import AwsFidelity, MotoWorkloads
from support.aws_workloads_scenario import BUCKET, HOST, HUB, REGION, SPOKE, SPOKE_ROLE, HubScenario, seed_hub
from tests.integration.aws_inventory.test_collector import deleted, in_use_reasons, plan_hub
from tests.integration.exporter import realistic_cluster

CLUSTER = "prod-eks"
CLUSTER_ARN = f"arn:aws:eks:{REGION}:{HUB}:cluster/{CLUSTER}"
EXPECTING_THE_CLUSTER = f"""
version: 1
dry_run: true
safety: {{min_age: 1d, max_delete_fraction: 1.0, inventory_max_age: 6h, clusters: [{CLUSTER}]}}
policies:
  - repositories: ["*"]
    rules:
      - delete: {{older_than: 30d}}
"""


class StaticToken:
    def __init__(self, token: str) -> None:
        self.token = token

    def refresh(self, configuration: Any) -> None:
        configuration.api_key["authorization"] = self.token
        configuration.api_key_prefix["authorization"] = "Bearer"


@pytest.fixture
def scenario(ecr: MotoEcr, hub: MotoWorkloads) -> HubScenario:
    return seed_hub(ecr, hub)


@pytest.fixture
def tls(tmp_path: Path) -> tuple[Any, Path]:
    return self_signed_tls(tmp_path)


def serve(cluster: FakeCluster, tls: tuple[Any, Path]) -> FakeApiServer:
    context, _ = tls
    return FakeApiServer(cluster, tls_context=context, authenticate=eks_token_problem).start()


@pytest.fixture
def api_server(tls: tuple[Any, Path]) -> Iterator[FakeApiServer]:
    server = serve(realistic_cluster.build(), tls)
    yield server
    server.stop()


def create_cluster(name: str, endpoint: str, ca_file: Path, *, account: str = HUB, session: Any = None) -> str:
    """A moto EKS cluster whose DescribeCluster names `endpoint` and the CA in `ca_file`, as EKS names its own."""
    eks = (session or boto3.session.Session()).client("eks", region_name=REGION)
    arn: str = eks.create_cluster(
        name=name,
        roleArn=f"arn:aws:iam::{account}:role/eks-cluster",
        resourcesVpcConfig={"subnetIds": ["subnet-0a1b2c3d"]},
        accessConfig={"authenticationMode": "API"},
    )["cluster"]["arn"]
    described = eks_backends[account][REGION].clusters[name]
    described.endpoint = endpoint
    described.certificate_authority = {"data": base64.b64encode(ca_file.read_bytes()).decode()}
    return arn


def collect(factory: ClientFactory, *arns: str, roles: tuple[str, ...] = ()) -> list[Any]:
    store = BucketManifestStore(S3Bucket(BUCKET, boto3.client("s3", region_name=REGION)))
    return export_eks_inventory([EksCluster(arn) for arn in arns], EksClusters(AwsAccounts(factory, roles)), store)


def stored(name: str) -> dict[str, Any]:
    body = boto3.client("s3", region_name=REGION).get_object(Bucket=BUCKET, Key=f"in-use/{name}.json")["Body"].read()
    document: dict[str, Any] = json.loads(body)
    InUseManifest.model_validate(document)
    return document


def credential_of(token: str) -> str:
    """The access key id a token was signed with."""
    encoded = token.removeprefix("k8s-aws-v1.")
    url = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    return parse_qs(urlsplit(url).query)["X-Amz-Credential"][0].split("/")[0]


def collect_web_v1_running(factory: ClientFactory, scenario: HubScenario, tls: tuple[Any, Path]) -> tuple[str, Any]:
    """An agentless cluster whose pod runs web:v1 (which nothing on ECS or Lambda uses), collected once; its ARN
    and the image. The fake API server is stopped afterwards."""
    running = FakeCluster()
    web_v1 = scenario.images["web:v1"]
    running.add("pods", pod("shop", "web-0", containers=[("web", f"{HOST}/web:v1", f"{HOST}/web@{web_v1.digest}")]))
    server = serve(running, tls)
    try:
        arn = create_cluster(CLUSTER, server.url, tls[1])
        collect(factory, arn)
    finally:
        server.stop()
    return arn, web_v1


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def test_an_agentless_cluster_gets_the_manifest_its_exporter_would_write(
    aws: AwsFidelity, factory: ClientFactory, api_server: FakeApiServer, tls: tuple[Any, Path], tmp_path: Path
) -> None:
    # GIVEN an EKS cluster whose API the collector can reach, and the same cluster exported by the exporter
    arn = create_cluster(CLUSTER, api_server.url, tls[1])
    exported = tmp_path / "exported.json"
    export_inventory(
        CLUSTER,
        ClusterLister(
            connect_with_token(
                api_server.url,
                tls[1].read_text(),
                StaticToken(presigned_token(boto3.client("sts", region_name=REGION), CLUSTER)),
            )
        ),
        FileDestination(exported),
    )

    # WHEN the collector reads it
    [collection] = collect(factory, arn)

    # THEN in-use/<cluster name>.json is the exporter's document, complete, generatedAt apart
    assert collection.problems == ()
    assert collection.location == f"s3://{BUCKET}/in-use/{CLUSTER}.json"
    document = stored(CLUSTER)
    from_exporter = json.loads(exported.read_text())
    assert document["complete"] is True
    assert {**document, "generatedAt": None} == {**from_exporter, "generatedAt": None}
    assert collection.counts["pods"] == 10
    # and every request carried an EKS token of the collector's own credentials
    assert api_server.presented_tokens
    own_key = boto3.session.Session().get_credentials().access_key
    assert {credential_of(token) for token in api_server.presented_tokens} == {own_key}


def test_the_fake_api_refuses_a_token_that_is_not_an_eks_token(
    api_server: FakeApiServer, tls: tuple[Any, Path]
) -> None:
    lister = ClusterLister(connect_with_token(api_server.url, tls[1].read_text(), StaticToken("service-account")))

    with pytest.raises(Exception, match="401 Unauthorized"):
        lister.list_all(POD, lambda item: item)


def test_an_agentless_cluster_protects_the_images_it_runs(
    aws: AwsFidelity, factory: ClientFactory, scenario: HubScenario, tls: tuple[Any, Path]
) -> None:
    # GIVEN web:v1, which nothing on ECS or Lambda uses, running in an agentless cluster
    _, web_v1 = collect_web_v1_running(factory, scenario, tls)

    # WHEN the registry is planned with the cluster expected
    plan = plan_hub(EXPECTING_THE_CLUSTER)

    # THEN web:v1 is kept as in use by that cluster, and the run is not blocked
    assert plan.blocked == ()
    assert web_v1.digest not in deleted(plan)
    assert in_use_reasons(plan, web_v1.digest)


def test_an_unreachable_agentless_cluster_is_stored_incomplete_and_blocks_the_run(
    aws: AwsFidelity, factory: ClientFactory, scenario: HubScenario, tls: tuple[Any, Path]
) -> None:
    # GIVEN a cluster whose endpoint answers nothing (a private endpoint, seen from outside its VPC)
    arn = create_cluster(CLUSTER, f"https://{LOOPBACK}:{closed_port()}", tls[1])

    # WHEN the collector reads it
    [collection] = collect(factory, arn)

    # THEN its manifest says complete: false, the failure is named, and no deletion happens anywhere
    assert stored(CLUSTER)["complete"] is False
    assert stored(CLUSTER)["images"] == []
    [problem] = collection.problems
    assert problem.startswith(f"cluster {arn}: listing pods failed: API server https://{LOOPBACK}:")
    assert "refused" in problem.lower()
    plan = plan_hub(EXPECTING_THE_CLUSTER)
    assert deleted(plan) == set()
    assert plan.blocked == (f"cluster {CLUSTER}: in-use manifest is incomplete (complete: false)",)


def test_a_cluster_that_cannot_be_read_again_keeps_protecting_what_it_ran_when_last_read(
    aws: AwsFidelity, factory: ClientFactory, scenario: HubScenario, tls: tuple[Any, Path]
) -> None:
    # GIVEN web:v1 running in an agentless cluster that safety.clusters does not list, read once
    arn, web_v1 = collect_web_v1_running(factory, scenario, tls)

    # WHEN the next collection cannot reach it
    eks_backends[HUB][REGION].clusters[CLUSTER].endpoint = f"https://{LOOPBACK}:{closed_port()}"
    [collection] = collect(factory, arn)

    # THEN the stored manifest is incomplete and still names web:v1, which the plan keeps as in use
    manifest = stored(CLUSTER)
    assert manifest["complete"] is False
    assert {entry.get("digest") for entry in manifest["images"]} == {web_v1.digest}
    assert collection.problems[-1].startswith("1 image reference carried over from the previous manifest")
    plan = plan_hub(EXPECTING_THE_CLUSTER.replace(f"clusters: [{CLUSTER}]", "clusters: []"))
    assert plan.blocked == ()
    assert web_v1.digest not in deleted(plan)
    assert in_use_reasons(plan, web_v1.digest)


def test_a_server_certificate_the_clusters_ca_did_not_sign_is_refused(
    aws: AwsFidelity, factory: ClientFactory, api_server: FakeApiServer, tmp_path: Path
) -> None:
    # GIVEN DescribeCluster naming a CA that did not sign the server's certificate
    (tmp_path / "other").mkdir()
    _, other_ca = self_signed_tls(tmp_path / "other")
    arn = create_cluster(CLUSTER, api_server.url, other_ca)

    [collection] = collect(factory, arn)

    assert stored(CLUSTER)["complete"] is False
    assert "CERTIFICATE_VERIFY_FAILED" in collection.problems[0]
    assert api_server.presented_tokens == []  # no token ever went to a server the CA does not vouch for


def test_a_cluster_that_does_not_exist_is_named_and_incomplete(aws: AwsFidelity, factory: ClientFactory) -> None:
    [collection] = collect(factory, f"arn:aws:eks:{REGION}:{HUB}:cluster/gone")

    assert stored("gone")["complete"] is False
    assert "DescribeCluster failed: ResourceNotFoundException" in collection.problems[0]


def test_a_spoke_cluster_is_read_with_the_spoke_role(
    aws: AwsFidelity, factory: ClientFactory, api_server: FakeApiServer, tls: tuple[Any, Path]
) -> None:
    # GIVEN a cluster of the spoke account, which only the spoke role can describe and sign for
    credentials = boto3.client("sts", region_name=REGION).assume_role(RoleArn=SPOKE_ROLE, RoleSessionName="seeding")[
        "Credentials"
    ]
    spoke_session = boto3.session.Session(
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
    )
    arn = create_cluster("payments", api_server.url, tls[1], account=SPOKE, session=spoke_session)

    # WHEN the collector reads it, with the spoke role listed
    [collection] = collect(factory, arn, roles=(SPOKE_ROLE,))

    # THEN it is complete, and the tokens were signed with the assumed role's credentials, not the collector's
    assert collection.problems == ()
    assert stored("payments")["complete"] is True
    signers = {credential_of(token) for token in api_server.presented_tokens}
    own_key = boto3.session.Session().get_credentials().access_key
    [signer] = signers
    assert signer.startswith("ASIA")  # temporary credentials: the session AssumeRole gave the collector
    assert signer != own_key


def test_a_spoke_cluster_without_a_spoke_role_is_named_and_incomplete(aws: AwsFidelity, factory: ClientFactory) -> None:
    [collection] = collect(factory, f"arn:aws:eks:{REGION}:{SPOKE}:cluster/payments")

    assert stored("payments")["complete"] is False
    assert f"account {SPOKE} has no role to assume" in collection.problems[0]


def test_the_handler_collects_the_listed_clusters_beside_the_aws_inventory(
    monkeypatch: pytest.MonkeyPatch, aws: AwsFidelity, api_server: FakeApiServer, tls: tuple[Any, Path]
) -> None:
    arn = create_cluster(CLUSTER, api_server.url, tls[1])
    for name, value in {
        "BUCKET_NAME": BUCKET,
        "COLLECT_REGIONS": json.dumps([REGION]),
        "EKS_CLUSTERS": json.dumps([arn]),
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "EcrRetention",
    }.items():
        monkeypatch.setenv(name, value)
    forget_cold_start()

    result = collector.lambda_handler({"trigger": "schedule"}, FakeContext())  # type: ignore[arg-type]

    assert [(m["name"], m["complete"]) for m in result["manifests"]] == [
        (f"aws-{HUB}-{REGION}", True),
        (CLUSTER, True),
    ]
    assert stored(CLUSTER)["generatedAt"] <= datetime.now(UTC).isoformat().replace("+00:00", "Z")


class FakeContext:
    function_name = "ecr-retention-collector"
    function_version = "$LATEST"
    memory_limit_in_mb = 512
    invoked_function_arn = f"arn:aws:lambda:{REGION}:{HUB}:function:ecr-retention-collector"
    aws_request_id = "6f1c3a52-0000-4000-8000-000000000002"

    def get_remaining_time_in_millis(self) -> int:
        return 600_000
