"""The in-cluster inventory exporter: what runs in one Kubernetes cluster, written as an in-use manifest.

It reads the cluster with the shared Kubernetes code (ecr_retention.kube: `workloads`, `manifest`, `client`);
`storage` writes the result, and `service` runs the whole export.
"""
