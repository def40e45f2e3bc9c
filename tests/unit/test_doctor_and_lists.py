"""Tag lists read as AND, on every shape (issue 35): one image carrying every entry does not silence the finding,
the fixed policy splits the rule, and a count the fixed policy raises keeps the author's number of images of its own
in the evaluated registry. Each fixed policy is run through the lifecycle simulator, as ECR would apply it."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from ecr_retention.domain.doctor.diagnosis import diagnose
from ecr_retention.domain.doctor.diagnosis_model import RepositoryDiagnosis
from ecr_retention.domain.doctor.fixes import intended_own_images
from ecr_retention.domain.doctor.models import SplitRule
from ecr_retention.domain.lifecycle.evaluation import LifecycleEvaluation, evaluate
from ecr_retention.domain.lifecycle.matching import selects, tag_matches
from ecr_retention.domain.lifecycle.parsing import parse_policy
from ecr_retention.domain.lifecycle.policy import LifecyclePolicy, LifecycleRule
from ecr_retention.domain.registry.images import ImageDetail
from support.builders import NOW, image

DAY = timedelta(days=1)


def rule(priority: int, selection: dict[str, Any], description: str | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"rulePriority": priority, "selection": selection, "action": {"type": "expire"}}
    return data | ({"description": description} if description else {})


def keep(n: int, status: str = "any", **tags: list[str]) -> dict[str, Any]:
    return {"tagStatus": status, **tags, "countType": "imageCountMoreThan", "countNumber": n}


def policy(*rules: dict[str, Any]) -> LifecyclePolicy:
    return parse_policy(json.dumps({"rules": list(rules)}, indent=2))


def repo(*details: dict[str, Any]) -> list[ImageDetail]:
    return [ImageDetail.model_validate({**d, "repositoryName": "app"}) for d in details]


def run(pol: LifecyclePolicy, images: list[ImageDetail]) -> RepositoryDiagnosis:
    return diagnose(pol, images, now=NOW, repository_name="app")


def fixed(diagnosis: RepositoryDiagnosis) -> LifecyclePolicy:
    assert diagnosis.fixed_policy is not None, diagnosis.fixed_policy_problem
    return parse_policy(json.dumps(diagnosis.fixed_policy, indent=2))


def own_images_kept(evaluation: LifecycleEvaluation, rule: LifecycleRule) -> int:
    """The images the rule selects first (so it can act on them) that no rule removes."""
    return sum(
        1
        for selected in evaluation.rule(rule.rule_priority).selected
        if evaluation.first_selector[selected.image_digest] == rule.rule_priority
        and evaluation.action_of(selected.image_digest) is None
    )


def lost_to_lower_rules(pol: LifecyclePolicy, evaluation: LifecycleEvaluation, listing: LifecycleRule) -> set[str]:
    """Images tagged for some entry of `listing` (not every one) that a rule below it removes."""
    return {
        detail.image_digest
        for detail in evaluation.images
        if any(tag_matches(tag, p) for tag in detail.image_tags for p in listing.selection.patterns)
        and not selects(listing.selection, detail)
        and detail.image_digest in evaluation.verdicts
        and evaluation.verdicts[detail.image_digest].rule.rule_priority > listing.rule_priority
    }


# The shape of a real policy applied to well over a hundred namespaces of one public platform: "keep the last 10
# staging and dev images" as one tagPatternList, then the last 20 images of all. CI moves `dev` onto the newest
# staging build, so one image carries both entries, and the rule selects that one image only.
STAGING_DEV = policy(
    rule(1, keep(10, "tagged", tagPatternList=["staging-*", "dev"]), "keep the last 10 staging and dev images"),
    rule(2, keep(20), "keep the last 20 images"),
)
STAGING_DEV_IMAGES = repo(
    *(image(f"s{n}", f"staging-{n}", *(["dev"] if n == 30 else []), age=(31 - n) * DAY) for n in range(1, 31)),
    *(image(f"m{n}", f"main-{n}", age=(31 - n) * DAY + DAY / 2) for n in range(1, 31)),
)


def test_one_image_carrying_every_entry_does_not_silence_the_finding() -> None:
    diagnosis = run(STAGING_DEV, STAGING_DEV_IMAGES)

    [finding] = [f for f in diagnosis.findings if f.code == "tag-list-is-and"]
    assert finding.severity == "error"  # `dev` names one tag: read as AND, the rule selects one image at most
    assert finding.message == (
        "rule 1 selects only the image that carries a tag for each entry: ECR requires a tag for every entry "
        "(tagPatternList staging-*, dev), so an image tagged for one entry only falls to the rules below it; "
        "of the 30 staging-* images, 1 carries every entry and is selected by rule 1, which expires none of them yet, "
        "29 fall to rule 2 and 20 of them expire; dev images carry every entry and are selected by rule 1, which "
        "expires none of them yet"
    )
    assert finding.policy_edit == SplitRule(rule_priority=1, entries=("staging-*", "dev"))


def test_the_fixed_policy_splits_the_rule_and_no_lower_rule_removes_an_image_because_of_the_and() -> None:
    before = evaluate(STAGING_DEV, STAGING_DEV_IMAGES, NOW)
    lost = lost_to_lower_rules(STAGING_DEV, before, STAGING_DEV.ordered_rules[0])
    assert len(lost) == 20  # the staging builds that rule 2 expires today

    after_policy = fixed(run(STAGING_DEV, STAGING_DEV_IMAGES))
    after = evaluate(after_policy, STAGING_DEV_IMAGES, NOW)

    staging_part = next(r for r in after_policy.ordered_rules if r.selection.patterns == ("staging-*",))
    assert staging_part.selection.count_number >= 10
    for digest in lost:
        verdict = after.verdicts.get(digest)
        assert verdict is None or verdict.rule is staging_part  # expired by the rule its author wrote, if at all
    assert own_images_kept(after, staging_part) == 10


def test_the_catch_all_below_the_split_keeps_its_authors_20_of_its_own() -> None:
    """After the split the staging builds are the staging rule's, and the ones it expires still take slots in the
    catch-all's count in the same evaluation: the raised count makes room for them too."""
    after_policy = fixed(run(STAGING_DEV, STAGING_DEV_IMAGES))
    after = evaluate(after_policy, STAGING_DEV_IMAGES, NOW)

    catch_all = after_policy.ordered_rules[-1]
    assert catch_all.selection.tag_status == "any"
    assert intended_own_images(catch_all) == 20
    assert own_images_kept(after, catch_all) == 20
    # and nothing that the author's policy kept is expired by the fix
    assert set(after.verdicts) <= set(evaluate(STAGING_DEV, STAGING_DEV_IMAGES, NOW).verdicts)


