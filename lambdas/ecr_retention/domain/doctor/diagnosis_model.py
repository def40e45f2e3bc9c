"""One repository's diagnosis (what the doctor reports on a repository's lifecycle policy): built where a policy is
diagnosed (diagnosis.py, the CLI's doctor), so that a function that only reads findings (the evaluate step's report
holds them) builds none of it at its cold start (tests/unit/test_handler_imports.py)."""

from typing import Any

from ecr_retention.domain.doctor.models import SEVERITY_ORDER, DoctorModel, Finding, Severity


class RepositoryDiagnosis(DoctorModel):
    repository_name: str | None = None
    findings: tuple[Finding, ...]
    in_use_checked: bool = True  # False: no in-use manifest was given, so no image was checked against one
    # Every policy edit of the findings applied together, re-checked until the doctor finds nothing left
    # that a policy edit fixes. None when no finding has an edit, or when `fixed_policy_problem` says why not.
    fixed_policy: dict[str, Any] | None = None
    fixed_policy_problem: str | None = None
    # What the doctor still finds with the fixed policy: findings that no policy edit can fix.
    fixed_policy_findings: tuple[Finding, ...] = ()
    # Registries where ECR repeats this policy's expiries (replication rules with deleteReplication).
    expiries_replicate_to: tuple[str, ...] = ()

    def count(self, severity: Severity) -> int:
        return sum(1 for finding in self.findings if finding.severity == severity)

    @property
    def has_errors(self) -> bool:
        return self.count("error") > 0

    @property
    def notes(self) -> tuple[str, ...]:
        notes: tuple[str, ...] = () if self.in_use_checked else (IN_USE_SKIPPED,)
        if self.expiries_replicate_to:
            notes += (replicated_expiries_note(self.expiries_replicate_to),)
        return notes

    def to_json_dict(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        for finding in (*data["findings"], *data["fixedPolicyFindings"]):
            for key in ("imageTags", "inUseBy"):
                if not finding[key]:
                    del finding[key]
        if not data["fixedPolicyFindings"]:
            del data["fixedPolicyFindings"]
        data["notes"] = list(self.notes)
        data["summary"] = {severity + "s": self.count(severity) for severity in SEVERITY_ORDER}
        return data


def replicated_expiries_note(registries: tuple[str, ...]) -> str:
    return (
        f"this policy's expiries replicate to {', '.join(registries)} (deleteReplication): every image it expires "
        "is deleted there too, so the in-use check counts the clusters that pull from there"
    )


IN_USE_SKIPPED = (
    "in-use check skipped: no in-use manifest was given, so the doctor cannot tell whether the policy "
    "would remove an image that runs in a cluster (pass --manifests DIR)"
)
