"""A module that defines a pydantic model does not postpone its annotations (no `from __future__ import annotations`).

Why: pydantic evaluates each field's annotation when the class is created, and a postponed one is a string it
compiles and evaluates again (about 20 us a field); the functions build 50 to 60 models at their cold start, so the
strings cost the evaluate and report steps about 4.5 ms of CPU each at import (issue 46, item 4: each handler's cold
import within 1.5x its floor; benchmarks/asset_bench.py measures it). Where such a module names a type before it is
defined, or one imported for type checking only, that annotation is quoted. Other modules may postpone theirs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[2] / "lambdas"

# Every module of the package but the CDK constructs (they need aws_cdk) and the CLI's entry point (it runs the CLI);
# then each module that defines a model, and whether it postponed its annotations.
COLLECT = """
import __future__, importlib, json, pkgutil, sys
from pydantic import BaseModel
import ecr_retention

for info in pkgutil.walk_packages(ecr_retention.__path__, "ecr_retention."):
    if info.name.startswith("ecr_retention.cdk") or info.name.endswith("__main__"):
        continue
    importlib.import_module(info.name)

def subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)

modules = {sub.__module__ for sub in subclasses(BaseModel) if sub.__module__.startswith("ecr_retention.")}
print(json.dumps({name: sys.modules[name].__dict__.get("annotations") is __future__.annotations for name in modules}))
"""


def model_modules() -> dict[str, bool]:
    answer = subprocess.run(
        [sys.executable, "-c", COLLECT], cwd=PACKAGE_ROOT, capture_output=True, text=True, check=True, timeout=120
    )
    modules: dict[str, bool] = json.loads(answer.stdout)
    return modules


def test_no_module_that_defines_a_model_postpones_its_annotations() -> None:
    modules = model_modules()
    postponing = sorted(name for name, postponed in modules.items() if postponed)
    assert not postponing, (
        f"{', '.join(postponing)}: a module that defines a pydantic model does not use `from __future__ import "
        "annotations` (pydantic would compile every field's string again at each cold start); quote an annotation "
        "that names a type defined later or imported for type checking only"
    )


def test_the_check_sees_the_models_of_each_function() -> None:
    modules = model_modules()
    assert {
        "ecr_retention.domain.config",
        "ecr_retention.domain.inventory.manifest",
        "ecr_retention.domain.reporting.report",
        "ecr_retention.domain.sentinel.trail_events",
        "ecr_retention.handlers.settings",
    } <= modules.keys()
