"""The CloudFormation templates deployed outside the hub stack, shipped with the package: the spoke accounts' reader
role and EKS access entries (docs/aws-inventory.md) and the management account's SCP that keeps every principal from
invoking the sentinel (docs/security.md). `python -m ecr_retention.cdk.spoke_templates NAME` prints the installed
file's path, for `aws cloudformation deploy --template-file "$(...)"` or a StackSet."""

from __future__ import annotations

import sys
from pathlib import Path

DIRECTORY = Path(__file__).parent / "cloudformation"
SPOKE_READER_ROLE = "spoke-reader-role.yaml"
SPOKE_EKS_ACCESS = "spoke-eks-access.yaml"
SENTINEL_INVOKE_SCP = "sentinel-invoke-scp.yaml"
TEMPLATES = (SPOKE_READER_ROLE, SPOKE_EKS_ACCESS, SENTINEL_INVOKE_SCP)


def template_path(name: str) -> Path:
    """The installed template `name` (one of TEMPLATES); ValueError for any other name."""
    if name not in TEMPLATES:
        raise ValueError(f"{name}: no such template (one of {', '.join(TEMPLATES)})")
    return DIRECTORY / name


def main(arguments: list[str]) -> int:
    if len(arguments) != 1 or arguments[0] not in TEMPLATES:
        print(f"usage: python -m ecr_retention.cdk.spoke_templates {{{','.join(TEMPLATES)}}}", file=sys.stderr)
        return 2
    print(template_path(arguments[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
