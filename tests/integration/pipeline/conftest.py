"""The pipeline on faithful moto: see support.pipeline_harness."""

from support.pipeline_harness import isolated_aws, pipeline, retry_delays

__all__ = ["isolated_aws", "pipeline", "retry_delays"]
