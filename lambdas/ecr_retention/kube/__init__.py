"""Reading what runs in a Kubernetes cluster, shared by the in-cluster exporter (ecr_retention.exporter) and the
collector that reads EKS clusters through their API (services/eks_inventory.py, aws/eks_clusters.py).

`workloads` reads Kubernetes objects, `manifest` turns them into an `InUseManifest`, and `client` lists them from
the API server with the official client.
"""