def test_a_raised_count_keeps_the_authors_number_when_a_higher_rule_removes_an_image_it_ranks() -> None:
    """`release-*` keeps 2, the catch-all keeps 5. release-2 is beyond the release rule's count, and it still takes
    one of the catch-all's 5 slots in the same evaluation: a count raised for the two releases that stay only
    (7) keeps 4 main builds, one fewer than the author's 5."""
    images = repo(
        image("r4", "release-4", age=1 * DAY),
        image("r3", "release-3", age=2 * DAY),
        image("m5", "main-5", age=3 * DAY),
        image("r2", "release-2", age=4 * DAY),
        image("m4", "main-4", age=5 * DAY),
        image("m3", "main-3", age=6 * DAY),
        image("m2", "main-2", age=7 * DAY),
        image("m1", "main-1", age=8 * DAY),
        image("m0", "main-0", age=9 * DAY),
        image("r1", "release-1", age=10 * DAY),
    )
    pol = policy(rule(1, keep(2, "tagged", tagPatternList=["release-*"])), rule(2, keep(5)))

    diagnosis = run(pol, images)
    [finding] = [f for f in diagnosis.findings if f.code == "count-reduced"]
    assert "sha256:db77fd01af95 [release-2] (selected by rule 1, which removes it now)" in finding.message
    after_policy = fixed(diagnosis)
    catch_all = after_policy.ordered_rules[-1]

    assert catch_all.selection.count_number == 8
    assert own_images_kept(evaluate(after_policy, images, NOW), catch_all) == 5


def test_a_list_whose_images_for_one_entry_stay_below_it_is_not_reported() -> None:
    """The entries co-occur on some images, and the images tagged for one entry only fall to a rule that keeps
    them: nothing is lost to the AND, so nothing is said."""
    images = repo(
        image("a", "alpha-1", "beta-1", age=DAY),
        image("b", "alpha-2", age=2 * DAY),
        image("c", "beta-2", age=3 * DAY),
    )
    pol = policy(rule(1, keep(1, "tagged", tagPatternList=["alpha*", "beta*"])), rule(2, keep(5)))
    assert [f for f in run(pol, images).findings if f.code == "tag-list-is-and"] == []


def test_entries_that_co_occur_with_wildcards_and_lose_images_below_are_an_error_too() -> None:
    """Both entries are patterns and some images carry both: the images tagged for one entry that fall below are lost
    all the same, so the same error as when no image carries both (issue 43), with the split in the fixed policy."""
    images = repo(
        image("a", "alpha-1", "beta-1", age=DAY),
        image("b", "alpha-2", age=2 * DAY),
        image("c", "beta-2", age=3 * DAY),
        image("d", "alpha-3", age=4 * DAY),
    )
    pol = policy(rule(1, keep(3, "tagged", tagPatternList=["alpha*", "beta*"])), rule(2, keep(2)))

    diagnosis = run(pol, images)

    [finding] = [f for f in diagnosis.findings if f.code == "tag-list-is-and"]
    assert finding.severity == "error"
    assert "of the 3 alpha* images, 1 carries every entry and is selected by rule 1" in finding.message
    assert "2 fall to rule 2 and 1 of them expires" in finding.message
    assert [r.selection.patterns for r in fixed(diagnosis).ordered_rules[:2]] == [("alpha*",), ("beta*",)]
