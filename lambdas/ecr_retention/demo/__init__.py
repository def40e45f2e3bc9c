"""`ecr-retention demo`: the whole pipeline on an embedded AWS emulator (moto in server mode, in this process).

- `emulator`: moto's ECR made to behave like ECR where the pipeline depends on it, and the seeding helpers
  (the tests use them too, through tests/support/moto_ecr.py);
- `workloads`: the same for ECS, Lambda, EventBridge and Scheduler, which the AWS inventory collector reads
  (the tests use it through tests/support/moto_workloads.py);
- `server`: the emulator's lifecycle and the environment that points every client at it;
- `registry`: the seeded registry, its in-use manifests, the ECS service and Lambda function, and the demo's rules;
- `pipeline`: the real Lambda handlers, invoked as their triggers and the state machine invoke them;
- `verify`: the check of what the real run removed, from the seeded data and the emulator's answers;
- `runner`: the steps, and what is printed.

moto is a development dependency: nothing imports this package's modules but the demo command and the tests.
"""
