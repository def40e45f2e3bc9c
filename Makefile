# One command surface. Every target creates .venv when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: demo test fast lint typecheck unit synth lock bench screenshots clean

# Two distributions, both installed editable: ecr-retention (the root: what the Lambdas ship) and ecr-retention-dev
# (this directory: the demo and the emulator, which need moto).
DEV := lambdas/ecr_retention_dev

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml $(DEV)/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	$(BIN)/python -m pip install --quiet --no-deps -e . -e $(DEV)
	touch $(STAMP)

# The whole pipeline against moto in server mode, in one process; exits non-zero unless the demo verified its run.
demo: $(STAMP)
	$(BIN)/ecr-retention demo

# The complexity gate is radon's grades at the Handler Cookbook's bar: no block worse than B, every module and the
# average A (ruff's C90 stays, mccabe's count at 15). The product package has headroom below B's 10: no block above 8
# (tools/complexity_gate.py).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/xenon --max-absolute B --max-modules A --max-average A lambdas infra
	$(BIN)/python tools/complexity_gate.py --max 8 lambdas/ecr_retention

typecheck: $(STAMP)
	$(BIN)/mypy lambdas/ecr_retention $(DEV) app.py tests/support

# The suite on every core (pytest-xdist, work stealing: the slow e2e and synthesis tests do not hold a worker's queue
# back), the 15 slowest tests printed. `PYTEST_WORKERS=0` runs it serially.
PYTEST_WORKERS ?= auto
test: lint typecheck
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist worksteal --durations=15

# The pure tier: domain, services on fakes, the CLI offline, the recorded outputs (about a minute).
unit: $(STAMP)
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) tests/unit tests/golden

# The loop before a commit, under 90 s on 2 cores: lint, types and the unit tier. The rest (moto, CDK synthesis, the
# demo, the browser) is `make test`'s, before a stop.
fast: lint typecheck
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist worksteal -m "unit and not slow"

synth: $(STAMP)
	$(BIN)/python app.py

# infra/requirements-lambda.txt (package data of ecr_retention.cdk), the Lambda asset's full lock: every distribution
# requirements.txt brings in, pinned with its wheel's sha256 for the functions' runtime and architecture (infra/constants.py). Needs the package index; run it after
# changing requirements.txt, the runtime or the architecture (docs/deploy.md).
lock: $(STAMP)
	$(BIN)/python tools/lock_lambda.py

# docs/performance.md: the goals of issue 26 beside the figures, then every benchmark's output (10-25 minutes on
# 2 shared cores). TREE=<checkout> measures another checkout's code with these benchmarks, OUT=<file> writes elsewhere.
bench: $(STAMP)
	$(BIN)/python benchmarks/write_performance.py $(if $(TREE),--tree $(TREE)) $(if $(OUT),--out $(OUT))

# docs/images/report-page.png: the demo's real-run page in headless Chromium (apt-get install chromium).
screenshots: $(STAMP)
	$(BIN)/python tools/screenshots.py

clean:
	rm -rf $(VENV) cdk.out .pytest_cache .mypy_cache .ruff_cache
