"""The pipeline commands on faithful moto: see support.pipeline_harness."""

from collections.abc import Iterator

import pytest
from moto import mock_aws

from ecr_retention_dev.emulator.fidelity import EcrFidelity
from support.api_calls import ApiCallRecorder
from support.pipeline_harness import isolated_aws, pipeline, retry_delays

__all__ = ["empty_account", "isolated_aws", "pipeline", "retry_delays"]


@pytest.fixture
def empty_account() -> Iterator[ApiCallRecorder]:
    """An AWS account with nothing in it, and a recorder for what a command calls there."""
    with mock_aws(), EcrFidelity():
        yield ApiCallRecorder()
