"""Real ECR lifecycle policies from public repositories, each converted to the JSON ECR receives (terraform's
heredocs and jsonencode, CDK's addLifecycleRule and variables rendered with the values shown), with the images of
a repository that runs it, what ECR's preview would list and what the doctor finds. The source of each policy is in
the comment above it and in `source`. Images are realistic for the policy's tags: release and CI builds, moving
tags (latest, dev), multi-arch indexes with their untagged children, untagged leftovers.

Expectations: `preview` lists (image seed, applied rule) in the preview's order; `findings` lists (severity,
code, rule) as the doctor orders them; `fixed` (optional) the fixed policy's rules as (priority, tag list or
tagStatus, countNumber). tests/unit/test_doctor_real_policies.py runs them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from support.builders import OCI_INDEX, digest, image, index_manifest

DAY = timedelta(days=1)


@dataclass(frozen=True)
class Case:
    name: str
    source: str
    policy: dict[str, Any]
    images: list[dict[str, Any]]
    preview: list[tuple[str, int]]
    findings: list[tuple[str, str, int | None]]
    manifests: dict[str, dict[str, Any]] = field(default_factory=dict)
    fixed: list[tuple[int, str, int]] | None = None


# digest -> seed of every image the corpus builds: the preview names images by seed
SEEDS: dict[str, str] = {}


def img(seed: str, *tags: str, **details: Any) -> dict[str, Any]:
    SEEDS[digest(seed)] = seed
    return image(seed, *tags, **details)


def rule(priority: int, selection: dict[str, Any], description: str | None = None, **action: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"rulePriority": priority}
    if description is not None:
        data["description"] = description
    return data | {"selection": selection, "action": {"type": "expire"} | action}


def count(n: int, status: str = "any", **tags: list[str]) -> dict[str, Any]:
    return {"tagStatus": status, **tags, "countType": "imageCountMoreThan", "countNumber": n}


def age(days: int, status: str = "any", **tags: list[str]) -> dict[str, Any]:
    return {"tagStatus": status, **tags, "countType": "sinceImagePushed", "countUnit": "days", "countNumber": days}


def builds(prefix: str, n: int, *, newest: int = 1, every: int = 2, suffix: str = "") -> list[dict[str, Any]]:
    """n images tagged `<prefix><i><suffix>`, the newest `newest` days old, one every `every` days; seed = tag."""
    return [
        img(f"{prefix}{i}{suffix}", f"{prefix}{i}{suffix}", age=(newest + (n - i) * every) * DAY)
        for i in range(1, n + 1)
    ]


def untagged(*ages: int) -> list[dict[str, Any]]:
    return [img(f"untagged-{days}d", age=days * DAY) for days in ages]


def multi_arch(tag: str, days: int) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """An index tagged `tag` with an amd64 and an arm64 child and a provenance attestation, all untagged."""
    children = [f"{tag}-amd64", f"{tag}-arm64", f"{tag}-attestation"]
    images = [img(tag, tag, media_type=OCI_INDEX, age=days * DAY)] + [img(c, age=days * DAY) for c in children]
    return images, {tag: index_manifest(*children)}


MULTI_ARCH_NEW, MANIFESTS_NEW = multi_arch("v2.4.1", 3)
MULTI_ARCH_OLD, MANIFESTS_OLD = multi_arch("v2.4.0", 20)

CASES: list[Case] = []

# --- Tag lists that are read as OR: ECR requires a tag for every entry ------------------------------------------

# DNXLabs/terraform-aws-ecr, ecr-lifecycle.tf (the module's policy, kept there commented out): "Expire images with
# feature tag" lists ten environment prefixes in one rule, then keeps 1 image of all.
CASES.append(
    Case(
        name="dnxlabs-ten-prefixes-and-any-1",
        source="DNXLabs/terraform-aws-ecr:ecr-lifecycle.tf",
        policy={
            "rules": [
                rule(1, age(14, "untagged"), "Expire images older than 14 days"),
                rule(
                    2,
                    count(
                        1,
                        "tagged",
                        tagPrefixList=[
                            "feature",
                            "prod",
                            "deploy",
                            "qa",
                            "nonprod",
                            "staging",
                            "preprod",
                            "dev",
                            "test",
                            "production",
                        ],
                    ),
                    "Expire images with feature tag",
                ),
                rule(3, count(1), "Expire images with the same tag"),
            ]
        },
        images=[
            *builds("prod-", 2, newest=2, every=7),
            *builds("staging-", 2, newest=1, every=3),
            *builds("feature-login-", 2, newest=4, every=1),
            *untagged(20, 5),
            *MULTI_ARCH_OLD,
        ],
        manifests=MANIFESTS_OLD,
        preview=[
            ("untagged-20d", 1),
            ("v2.4.0", 3),
            ("prod-1", 3),
            ("feature-login-1", 3),
            ("staging-1", 3),
            ("feature-login-2", 3),
            ("prod-2", 3),
        ],
        findings=[("error", "tag-list-is-and", 2), ("info", "untagged-rule-multi-arch", 1)],
        fixed=[
            (1, "untagged", 14),
            (2, "feature", 1),
            (3, "prod", 1),
            (4, "deploy", 1),
            (5, "qa", 1),
            (6, "nonprod", 1),
            (7, "staging", 1),
            (8, "preprod", 1),
            (9, "dev", 1),
            (10, "test", 1),
            # 12, not 8: the split rules expire prod-1, staging-1 and a feature build now, and those still take slots
            # in rule 11's count in the same evaluation; with 8 the rule's one image of its own (untagged-5d) expires
            (11, "any", 12),
        ],
    )
)

# littlejo/terraform-aws-ecr-lifecycle-policy-rule, examples/count_more_than_tagged/main.tf: the module's example of
# a tagged count rule, "tagged prefixes (test, uat and prod)", priority 18, keep 42.
CASES.append(
    Case(
        name="littlejo-test-uat-prod-keep-42",
        source="littlejo/terraform-aws-ecr-lifecycle-policy-rule:examples/count_more_than_tagged/main.tf",
        policy={
            "rules": [
                rule(
                    18,
                    count(42, "tagged", tagPrefixList=["test", "uat", "prod"]),
                    "tagged prefixes (test, uat and prod)",
                )
            ]
        },
        images=[*builds("test-", 3), *builds("uat-", 2, newest=2), *builds("prod-", 2, newest=5, every=10)],
        preview=[],
        findings=[("error", "tag-list-is-and", 18)],
        fixed=[(18, "test", 42), (19, "uat", 42), (20, "prod", 42)],
    )
)

# AWS's own example "Filtering on multiple tags in a single rule" (awsdocs/amazon-ecr-user-guide,
# doc_source/lifecycle_policy_examples.md): the list is meant as AND and images carry both tags, so no finding.
CASES.append(
    Case(
        name="aws-example-multiple-tags-in-one-rule",
        source="awsdocs/amazon-ecr-user-guide:doc_source/lifecycle_policy_examples.md",
        policy={
            "rules": [
                rule(1, age(5, "tagged", tagPrefixList=["alpha", "beta"]), "Rule 1"),
            ]
        },
        images=[
            img("A", "alpha-1", age=12 * DAY),
            img("B", "beta-1", age=11 * DAY),
            img("C", "alpha-2", "beta-2", age=10 * DAY),
            img("D", "alpha-3", age=4 * DAY),
            img("E", "beta-3", age=3 * DAY),
            img("F", "alpha-4", "beta-4", age=2 * DAY),
        ],
        preview=[("C", 1)],
        findings=[],
    )
)

# The shape reported in ecr-retention issue 35, of a policy applied to well over a hundred namespaces of one public
# platform (the platform is not named there): "keep the last 10 staging and dev images" as one tagPatternList, then
# the last 20 of all. CI moves `dev` onto the newest staging build, so that image carries both entries and the rule
# selects it alone; every other staging build falls to the catch-all.
CASES.append(
    Case(
        name="issue-35-staging-and-dev-one-image-carries-both",
        source="ecr-retention issue 35: tagPatternList [staging-*, dev] keep 10, then any keep 20",
        policy={
            "rules": [
                rule(
                    1, count(10, "tagged", tagPatternList=["staging-*", "dev"]), "keep last 10 staging and dev images"
                ),
                rule(2, count(20), "keep last 20 images"),
            ]
        },
        images=[
            img("staging-24", "staging-24", "dev", age=1 * DAY),
            *builds("staging-", 23, newest=2, every=1),
            *builds("main-", 6, newest=3, every=4),
        ],
        preview=[
            ("staging-1", 2),
            ("main-1", 2),
            ("staging-2", 2),
            ("staging-3", 2),
            ("staging-4", 2),
            ("staging-5", 2),
            ("staging-6", 2),
            ("main-2", 2),
            ("staging-7", 2),
            ("staging-8", 2),
        ],
        findings=[("error", "tag-list-is-and", 1), ("warning", "count-reduced", 2)],
        # the split: the moving dev tag pinned, staging-* keeps its 10 (one slot more for the dev image it ranks), and
        # the catch-all keeps every main build now (its 20 beside the 11 staging builds that stay)
        fixed=[(1, "dev", 1), (2, "staging-*", 11), (3, "any", 31)],
    )
)

# --- Untagged cleanup next to multi-arch images: kept, a note only where a child waits for a later run ----------

# cloudposse/terraform-aws-ecr, main.tf (commit db621dae): "Remove untagged images" (keep 1), then "Rotate images
# when reach 500 images stored" (max_image_count's default, 500).
CASES.append(
    Case(
        name="cloudposse-untagged-1-rotate-500",
        source="cloudposse/terraform-aws-ecr:main.tf@db621daeeb8477d8beaa265027ea43fbb4069c2d",
        policy={
            "rules": [
                rule(1, count(1, "untagged"), "Remove untagged images"),
                rule(2, count(500), "Rotate images when reach 500 images stored"),
            ]
        },
        images=[*MULTI_ARCH_NEW, *MULTI_ARCH_OLD, *untagged(30, 10)],
        manifests=MANIFESTS_NEW | MANIFESTS_OLD,
        preview=[("untagged-30d", 1), ("untagged-10d", 1)],
        findings=[("info", "count-reduced", 2)],
    )
)

# cloudposse/terraform-aws-ecr, main.tf with protected_tags (the module since 0.3x: one keep-999999 rule per protected
# tag prefix, "Remove untagged images", "Rotate images ..."), with the protected tags prod and stage and 100 images
# of dasmeta/terraform-aws-modules, modules/ecr/tests/lifecycle_policy/README.md.
CASES.append(
    Case(
        name="cloudposse-protected-prod-stage",
        source="dasmeta/terraform-aws-modules:modules/ecr/tests/lifecycle_policy/README.md (cloudposse protected_tags)",
        policy={
            "rules": [
                rule(1, count(999999, "tagged", tagPrefixList=["prod"]), "Protects images tagged with prod"),
                rule(2, count(999999, "tagged", tagPrefixList=["stage"]), "Protects images tagged with stage"),
                rule(3, count(1, "untagged"), "Remove untagged images"),
                rule(4, count(100), "Rotate images when reach 100 images stored"),
            ]
        },
        images=[*builds("prod-", 3, newest=3, every=9), *builds("stage-", 3), *MULTI_ARCH_NEW, *untagged(40, 12)],
        manifests=MANIFESTS_NEW,
        preview=[("untagged-40d", 3), ("untagged-12d", 3)],
        findings=[("info", "count-reduced", 4)],
        fixed=[(1, "prod", 999999), (2, "stage", 999999), (3, "untagged", 1), (4, "any", 109)],
    )
)

# cloudposse/terraform-aws-ecr, examples/lifecycle-policies/main.tf: a custom rule that archives untagged images
# older than 30 days (rendered by the module with rulePriority 1).
CASES.append(
    Case(
        name="cloudposse-archive-untagged-30d",
        source="cloudposse/terraform-aws-ecr:examples/lifecycle-policies/main.tf",
        policy={
            "rules": [
                rule(
                    1,
                    age(30, "untagged"),
                    "Expire untagged images older than 30 days",
                    type="transition",
                    targetStorageClass="archive",
                ),
            ]
        },
        images=[*MULTI_ARCH_NEW, *untagged(45, 31, 29)],
        manifests=MANIFESTS_NEW,
        preview=[("untagged-45d", 1), ("untagged-31d", 1)],
        findings=[],
    )
)

# koki-develop/lgtm-generator, backend/terraform/aws/ecr.tf: the repository the Serverless Framework deploys from
# ("serverless-..."), untagged images expire after a day.
CASES.append(
    Case(
        name="lgtm-generator-untagged-1d",
        source="koki-develop/lgtm-generator:backend/terraform/aws/ecr.tf",
        policy={"rules": [rule(1, age(1, "untagged"))]},
        images=[*MULTI_ARCH_NEW, *MULTI_ARCH_OLD, *untagged(3)],
        manifests=MANIFESTS_NEW | MANIFESTS_OLD,
        preview=[("untagged-3d", 1)],
        findings=[],
    )
)

# terraform-aws-modules/ecr's README example as used in yuu0w0yuu/aws-ecs, terraform/migrate/ecr.tf: keep the last 10
# images tagged `v...`; `latest` rides on the newest release.
CASES.append(
    Case(
        name="terraform-aws-modules-v-keep-10",
        source="yuu0w0yuu/aws-ecs:terraform/migrate/ecr.tf",
        policy={"rules": [rule(1, count(10, "tagged", tagPrefixList=["v"]), "keep last 10 images")]},
        images=[
            img("v1.12", "v1.12", "latest", age=1 * DAY),
            *builds("v1.", 11, newest=3, every=3),
            *builds("pr-", 3, newest=2, every=1),
        ],
        preview=[("v1.1", 1), ("v1.2", 1)],
        findings=[("warning", "mutable-tag-at-risk", 1)],
        fixed=[(1, "latest", 1), (2, "v", 11)],
    )
)

# loukasprevyzis/dob-api, infra/ecr.tf: untagged images expire after 30 days; the index manifests were not exported.
CASES.append(
    Case(
        name="dob-api-untagged-30d-indexes-unknown",
        source="loukasprevyzis/dob-api:infra/ecr.tf",
        policy={"rules": [rule(1, age(30, "untagged"), "Expire untagged images older than 30 days")]},
        images=[*MULTI_ARCH_OLD, *untagged(60)],
        preview=[("untagged-60d", 1)],
        findings=[("info", "untagged-rule-multi-arch", 1)],
    )
)

# --- Count and age rules over build tags, mutable tags riding along --------------------------------------------

# aedificans/terraform-aws-Base-ECR-Repository, locals.tf: the module's default policy.
CASES.append(
    Case(
        name="aedificans-latest-v-develop-30-untagged-14d",
        source="aedificans/terraform-aws-Base-ECR-Repository:locals.tf",
        policy={
            "rules": [
                rule(1, count(30, "tagged", tagPrefixList=["latest"]), "Keep last 30 images tagged latest"),
                rule(2, count(30, "tagged", tagPrefixList=["v"]), "Keep last 30 images tagged with a version number"),
                rule(3, count(30, "tagged", tagPrefixList=["develop"]), "Keep last 30 images tagged develop"),
                rule(4, age(14, "untagged"), "Expire untagged images older than 14 days"),
            ]
        },
        images=[
            img("v1.5.0", "v1.5.0", "latest", age=2 * DAY),
            *builds("v1.", 4, newest=9, every=9, suffix=".0"),
            img("develop-a41c9e2", "develop-a41c9e2", "develop", age=1 * DAY),
            *builds("develop-", 3, newest=3, every=2),
            *untagged(30, 3),
        ],
        preview=[("untagged-30d", 4)],
        findings=[("warning", "mutable-tag-at-risk", 3), ("info", "count-reduced", 2)],
    )
)

# CBIIT/ccdi-devops, terraform/aws/modules/ecr-lifecycle-policy/main.tf: keep the last prod images, then the last
# images of all (the heredoc holds `var.prod_image_count` unrendered; rendered here with 3 and 5).
CASES.append(
    Case(
        name="ccdi-prod-3-any-5",
        source="CBIIT/ccdi-devops:terraform/aws/modules/ecr-lifecycle-policy/main.tf",
        policy={
            "rules": [
                rule(1, count(3, "tagged", tagPrefixList=["prod"]), "keep last 3 prod images"),
                rule(2, count(5), "keep latest 5 non prod images"),
            ]
        },
        images=[*builds("prod-", 4, newest=2, every=10), *builds("dev-", 6, newest=1, every=2)],
        preview=[("prod-1", 1), ("dev-1", 2), ("dev-2", 2)],
        findings=[("warning", "count-reduced", 2)],
    )
)

# communitiesuk/submit-social-housing-lettings-and-sales-data-infrastructure, terraform/modules/ecr/lifecycle_policy.tf.
CASES.append(
    Case(
        name="communitiesuk-production-staging-review",
        source="communitiesuk/submit-social-housing-lettings-and-sales-data-infrastructure:terraform/modules/ecr/lifecycle_policy.tf",
        policy={
            "rules": [
                rule(1, count(3, "tagged", tagPrefixList=["production-"]), "Retain last 3 production images"),
                rule(2, count(10, "tagged", tagPrefixList=["staging-"]), "Retain last 10 staging images"),
                rule(3, age(30, "tagged", tagPrefixList=["review-"]), "Expire review images after 30 days"),
            ]
        },
        images=[
            *builds("production-", 5, newest=4, every=7),
            *builds("staging-", 4, newest=1, every=3),
            img("review-1", "review-1", age=40 * DAY),
            img("review-2", "review-2", age=20 * DAY),
            img("review-3", "review-3", age=5 * DAY),
        ],
        preview=[("production-1", 1), ("production-2", 1), ("review-1", 3)],
        findings=[],
    )
)

# AlenGeorge12/CineReads-main, infra/terraform/ecr_lifecycle.tf: keep the last 3 images. CI tags each build with its
# short commit id; two of those ids have no digit (cafebab, febacfb) and are builds all the same.
CASES.append(
    Case(
        name="cinereads-any-3-commit-tags",
        source="AlenGeorge12/CineReads-main:infra/terraform/ecr_lifecycle.tf",
        policy={"rules": [rule(1, count(3), "Keep last 3 images and expire older")]},
        images=[
            img("3f2c1a9", "3f2c1a9", "latest", age=1 * DAY),
            img("cafebab", "cafebab", age=3 * DAY),
            img("9e8d7c6", "9e8d7c6", age=5 * DAY),
            img("febacfb", "febacfb", age=8 * DAY),
            img("0a1b2c3", "0a1b2c3", age=13 * DAY),
        ],
        preview=[("0a1b2c3", 1), ("febacfb", 1)],
        findings=[("warning", "mutable-tag-at-risk", 1)],
        fixed=[(1, "latest", 1), (2, "any", 4)],
    )
)

# locus-akhilkrishna/sample, pulumi/main.py: "Remove old resource", keep 13 images; builds tagged build-<commit>.
CASES.append(
    Case(
        name="pulumi-sample-any-13",
        source="locus-akhilkrishna/sample:pulumi/main.py",
        policy={"rules": [rule(1, count(13), "Remove old resource")]},
        images=[
            img(f"build-{sha}", f"build-{sha}", age=(n + 1) * DAY)
            for n, sha in enumerate(
                [
                    "4d5e6f7",
                    "febacfb",
                    "1a2b3c4",
                    "deadbee",
                    "5e6f7a8",
                    "b0b0b0b",
                    "9a8b7c6",
                    "cafe123",
                    "7f6e5d4",
                    "abcdef1",
                    "3c2b1a0",
                    "fedcba9",
                    "0123456",
                    "badcafe",
                    "6543210",
                ]
            )
        ],
        preview=[("build-6543210", 1), ("build-badcafe", 1)],
        findings=[],
    )
)

# twistedFantasy/staff, aws/staff/ecr_construct.py: CDK's addLifecycleRule(tag_prefix_list=["stg"], max_image_count=5)
# and the same for "prd", which CDK renders as tagged count rules with priorities 1 and 2. A release is the staging
# image promoted: it carries stg-N and prd-N.
CASES.append(
    Case(
        name="cdk-staff-stg-5-prd-5",
        source="twistedFantasy/staff:aws/staff/ecr_construct.py",
        policy={
            "rules": [
                rule(1, count(5, "tagged", tagPrefixList=["stg"])),
                rule(2, count(5, "tagged", tagPrefixList=["prd"])),
            ]
        },
        images=[
            img("stg-8", "stg-8", age=1 * DAY),
            img("stg-7", "stg-7", "prd-3", age=4 * DAY),
            *builds("stg-", 6, newest=6, every=3),
            img("prd-2", "prd-2", age=30 * DAY),
            img("prd-1", "prd-1", age=60 * DAY),
        ],
        preview=[("stg-1", 1), ("stg-2", 1), ("stg-3", 1)],
        findings=[("info", "count-reduced", 2)],
    )
)

# aws/aws-cdk, packages/@aws-cdk/aws-ecr/README.md: addLifecycleRule({tagPrefixList: ['prod'], maxImageCount: 9999})
# then addLifecycleRule({maxImageAgeDays: 30}): "deletes images older than 30 days, while keeping all images tagged
# with prod". 9999 is a keep: no warning about it.
CASES.append(
    Case(
        name="cdk-readme-prod-9999-then-30-days",
        source="aws/aws-cdk:packages/@aws-cdk/aws-ecr/README.md",
        policy={
            "rules": [
                rule(1, count(9999, "tagged", tagPrefixList=["prod"])),
                rule(2, age(30)),
            ]
        },
        images=[
            img("prod-3", "prod-3", "latest", age=10 * DAY),
            img("prod-2", "prod-2", age=40 * DAY),
            img("prod-1", "prod-1", age=90 * DAY),
            img("feature-x-2", "feature-x-2", age=2 * DAY),
            img("feature-x-1", "feature-x-1", age=45 * DAY),
        ],
        preview=[("feature-x-1", 2)],
        findings=[],
    )
)

# ktb-cpplab/cpplab-cl, dev/ecr.tf: the dev repository expires images tagged dev... after 60 days; CI pushes `dev`
# and moves it, so the current dev image goes once it is 60 days old unless dev moves first.
CASES.append(
    Case(
        name="cpplab-dev-prefix-60-days",
        source="ktb-cpplab/cpplab-cl:dev/ecr.tf",
        policy={"rules": [rule(1, age(60, "tagged", tagPrefixList=["dev"]), "Expire images older than 60 days")]},
        images=[img("dev", "dev", age=50 * DAY), *untagged(70, 55)],
        preview=[],
        findings=[("warning", "rule-names-mutable-tag", 1)],
    )
)

# hmanzur/terraform-aws-ecs-test, src/ecr/files/policy.json.tpl: keep the image tagged latest, then the last
# ${countNumber} (rendered with 10) images of all.
CASES.append(
    Case(
        name="hmanzur-latest-1-any-10",
        source="hmanzur/terraform-aws-ecs-test:src/ecr/files/policy.json.tpl",
        policy={
            "rules": [
                rule(1, count(1, "tagged", tagPrefixList=["latest"]), "Keep image deployed with tag latest"),
                rule(2, count(10), "Keep last 10 any images"),
            ]
        },
        images=[img("1.0.12", "1.0.12", "latest", age=1 * DAY), *builds("1.0.", 11, newest=2, every=2)],
        preview=[("1.0.1", 2), ("1.0.2", 2)],
        findings=[("warning", "count-reduced", 2)],
        fixed=[(1, "latest", 1), (2, "any", 11)],
    )
)

# reown-com/blockchain-api, terraform/res_ecr.tf: "Expire images beyond the last 30", in a repository of multi-arch
# images: each release is an index, two platform images and an attestation, and all four take a slot.
CASES.append(
    Case(
        name="reown-any-30-multi-arch",
        source="reown-com/blockchain-api:terraform/res_ecr.tf",
        policy={"rules": [rule(1, count(30), "Expire images beyond the last 30")]},
        images=[detail for n in range(9) for detail in multi_arch(f"v1.{n}.0", 3 + 4 * (8 - n))[0]],
        manifests={seed: m for n in range(9) for seed, m in multi_arch(f"v1.{n}.0", 3 + 4 * (8 - n))[1].items()},
        preview=[("v1.0.0", 1)],
        findings=[("warning", "count-reduced", 1)],
    )
)

# UKHSA-Internal/data-dashboard-infra, terraform/modules/ecr/local.tf: "Keep the last 30 images".
CASES.append(
    Case(
        name="ukhsa-any-30",
        source="UKHSA-Internal/data-dashboard-infra:terraform/modules/ecr/local.tf",
        policy={"rules": [rule(1, count(30), "Keep the last 30 images")]},
        images=[img("main", "main", f"main-{31:03d}", age=1 * DAY), *builds("main-", 30, newest=2, every=1)],
        preview=[("main-1", 1)],
        findings=[("warning", "mutable-tag-at-risk", 1)],
    )
)

# kazutaka1994/my-iac-practice, terraform/ecr/local.tf: "Only Five of The Most Recent Images Remain."
CASES.append(
    Case(
        name="kazutaka-any-5",
        source="kazutaka1994/my-iac-practice:terraform/ecr/local.tf",
        policy={"rules": [rule(1, count(5), "Only Five of The Most Recent Images Remain.")]},
        images=[*builds("2026.11.", 7, newest=1, every=1)],
        preview=[("2026.11.1", 1), ("2026.11.2", 1)],
        findings=[],
    )
)

# shkim4u/aws-database-migration, infrastructure/terraform/modules/cicd/ecr/main.tf (terraform-aws-modules/ecr):
# "Keep last 30 images" tagged v...; the team's dev tag rides on a release.
CASES.append(
    Case(
        name="dms-v-keep-30",
        source="shkim4u/aws-database-migration:infrastructure/terraform/modules/cicd/ecr/main.tf",
        policy={"rules": [rule(1, count(30, "tagged", tagPrefixList=["v"]), "Keep last 30 images")]},
        images=[img("v0.9.1", "v0.9.1", "dev", age=2 * DAY), *builds("v0.8.", 3, newest=5, every=5)],
        preview=[],
        findings=[("warning", "mutable-tag-at-risk", 1)],
    )
)
