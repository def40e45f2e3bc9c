"""Adapters to AWS: the only package of the pipeline that imports boto3 (the exporter has its own S3 client).

Nothing here creates a client at import time: `clients.client(service)` creates each one on first use."""
