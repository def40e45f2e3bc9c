"""The workflow's state machine, synthesized by the CDK and run on moto: quiet jsii (see tests/infra/conftest.py)."""

from __future__ import annotations

import os

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
