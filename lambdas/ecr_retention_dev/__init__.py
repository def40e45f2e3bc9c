"""Development tools of ecr-retention: never in a Lambda asset (the asset holds `ecr_retention` only).

- `emulator`: moto (5.2.5) made to behave like AWS where the pipeline depends on it, and helpers that seed it;
- `scenario`: what the demo's registry and the tests' realistic registry are both built from;
- `demo`: `ecr-retention demo`, the whole pipeline on the emulator in server mode, in this process.

moto is a development dependency (requirements-dev.txt): only `ecr-retention demo`, the tests and the benchmarks
import this package, and the CLI only when the demo command runs.
"""
