"""A registry as ECR describes it: its coordinates, images, replication, creation templates and the snapshots a run keeps of it."""
