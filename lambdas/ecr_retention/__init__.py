"""ecr-retention: prune and tag Amazon ECR images beyond what lifecycle policies can express."""

__version__ = "0.1.0"
