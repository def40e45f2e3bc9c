"""The context of cdk.json, for apps that the CDK CLI does not start (`python app.py`, tests).

The CLI passes cdk.json's context to the app itself; reading it here as App defaults makes
`python app.py`, `cdk synth` and the infra tests synthesize with the same feature flags. The app names its own
cdk.json (the CLI's is the working directory's): the package knows no repository.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CDK_JSON = Path("cdk.json")


def cdk_json_context(cdk_json: Path = CDK_JSON) -> dict[str, Any]:
    context = json.loads(cdk_json.read_text(encoding="utf-8")).get("context", {})
    if not isinstance(context, dict):
        raise ValueError(f"{cdk_json}: context must be a JSON object")
    return context
