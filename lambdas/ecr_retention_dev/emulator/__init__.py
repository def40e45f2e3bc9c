"""moto made faithful, for the demo and the tests.

- `fidelity`: `EcrFidelity`, the patch of moto's ECR for a `with` block (its docstring lists moto's gaps);
- `responses`, `creation_templates`: the ECR operations it replaces; `request`: their paging and id limits;
- `faults`: the throttles, errors, hooks and delete refusals it serves;
- `images`: an image of moto's backend as ECR describes it (storage status, pull times, sizes);
- `manifests`: manifest texts as registries store them, and what a push returns;
- `seeding`: `MotoEcr`, a registry seeded through the ECR API, with the backend edits no API offers;
- `workloads`: the same for ECS, Lambda, EventBridge, Scheduler and STS (`AwsFidelity`, `MotoWorkloads`);
- `lifecycle`: ECR's native lifecycle evaluation run now (the project's simulator decides, the ECR API acts), and the
  events ECR sends about it (PolicyExecutionEvent, ECR Image Action);
- `eventbridge`: the sentinel's EventBridge rules (layout's patterns) on moto's default bus, delivering to a queue
  that stands for the function;
- `kubernetes_api`: a fake Kubernetes API server on 127.0.0.1 (lists, TLS, bearer and EKS tokens, faults), and
  builders of the objects it serves, for the exporter's tests and the demo's agentless cluster.
"""
