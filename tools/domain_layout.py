"""The domain's layout by concept (issue 36): where each module of the old flat `domain/` went, and a rewrite of every
reference to an old place (imports, patch targets, paths in docs and comments) to the new one.

    python tools/domain_layout.py            rewrite references to old places in the repository's text files
    python tools/domain_layout.py --move     move the old modules first (git mv), then rewrite

The rewrite is idempotent: a reference to a new place is never rewritten again."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOMAIN = ROOT / "lambdas" / "ecr_retention" / "domain"

# old module (dotted, under ecr_retention.domain) -> new module
MODULES = {
    "registry": "registry.images",
    "replication": "registry.replication",
    "digests": "registry.digests",
    "references": "registry.references",
    "creation_templates": "registry.creation_templates",
    "swept": "registry.swept",
    "inventory": "inventory.manifest",
    "aws_inventory": "inventory.aws",
    "eks_clusters": "inventory.eks_clusters",
    "kubernetes": "inventory.kubernetes",
    "spoke_roles": "inventory.spoke_roles",
    "manifest_evidence": "inventory.evidence",
    "in_use": "in_use.index",
    "in_use_memory": "in_use.memory",
    "suspect_readings": "in_use.suspect_readings",
    "plan": "planning.plan",
    "removal_order": "planning.removal_order",
    "ledger": "planning.ledger",
    "tagging": "planning.tagging",
    "report": "reporting.report",
    "summary": "reporting.summary",
    "cost": "reporting.cost",
    "escaping": "reporting.escaping",
    "sizes": "reporting.sizes",
    "sentinel": "in_use.references",
    "sentinel_alert": "sentinel.alert",
    "sentinel_events": "sentinel.events",
    "guard_events": "sentinel.guard_events",
    "rules_diff": "review.rules_diff",
    "lifecycle_diff": "review.lifecycle_diff",
    "diff_conditions": "review.diff_conditions",
}
PACKAGES = {"planner": "planning"}  # moved whole: every submodule keeps its name
DOCSTRINGS = {
    "registry": "A registry as ECR describes it: its coordinates, images, replication, creation templates and the "
    "snapshots a run keeps of it.",
    "inventory": "What runs, as read from its sources: the in-use manifests of the clusters, the AWS inventory, EKS, "
    "and each manifest's evidence for the report.",
    "in_use": "What counts as running: the in-use index the planner protects with, the in-use memory, and when a "
    "reading is suspect.",
    "reporting": "What a run tells people: the report, its summary, costs, sizes and the escaping of outside text.",
    "sentinel": "The sentinel: ECR's and CloudTrail's events, which images a removal touched that run, and its alert.",
    "review": "Reviewing a change before it lands: the rules diff and the lifecycle-policy diff (the CLI's `diff`).",
}
TEXT_SUFFIXES = {".py", ".md", ".toml", ".cfg", ".txt", ".yaml", ".yml", ".json", ".sh", ".ini"}
SKIP_PARTS = {".git", ".venv", "node_modules", "cdk.out", "__pycache__", ".mypy_cache", ".ruff_cache"}


def new_submodules(package: str) -> set[str]:
    """The modules of a new package: those moved into it and those written there since."""
    moved = {new.split(".", 1)[1] for new in MODULES.values() if new.startswith(package + ".")}
    return moved | {path.stem for path in (DOMAIN / package).glob("*.py")}


def rewrite(text: str) -> str:
    for old, new in PACKAGES.items():
        text = re.sub(rf"(?<![\w.])((?:ecr_retention\.)?domain)\.{old}(?!\w)", rf"\1.{new}", text)
        text = re.sub(rf"domain/{old}/", f"domain/{new}/", text)
    for old, new in MODULES.items():
        package = old if old in DOCSTRINGS else None
        # Never rewrite a reference to the new place: `domain.registry.images` stays.
        names = "|".join(sorted(new_submodules(package))) if package else ""
        guard = rf"(?!\.(?:{names})(?!\w))(?!\s+import\s+(?:{names})(?!\w))" if package else ""
        text = re.sub(rf"(?<![\w.])((?:ecr_retention\.)?domain)\.{old}(?!\w){guard}", rf"\1.{new}", text)
        text = text.replace(f"domain/{old}.py", f"domain/{new.replace('.', '/')}.py")
    return re.sub(
        r"from ecr_retention\.domain import aws_inventory\b",
        "from ecr_retention.domain.inventory import aws as aws_inventory",
        text,
    )


def text_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return [
        ROOT / name
        for name in listed
        if Path(name).suffix in TEXT_SUFFIXES
        and not SKIP_PARTS & set(Path(name).parts)
        and (ROOT / name).is_file()
        and Path(name).name != "domain_layout.py"
    ]


def move() -> None:
    def git_mv(source: Path, target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "mv", str(source), str(target)], cwd=ROOT, check=True)

    for old, new in PACKAGES.items():
        if (DOMAIN / old).is_dir():
            git_mv(DOMAIN / old, DOMAIN / new)
    staged = []
    for old, new in MODULES.items():
        source = DOMAIN / f"{old}.py"
        if source.is_file():
            # A module whose name becomes its package's goes aside first.
            aside = DOMAIN / f"_moving_{old}.py"
            git_mv(source, aside)
            staged.append((aside, DOMAIN / (new.replace(".", "/") + ".py")))
    for aside, target in staged:
        git_mv(aside, target)
    for package, docstring in DOCSTRINGS.items():
        init = DOMAIN / package / "__init__.py"
        if not init.exists():
            init.write_text(f'"""{docstring}"""\n')
            subprocess.run(["git", "add", str(init)], cwd=ROOT, check=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--move", action="store_true", help="git mv the old modules first")
    args = parser.parse_args(argv)
    if args.move:
        move()
    changed = 0
    for path in text_files():
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        new = rewrite(text)
        if new != text:
            path.write_text(new, encoding="utf-8", errors="surrogateescape")
            changed += 1
    print(f"{changed} files rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
