"""`ecr-retention demo`: the whole pipeline on an embedded AWS emulator (moto in server mode, in this process).

- `server`: the emulator's lifecycle (ecr_retention_dev.emulator) and the environment that points every client
  at it;
- `registry`: the seeded registry, its in-use manifests, the ECS service and Lambda function, and the demo's rules;
- `agentless`: the cluster `dev`, with nothing installed: the collector reads it through its API (`eksClusters`),
  served by a fake Kubernetes API server behind the emulator's EKS;
- `pipeline`: the real Lambda handlers, invoked as their triggers and the state machine invoke them;
- `verify`: the check of what the real run removed, from the seeded data and the emulator's answers, and of the
  sentinel's step;
- `native_policy`: the last step, a native lifecycle policy that deletes what dev runs, told by the sentinel and the
  next sweep;
- `runner`: the steps, and what is printed.

moto is a development dependency: nothing imports this package's modules but the demo command and the tests.
"""
