"""Native ECR lifecycle policies, offline: the policy model with ECR's validation, an evaluator with
ECR's documented semantics, and output shaped like `aws ecr get-lifecycle-policy-preview`.

Where AWS leaves a corner undocumented this package makes one choice and docs/lifecycle.md lists it:
ties in push time break by digest (ascending digest counts as younger), ages are exact 24-hour periods
compared strictly (an image exactly N days old is not older than N days), a restored image's
`lastActivatedAt` stands in for its push time, `ACTIVATING` images belong to no storage class, and a
child of an image index that is still present is never acted on in the same evaluation.

Layout: `policy` (the policy model and ECR's validation rules), `parsing` (policy text and
`get-lifecycle-policy` output in, one-line errors out), `matching` (tag patterns, storage classes, what a
selection selects), `timing` (which moment ranks an image and which one ages it), `evaluation` (the
rules applied by priority), `preview` (the evaluation as `get-lifecycle-policy-preview` output).
"""
