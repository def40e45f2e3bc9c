"""A finding on a repository creation template's lifecycle policy: the report step's (and the CLI doctor's), so that
a function that never checks creation templates (the evaluate step) builds none of it at its cold start
(tests/unit/test_handler_imports.py)."""

from typing import Any

from pydantic import Field

from ecr_retention.domain.doctor.models import Finding


def _unnamed(region: str | None) -> bool:
    return region is None


class TemplateFinding(Finding):
    """A finding on a template's lifecycle policy: `prefix` names the template; `region` the Region of its registry
    when the run prunes several (each Region's registry has its own templates), left out of one Region's report."""

    prefix: str
    applied_for: tuple[str, ...] = ()
    region: str | None = Field(default=None, exclude_if=_unnamed)

    @property
    def template(self) -> str:
        """How people name the template: `ROOT`, or with its Region when the run prunes several (`us-east-1:ROOT`)."""
        return f"{self.region}:{self.prefix}" if self.region is not None else self.prefix

    def to_json_dict(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        for key in ("imageTags", "inUseBy"):
            if not data[key]:
                del data[key]
        return data
