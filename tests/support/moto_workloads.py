"""moto's ECS, Lambda, EventBridge, Scheduler and STS made faithful (AwsFidelity) and the workload seeding helpers
(MotoWorkloads): they live in the package, `ecr_retention.demo.workloads`, because `ecr-retention demo` runs on them
too. Tests import them from here."""

from ecr_retention.demo.workloads import AwsFidelity, MotoWorkloads

__all__ = ["AwsFidelity", "MotoWorkloads"]
