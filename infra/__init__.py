"""The CDK constructs and the stack of ecr-retention; no business logic lives here.

`from ecr_retention.cdk import EcrRetention, DeploySettings, forwarder_stacks` in any CDK app (docs/deploy.md, "In
your own CDK app"). Each name is imported on first use, so that the package's other modules (its constants, the
templates of spoke_templates) load without aws-cdk-lib and without an import cycle.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ecr_retention.extras import install_hint, missing_extra

if TYPE_CHECKING:
    from ecr_retention.cdk.deploy_settings import DeploySettings
    from ecr_retention.cdk.region_forwarder import forwarder_stacks
    from ecr_retention.cdk.retention import EcrRetention
    from ecr_retention.cdk.stack import EcrRetentionStack

# The public names, by the module that defines them.
_HOMES = {
    "DeploySettings": "deploy_settings",
    "EcrRetention": "retention",
    "EcrRetentionStack": "stack",
    "forwarder_stacks": "region_forwarder",
}
__all__ = ["DeploySettings", "EcrRetention", "EcrRetentionStack", "forwarder_stacks"]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:  # a submodule (`from ecr_retention.cdk import constants`) is imported by the import system
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        module = import_module(f"{__name__}.{home}")
    except ModuleNotFoundError as error:
        if missing_extra(error) != "cdk":
            raise
        # The construct needs aws-cdk-lib and constructs, which only the cdk extra installs: said so, not just "No module".
        raise ModuleNotFoundError(f"{name} needs the cdk extra: {install_hint('cdk')}", name=error.name) from error
    return getattr(module, name)
