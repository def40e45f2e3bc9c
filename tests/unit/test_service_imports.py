"""The services' own import graph, written down (issue 36; docs/architecture.md, "Where new code goes"): one
orchestrating module per entry point, each step it composes beneath it, and building blocks that import no sibling.
A new edge between services is a design decision: it fails here until this table and the document say so."""

from __future__ import annotations

import ast
from pathlib import Path

SERVICES = Path(__file__).resolve().parents[2] / "lambdas" / "ecr_retention" / "services"
PACKAGE = "ecr_retention.services"

# Orchestration: the handlers and the CLI call these, no service does.
ENTRY_POINTS = {
    "run": {  # the CLI's whole run: the workflow's steps in one process
        "evaluate",
        "inventory",
        "report",
        "report_step",
        "snapshot",
        "targets_step",
    },
    "sentinel": {"act", "inventory", "removals", "replication", "snapshot"},
    "tagger": {"act"},
    "restore": {"act", "snapshot"},
    "holds": {"inventory"},
}
# The workflow's steps: each its Lambda's one service (a handler calls it), which only `run` composes; each imports
# only steps and building blocks, so that a function loads none of the other steps' modules at its cold start.
WORKFLOW_STEPS = {
    "targets_step": {"replication"},
    "evaluate_step": {
        "act",  # DEADLINE_MARGIN_SECONDS: a batch's reserve starts from it (services.evaluate_step.BatchReserve)
        "evaluate",
        "inventory",
        "snapshot",
    },
    "report_step": {"in_use_check", "inventory", "memory", "report", "templates"},
}
# Steps: a use case of one entry point's that composes building blocks, and nothing above them.
STEPS = {
    "evaluate": {"act", "replicas", "snapshot", "swept"},
    "in_use_check": {"removals"},
    "eks_inventory": {"aws_inventory"},
    "inspector_inventory": {"aws_inventory"},
}
ALLOWED = {**ENTRY_POINTS, **WORKFLOW_STEPS, **STEPS}


def sibling_imports(module: Path) -> set[str]:
    """The services a module imports, at its top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module == PACKAGE:
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(f"{PACKAGE}."):
            found.add((node.module or "").split(".")[2])
        elif isinstance(node, ast.Import):
            found.update(alias.name.split(".")[2] for alias in node.names if alias.name.startswith(f"{PACKAGE}."))
    return found - {module.stem}


def service_graph() -> dict[str, set[str]]:
    return {path.stem: sibling_imports(path) for path in sorted(SERVICES.glob("*.py")) if path.stem != "__init__"}


def test_the_services_import_each_other_only_as_written_down() -> None:
    graph = service_graph()
    assert {name: imports for name, imports in graph.items() if imports} == ALLOWED


def test_building_blocks_import_no_service_and_steps_only_building_blocks() -> None:
    graph = service_graph()
    blocks = graph.keys() - ALLOWED.keys()
    assert all(not graph[name] for name in blocks)
    assert all(graph[step] <= blocks for step in STEPS)


def test_no_service_imports_an_entry_point() -> None:
    assert not {entry for imports in service_graph().values() for entry in imports} & ENTRY_POINTS.keys()


def test_only_the_clis_run_composes_the_workflows_steps_and_each_imports_only_steps_and_building_blocks() -> None:
    graph = service_graph()
    blocks = graph.keys() - ALLOWED.keys()
    composing = {name for name, imports in graph.items() if imports & WORKFLOW_STEPS.keys()}
    assert composing == {"run"}
    assert all(graph[step] <= blocks | STEPS.keys() for step in WORKFLOW_STEPS)


RENDERING = ("ecr_retention.report_renderers", "ecr_retention.report_page", "ecr_retention.report_sheet")


def imported_modules(module: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.update([node.module, *(f"{node.module}.{alias.name}" for alias in node.names)])
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_no_service_imports_a_renderer() -> None:
    """The page, the sheet and the SNS texts are handed in (Adapters.renderers): services write reports, never
    render them."""
    rendering = {
        path.name: sorted(name for name in imported_modules(path) if name.startswith(RENDERING))
        for path in sorted(SERVICES.glob("*.py"))
    }
    assert {name: found for name, found in rendering.items() if found} == {}


def test_the_graph_reads_every_form_of_import(tmp_path: Path) -> None:
    module = tmp_path / "probe.py"
    module.write_text(
        "from ecr_retention.services import act\n"
        "import ecr_retention.services.swept\n"
        "def later():\n    from ecr_retention.services.snapshot import snapshot_repository\n"
        "from ecr_retention.services.probe import itself\n"
        "from ecr_retention.domain import planning\n"
    )
    assert sibling_imports(module) == {"act", "swept", "snapshot"}
