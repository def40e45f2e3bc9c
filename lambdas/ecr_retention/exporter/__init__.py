"""The in-cluster inventory exporter: what runs in one Kubernetes cluster, written as an in-use manifest.

`workloads` reads Kubernetes objects, `manifest` turns them into an `InUseManifest`, `kube` lists them
from the API server, `storage` writes the result, and `service` runs the whole export.
"""
