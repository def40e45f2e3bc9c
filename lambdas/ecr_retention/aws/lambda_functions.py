"""Lambda container-image functions in one account and region, read-only (ports.FunctionReader): every function
with PackageType Image, $LATEST and every published version, their aliases, and each version's image."""

from __future__ import annotations

from typing import Any

from ecr_retention.aws.reading import InventoryReadFailed, read, read_unless_gone
from ecr_retention.domain.inventory.aws import FunctionAlias, FunctionCode, digest_of_resolved_uri

PAGE_SIZE = 50  # the most ListFunctions and ListAliases return
FUNCTION_GONE = frozenset({"ResourceNotFoundException"})


class LambdaFunctions:
    def __init__(self, lambda_client: Any) -> None:
        self._client = lambda_client

    def image_functions(self) -> dict[str, list[str]]:
        def versions() -> dict[str, list[str]]:
            # FunctionVersion ALL lists $LATEST and every published version in one listing of the account.
            pages = self._client.get_paginator("list_functions").paginate(
                FunctionVersion="ALL", PaginationConfig={"PageSize": PAGE_SIZE}
            )
            found: dict[str, list[str]] = {}
            for page in pages:
                for function in page.get("Functions", []):
                    if function.get("PackageType") == "Image":
                        found.setdefault(str(function["FunctionName"]), []).append(str(function["Version"]))
            return found

        return read("ListFunctions", "Lambda functions", versions)

    def aliases(self, function: str) -> list[FunctionAlias]:
        def listed() -> list[dict[str, Any]]:
            pages = self._client.get_paginator("list_aliases").paginate(
                FunctionName=function, PaginationConfig={"PageSize": PAGE_SIZE}
            )
            return [alias for page in pages for alias in page.get("Aliases", [])]

        aliases = read_unless_gone("ListAliases", f"Lambda function {function}", listed, FUNCTION_GONE) or []
        return [
            FunctionAlias(
                name=str(alias["Name"]),
                versions=tuple(
                    dict.fromkeys(
                        [
                            str(alias["FunctionVersion"]),
                            *((alias.get("RoutingConfig") or {}).get("AdditionalVersionWeights") or {}),
                        ]
                    )
                ),
            )
            for alias in aliases
        ]

    def code(self, function: str, qualifier: str) -> FunctionCode | None:
        where = f"Lambda function {function}:{qualifier}"
        response = read_unless_gone(
            "GetFunction",
            where,
            lambda: self._client.get_function(FunctionName=function, Qualifier=qualifier),
            FUNCTION_GONE,
        )
        if response is None:
            return None
        code = response.get("Code") or {}
        image_uri = code.get("ImageUri")
        if not image_uri:
            raise InventoryReadFailed(
                f"{where}: GetFunction returned no Code.ImageUri for an image function", code="NoImageUri"
            )
        return FunctionCode(image_uri=str(image_uri), digest=digest_of_resolved_uri(code.get("ResolvedImageUri")))
