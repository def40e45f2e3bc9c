"""The sentinel: ECR's and CloudTrail's events, which images a removal touched that run, and its alert."""
