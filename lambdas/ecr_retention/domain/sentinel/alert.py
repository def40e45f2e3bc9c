"""The sentinel's words (SPEC "The sentinel"): what a removal broke, and the one alert that tells it. Pure: the service
(services/sentinel.py) confirms with the registry what is broken and hands the result here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ecr_retention.domain.in_use.references import PulledReference, Removal, memory_notes, workload_names
from ecr_retention.domain.registry.digests import short_digest

if TYPE_CHECKING:
    # The doctor's models load where a policy is diagnosed (services/sentinel.py, a PutLifecyclePolicy event only).
    from ecr_retention.domain.doctor.models import Finding

# gone: the next pull cannot get it; archived: it is ARCHIVED (pulls fail until it is restored); child-gone and
# child-archived: the index is there, but the platform image a removal took is not pullable; unconfirmed: the
# registry could not be asked, so it may be any of these.
Breakage = Literal["gone", "archived", "child-gone", "child-archived", "repository-gone", "unconfirmed"]
ALERT_SUBJECT_PREFIX = "ecr-retention sentinel"
# The message attributes of every sentinel alert (subscribers filter on kind=sentinel), the guards' alerts included.
ALERT_ATTRIBUTES = {"kind": "sentinel"}
DELETED: frozenset[Breakage] = frozenset({"gone", "child-gone", "repository-gone", "unconfirmed"})
DELETED_NOTE = (
    "A deleted image cannot be brought back by ecr-retention: push it again (the same build gives the same digest) or "
    "roll the workloads to an image that exists. Until then each sweep reports it as in-use-missing."
)
# The doctor's findings that a new policy would take something (SPEC: in-use images and mutable tags).
TAKING_FINDINGS = frozenset({"expires-in-use", "archives-in-use", "mutable-tag-expires"})


@dataclass(frozen=True)
class Broken:
    """A reference a removal broke, as the registry confirmed it. `restored`: what became of the restore an archived
    image gets, in words (None: not archived)."""

    reference: PulledReference
    removal: Removal
    breakage: Breakage
    restored: str | None = None
    restoring: bool = False  # the sentinel started its restore (ECR answered ACTIVATING)

    @property
    def archived_digest(self) -> str | None:
        """The digest a restore brings back: the image itself, or the index's child the removal archived."""
        if self.breakage == "archived":
            return self.reference.digest or self.removal.image_digest
        if self.breakage == "child-archived":
            return self.removal.image_digest
        return None

    @property
    def what_follows(self) -> str:
        image = self.reference.image
        return {
            "gone": f"{image} no longer exists: the next pull fails",
            "repository-gone": f"repository {self.reference.repository} no longer exists: the next pull of {image} fails",
            "archived": f"{image} is ARCHIVED: the next pull fails until it is restored",
            "child-gone": f"a platform image of {image} ({self._child}) no longer exists: the next pull on that "
            "platform fails",
            "child-archived": f"a platform image of {image} ({self._child}) is ARCHIVED: the next pull on that "
            "platform fails until it is restored",
            "unconfirmed": f"{image} may be gone (the registry could not be asked to confirm): the next pull may fail",
        }[self.breakage]

    @property
    def _child(self) -> str:
        return short_digest(self.removal.image_digest or "", with_algorithm=True)

    def lines(self) -> list[str]:
        workloads = self.reference.workloads
        found = [f"- {self.what_follows}.", f"  Runs in: {workload_names(workloads)}{memory_notes(workloads)}."]
        if self.restored:
            found.append(f"  Restore: {self.restored}.")
        return found


def removed_image(removal: Removal) -> str:
    """`app@sha256:1a2b3c4d5e6f (tags dev, 1.2.3)`."""
    digest = f"@{short_digest(removal.image_digest, with_algorithm=True)}" if removal.image_digest else ""
    tags = f" (tags {', '.join(removal.image_tags)})" if removal.image_tags else ""
    return f"{removal.repository_name}{digest}{tags}"


def alert_subject(broken: Sequence[Broken], region: str | None = None) -> str:
    """`ecr-retention sentinel: app:dev deleted while dev/Deployment/app runs it (and 1 more)`; with `region` (a
    deployment of several Regions names the one the removal happened in): `app:dev deleted in us-east-1 while ...`."""
    first = broken[0]
    more = f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""
    workload = first.reference.workloads[0] if first.reference.workloads else None
    runs = f" while {workload.namespace}/{workload.workload} runs it" if workload is not None else ""
    return f"{ALERT_SUBJECT_PREFIX}: {first.reference.image} {first.removal.action}{_in(region)}{runs}{more}"


def _in(region: str | None) -> str:
    return f" in {region}" if region is not None else ""


def alert_body(broken: Sequence[Broken], notes: Sequence[str] = (), region: str | None = None) -> str:
    """One alert for every reference an event broke, grouped by the removal that broke them. `region`: the Region of
    the registry, named when the deployment prunes several."""
    where = f"the registry of {region}" if region is not None else "this registry"
    lines = [f"Workloads run images that were just removed or archived in {where}.", *_removal_lines(broken)]
    lines += ["", *notes] if notes else []
    if any(item.breakage in DELETED for item in broken):
        lines += ["", DELETED_NOTE]
    return "\n".join(lines)


def _removal_lines(broken: Sequence[Broken]) -> list[str]:
    """Each removal, and what it broke."""
    lines: list[str] = []
    for removal in dict.fromkeys(item.removal for item in broken):
        lines += ["", f"{removed_image(removal)}: {removal.told}."]
        for item in broken:
            if item.removal is removal:
                lines += item.lines()
    return lines


def policy_alert(
    repository: str, principal: str | None, findings: Sequence[Finding], region: str | None = None
) -> tuple[str, str]:
    """What a new native lifecycle policy would take (PutLifecyclePolicy through a trail), before ECR applies it.
    `region`: the Region of the repository's registry, named when the deployment prunes several."""
    by = f" by {principal}" if principal else ""
    subject = f"{ALERT_SUBJECT_PREFIX}: the new lifecycle policy of {repository}{_in(region)} would take in-use images or tags"
    lines = [
        f"A lifecycle policy was just put on {repository}{_in(region)}{by}. ECR applies it within 24 hours. It would:"
    ]
    for finding in findings:
        lines.append(f"- {finding.message}")
        if finding.in_use_by:
            lines.append(f"  Runs in: {workload_names(finding.in_use_by)}{memory_notes(finding.in_use_by)}.")
        lines.append(f"  Fix: {finding.fix}")
    lines += ["", "Check it offline with `ecr-retention doctor` and `ecr-retention lifecycle-preview`."]
    return subject, "\n".join(lines)
