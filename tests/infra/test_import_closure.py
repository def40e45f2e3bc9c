"""The handlers' import closure, which decides what the Lambda asset ships (infra/import_closure.py)."""

from __future__ import annotations

from pathlib import Path

from ecr_retention.cdk.import_closure import shipped_files, shipped_modules


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def package(tmp_path: Path) -> Path:
    return write(
        tmp_path / "pkg",
        {
            "__init__.py": "",
            "handlers/__init__.py": "",
            "handlers/report.py": "from pkg.services import report\n",
            "handlers/push.py": "from ..workflow import RunRequest\n",
            "services/__init__.py": "",
            "services/report.py": "def render():\n    from pkg.page import render_page\n",
            "services/restore.py": "import pkg.commands\n",
            "workflow.py": "RunRequest = dict\n",
            "page/__init__.py": "from pkg.page.view import render_page\n",
            "page/view.py": "import json\n",
            "page/templates/run.html.j2": "<p>{{ run }}</p>",
            "commands/__init__.py": "",
            "cli.py": "import pkg.commands\n",
        },
    )


def test_the_closure_follows_absolute_relative_and_lazy_imports_and_names_imported_from_packages(
    tmp_path: Path,
) -> None:
    root = package(tmp_path)
    assert shipped_modules(root) == {
        "pkg",
        "pkg.handlers",
        "pkg.handlers.push",
        "pkg.handlers.report",
        "pkg.services",
        "pkg.services.report",
        "pkg.workflow",
        "pkg.page",
        "pkg.page.view",
    }


def test_the_shipped_files_are_the_modules_and_the_data_of_their_packages(tmp_path: Path) -> None:
    root = package(tmp_path)
    names = {path.relative_to(root).as_posix() for path in shipped_files(root)}
    assert "page/templates/run.html.j2" in names
    assert not {"cli.py", "services/restore.py", "commands/__init__.py"} & names
