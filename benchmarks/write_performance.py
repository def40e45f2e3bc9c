"""`make bench`: run every benchmark in its own process and write their figures to docs/performance.md.

Figures are this machine's, printed as measured; nothing here asserts anything about time.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = [
    ("Engine: plan time and memory", "plan_bench.py"),
    ("API efficiency and end to end", "pipeline_bench.py"),
    ("Lifecycle simulator and doctor", "lifecycle_bench.py"),
    ("Exporter", "export_bench.py"),
    ("Lambda cold start", "asset_bench.py"),
    ("Report page: render, size and first paint", "report_page.py"),
    ("Report step: time and peak memory", "report_step.py"),
]


def lambda_asset_size() -> str:
    """The function asset `make synth` bundled, if it is there."""
    assets = [
        path for path in (ROOT / "cdk.out").glob("asset.*") if path.is_dir() and (path / "ecr_retention").is_dir()
    ]
    if not assets:
        return "no bundled asset in cdk.out (run `make synth` first)"
    newest = max(assets, key=lambda path: path.stat().st_mtime)
    size = sum(file.stat().st_size for file in newest.rglob("*") if file.is_file())
    return f"{size / 2**20:.1f} MiB unzipped ({newest.name})"


def main() -> None:
    sections = [
        "# Performance",
        "",
        f"Measured by `make bench` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC: {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()} {platform.release()}. "
        "Wall times vary by about a third from run to run on a shared 2-core machine; tests never assert them.",
        "",
    ]
    for title, script in BENCHMARKS:
        print(f"running {script} ...", file=sys.stderr)
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / script)], capture_output=True, text=True, check=False
        )
        output = "\n".join(line for line in done.stdout.splitlines() if "HTTP/1.1" not in line)
        if done.returncode != 0:
            output += f"\n(failed with exit code {done.returncode}: {done.stderr.strip().splitlines()[-1:]})"
        print(output)
        sections += [f"## {title}", "", f"`benchmarks/{script}`, {time.perf_counter() - started:.0f} s in all:", "",
                     "```", output.rstrip(), "```", ""]  # fmt: skip
    sections += ["## Lambda asset", "", lambda_asset_size(), ""]
    (ROOT / "docs" / "performance.md").write_text("\n".join(sections))
    print("wrote docs/performance.md", file=sys.stderr)


if __name__ == "__main__":
    main()
