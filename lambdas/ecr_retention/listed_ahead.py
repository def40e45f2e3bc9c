"""A dry run's sweep lists each repository's images while the one before it is planned (`ecr-retention run`,
services/run.py run_pipeline).

A sweep's time is its listing: DescribeImages, page after page, waits on ECR far longer than the planning of what it
returns takes. Planned one after the other, a repository's listing waited for the planning, the findings and the kept
snapshot of the repository before it, and ECR waited for them too. `ListedAhead` is the registry a sweep evaluates
through: worker threads list the next repositories of the sweep's order, each once, while the caller plans the
current one, and the caller's own DescribeImages of a repository is answered by that listing. The worker that lists a
repository reads its native lifecycle policy next (GetLifecyclePolicy, which the evaluation asks for once it has
planned: services/evaluate.py lifecycle_findings): asked in turn, that small read waited behind the listings under way
on ECR while the caller could do nothing else. The sweep evaluates the repositories as their listings end
(`as_listed`): waiting in the order's turn for a large repository's listing left the small ones listed beside it idle
and, with every place ahead held by them, nothing listed while the large one was planned. The calls are the same ones,
each made once: only when they are made changes.

Only a dry run reads ahead: nothing is removed between a listing and its plan, and a dry run takes no lease (a reading
without one changes nothing: docs/safety.md, 12). A run that acts reads each repository right before it plans it, as
before (docs/safety.md, 6).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass

from ecr_retention.domain.registry.creation_templates import RepositoryCreationTemplate
from ecr_retention.domain.registry.images import ImageDetail
from ecr_retention.domain.registry.replication import ReplicationConfiguration
from ecr_retention.gc_guard import cyclic_gc_off
from ecr_retention.ports import BatchOutcome, ImageId, ImageManifest, Registry, TagOutcome

# Repositories listed at once: two keep ECR answering one page while this process reads the other (a bare listing
# alternates the two). Listings made ahead of the one being planned, at most: one more than those made at once, so
# that while the sweep plans a repository it has just been given (a large one listed long), the next listing is
# under way rather than both workers holding listings nobody has asked for yet.
LISTINGS_AT_ONCE = 2
LISTINGS_AHEAD = 3


class ListedAhead:
    """A Registry whose DescribeImages of each repository of `order` is made by a worker thread ahead of the ask, at
    most `ahead` repositories ahead (as many at a time as `workers` has threads); every other call, and DescribeImages
    of any other repository (or of one asked a second time), is the port's, made when asked; what would change the
    registry is refused (DryRunOnly). Its methods are called by one thread (the sweep's); an error of a listing made
    ahead is raised to the caller that asks for it, as the port would have raised it. A listing made ahead that nobody
    asks for (its repository's evaluation failed before it listed) holds one of the `ahead` places until the sweep
    ends: with every place held, the repositories after are listed when asked, as without this class. A listing made
    ahead that succeeds is followed, on its worker, by the repository's lifecycle policy read (its outcome, a text,
    None or an error, is the answer to the caller's lifecycle_policy of that repository, once); a listing that fails
    reads none, and the caller's lifecycle_policy of that repository is the port's, as are the others'."""

    def __init__(self, port: Registry, order: Sequence[str], workers: ThreadPoolExecutor, ahead: int) -> None:
        self._port = port
        self._order = tuple(dict.fromkeys(order))
        self._waiting = deque(self._order)
        self._listing: dict[str, Future[ReadAhead]] = {}
        self._policies: dict[str, Future[str | None]] = {}
        self._workers = workers
        self._ahead = ahead
        self._list_more()

    def _list_more(self) -> None:
        while self._waiting and len(self._listing) < self._ahead:
            repository = self._waiting.popleft()
            self._listing[repository] = self._workers.submit(self._read_ahead, repository)

    def _read_ahead(self, repository: str) -> ReadAhead:
        """On a worker: the repository's images, then its lifecycle policy's outcome (an error kept for the caller)."""
        images = self._port.describe_images(repository)
        policy: Future[str | None] = Future()
        try:
            policy.set_result(self._port.lifecycle_policy(repository))
        except Exception as error:  # the port's error, raised to the caller that asks for the policy
            policy.set_exception(error)
        return ReadAhead(images, policy)

    def as_listed(self) -> Iterator[str]:
        """The repositories of the order, each once, as their listings made ahead end: the first of the order whose
        listing has ended (or failed), waiting for one when none has; a repository with no listing made ahead (one
        asked out of its turn, or left to be listed when asked) in its turn of the order. A sweep that evaluates in
        this order plans the small repositories listed beside a large one while it is listed, instead of waiting for
        it with every place ahead held, and plans the large one while the next listings are made."""
        unevaluated = dict.fromkeys(self._order)
        while unevaluated:
            repository = next(iter(unevaluated))
            if repository in self._listing:
                listed = {future: name for name, future in self._listing.items() if name in unevaluated}
                # Waited with the cyclic collector off, as an evaluation waited for its listing in its turn: the
                # workers' listings, built meanwhile, are no garbage for the collector to walk (gc_guard).
                with cyclic_gc_off():
                    ended, _ = wait(listed, return_when=FIRST_COMPLETED)
                repository = next(name for future, name in listed.items() if future in ended)
            del unevaluated[repository]
            yield repository

    @property
    def registry_id(self) -> str:
        return self._port.registry_id

    @property
    def region(self) -> str:
        return self._port.region

    def describe_images(self, repository: str) -> list[ImageDetail]:
        listed = self._listing.pop(repository, None)
        self._list_more()
        if listed is None:
            return self._port.describe_images(repository)
        read = listed.result()
        self._policies[repository] = read.policy
        return read.images

    def repository_names(self) -> list[str]:
        return self._port.repository_names()

    def describe_image_ids(self, repository: str, digests: Sequence[str]) -> dict[str, ImageDetail]:
        return self._port.describe_image_ids(repository, digests)

    def describe_images_by_id(self, repository: str, image_ids: Sequence[ImageId]) -> list[ImageDetail]:
        return self._port.describe_images_by_id(repository, image_ids)

    def get_manifests(
        self, repository: str, digests: Sequence[str], media_types: Sequence[str]
    ) -> dict[str, ImageManifest]:
        return self._port.get_manifests(repository, digests, media_types)

    def lifecycle_policy(self, repository: str) -> str | None:
        policy = self._policies.pop(repository, None)
        return self._port.lifecycle_policy(repository) if policy is None else policy.result()

    def replication_configuration(self) -> ReplicationConfiguration:
        return self._port.replication_configuration()

    def creation_templates(self) -> list[RepositoryCreationTemplate]:
        return self._port.creation_templates()

    # A dry run removes and tags nothing: a call that would is a defect of the caller, refused before it reaches ECR.
    def delete_images(self, repository: str, digests: Sequence[str]) -> BatchOutcome:
        raise DryRunOnly(f"a dry run deleted images of {repository}")

    def archive_images(self, repository: str, digests: Sequence[str]) -> BatchOutcome:
        raise DryRunOnly(f"a dry run archived images of {repository}")

    def restore_images(self, repository: str, digests: Sequence[str]) -> BatchOutcome:
        raise DryRunOnly(f"a dry run restored images of {repository}")

    def put_tag(self, repository: str, manifest: ImageManifest, tag: str) -> TagOutcome:
        raise DryRunOnly(f"a dry run tagged an image of {repository}")


@dataclass(frozen=True)
class ReadAhead:
    """What a worker read of one repository: its images, and its lifecycle policy's outcome."""

    images: list[ImageDetail]
    policy: Future[str | None]


class DryRunOnly(RuntimeError):
    """A registry read ahead was asked to change the registry: only a dry run reads ahead."""


@contextmanager
def listed_ahead(
    port: Registry,
    order: Sequence[str],
    *,
    dry_run: bool,
    ahead: int = LISTINGS_AHEAD,
    at_once: int = LISTINGS_AT_ONCE,
) -> Iterator[Registry]:
    """The registry to evaluate the repositories of `order` through, in that order: their listings made ahead in a dry
    run (at most `ahead` of them, `at_once` at a time), the port itself in a run that acts. On the way out, a listing
    not yet begun is not begun (one under way ends, dropped)."""
    if not dry_run or ahead < 1 or len(order) < 2:
        yield port
        return
    workers = ThreadPoolExecutor(max_workers=max(1, min(at_once, ahead)), thread_name_prefix="listed-ahead")
    try:
        yield ListedAhead(port, order, workers, ahead)
    finally:
        workers.shutdown(wait=False, cancel_futures=True)


def as_listed(registry: Registry, order: Sequence[str]) -> Iterable[str]:
    """The order to evaluate `order`'s repositories in through `registry`: as their listings end when it lists them
    ahead (ListedAhead.as_listed), `order` itself otherwise."""
    return registry.as_listed() if isinstance(registry, ListedAhead) else order
