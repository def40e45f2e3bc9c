"""What a run's removals are worth: ECR storage reclaimed, in GB-month and in US dollars a month.

Pure. Prices are public list prices with their source and the date they were checked; the rules file overrides
them (`report.storage_price_per_gb_month`). Every figure is an upper bound: ECR bills a layer once however many
images share it, while an image's size counts each of its layers (docs/report.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from ecr_retention.domain.reporting.run_report import RunReport

# AWS bills storage per GB-month, where a GB is 2^30 bytes.
BYTES_PER_GB = 1024**3
# ECR standard storage, USD per GB-month. Checked 2026-03: us-east-1 (hub.pointfive.co CER-0308) and
# ap-northeast-1 (devjapan.com, against the AWS Price List API); the other regions from aws.amazon.com/ecr/pricing,
# which lists $0.10 for them too. Not every region is here: a region that is not uses the rules file's price, or,
# failing that, DEFAULT_STORAGE_PRICE, and the report says the price was assumed.
STANDARD_STORAGE_PRICES: dict[str, float] = dict.fromkeys(
    (
        "us-east-1",
        "us-east-2",
        "us-west-1",
        "us-west-2",
        "ca-central-1",
        "eu-west-1",
        "eu-west-2",
        "eu-west-3",
        "eu-central-1",
        "eu-north-1",
        "ap-northeast-1",
        "ap-northeast-2",
        "ap-southeast-1",
        "ap-southeast-2",
        "ap-south-1",
        "sa-east-1",
    ),
    0.1,
)
PRICES_CHECKED = "2026-03"
PRICES_SOURCE = "aws.amazon.com/ecr/pricing (us-east-1 and ap-northeast-1 checked against the AWS Price List API)"
DEFAULT_STORAGE_PRICE = 0.10
# ECR archive (same sources, checked 2026-03): the same price as standard storage for the first 150 TB a month
# ($0.07 beyond), $0.03 per GB restored (ap-northeast-1), and a 90-day minimum for every archived image.
ARCHIVE_DISCOUNT_ABOVE_TB = 150
RESTORE_PRICE_PER_GB = 0.03
ARCHIVE_MINIMUM_DAYS = 90


@dataclass(frozen=True)
class StoragePrice:
    per_gb_month: float
    source: str  # where the figure comes from, for the page: a price the reader can check

    @classmethod
    def for_region(cls, region: str | None, override: float | None = None) -> StoragePrice:
        if override is not None:
            return cls(override, "the rules file (report.storage_price_per_gb_month)")
        if region in STANDARD_STORAGE_PRICES:
            return cls(
                STANDARD_STORAGE_PRICES[region],
                f"ECR standard storage in {region}, {PRICES_SOURCE}, checked {PRICES_CHECKED}",
            )
        where = region or "an unknown region"
        return cls(
            DEFAULT_STORAGE_PRICE,
            f"assumed: {where} is not in the price table; the standard rate of the regions that are "
            f"({PRICES_SOURCE}, checked {PRICES_CHECKED}); set report.storage_price_per_gb_month",
        )


@dataclass(frozen=True)
class RunCost:
    """Upper bounds: layers shared between images are billed once, but counted in each image's size."""

    price: StoragePrice
    deleted_bytes: int
    archived_bytes: int

    @property
    def deleted_gb_month(self) -> float:
        return self.deleted_bytes / BYTES_PER_GB

    @property
    def deleted_monthly_usd(self) -> float:
        return self.deleted_gb_month * self.price.per_gb_month

    @property
    def archived_gb(self) -> float:
        return self.archived_bytes / BYTES_PER_GB

    @property
    def archive_minimum_usd(self) -> float:
        """What the archived images cost at the least: 90 days of storage at the same rate."""
        return self.archived_gb * self.price.per_gb_month * ARCHIVE_MINIMUM_DAYS / 30

    @property
    def restore_usd(self) -> float:
        """What restoring every archived image would cost."""
        return self.archived_gb * RESTORE_PRICE_PER_GB


def run_cost(report: RunReport, price: StoragePrice) -> RunCost:
    return RunCost(
        price=price,
        deleted_bytes=sum(entry.image_size_in_bytes or 0 for repo in report.repositories for entry in repo.deleted),
        archived_bytes=sum(entry.image_size_in_bytes or 0 for repo in report.repositories for entry in repo.archived),
    )
