"""What runs, as read from its sources: the in-use manifests of the clusters, the AWS inventory, EKS, and each manifest's evidence for the report."""
