"""The sentinel (SPEC "The sentinel"): something other than a run removed or archived an image; record it, and when a
workload runs it, tell the report topic at once, naming the workloads, the image, what removed it and what follows,
and restore an archived in-use image in a managed repository (the only change the sentinel ever makes).

One event, one pass: record the removals (`removals/`), read what runs (the manifests and the memory), match
(domain/in_use/references.py `affected_by`), confirm with the registry what is really broken, heal, and publish one alert.

Once per removal: ECR tells one removal several times (`ECR Image Action` DELETE events, one per tag, and for a native
policy a PolicyExecutionEvent; with a trail, the BatchDeleteImage call). Each record says what its event's alert named
(`Removal.alerted`, written once the alert is out), and an image another event's alert named within DUPLICATE_WINDOW,
for the same action and the same cause, is not alerted again: an event that names another principal or lifecycle rule
than that alert's alerts (dedupe per cause, `_same_cause`). Only this deployment's sentinel's records count (services/removals.py): a
record anyone else wrote silences nothing, and the alert names it. A record that alerted nothing silences nothing. Two
such events handled at the same instant may both alert; a second alert is better than none.

Once per event: EventBridge and Lambda may deliver one event twice. The first delivery with something to alert claims
the event's alert (services/removals.py AlertClaims, S3's conditional write); another delivery of the same event id
publishes nothing once that claim says published, and alerts after all when the claimer released it (its publish
failed) or died holding it.

Per Region: a deployment that prunes several Regions receives each one's events on the home Region's bus, each with
the Region it happened in (`Observed.region`). The event is matched, confirmed, healed and checked in THAT Region's
registry (its replication, its coordinates, its policies); its records and its claim are keyed by the repository's
regional name (layout.removals_prefix), and its alert names the Region. An event from a Region the deployment does not
prune changes nothing and alerts nothing: one warning line, and the invocation succeeds (a retry, or the DLQ, would
only repeat it: the rules that forward it are what is wrong, see docs/sentinel.md).

Per account: an event of another account than the registry's (`Observed.account`; a bus that admits other accounts
delivers their genuine ECR events) changes nothing and alerts nothing, in one warning line, like an unpruned Region's
(domain/provenance.py). A PutLifecyclePolicy call is checked against the policy ECR holds now (GetLifecyclePolicy),
never against the text the event carries.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from logging import ERROR, WARNING
from typing import TYPE_CHECKING

from ecr_retention.defects import Defect, contain
from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.in_use.references import (
    PulledReference,
    Removal,
    affected_by,
    in_repository,
    pulled_references,
)
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.planning.managed import managed_in
from ecr_retention.domain.provenance import foreign_event
from ecr_retention.domain.sentinel.alert import (
    ALERT_ATTRIBUTES,
    TAKING_FINDINGS,
    Breakage,
    Broken,
    alert_body,
    alert_subject,
    policy_alert,
)
from ecr_retention.domain.sentinel.events import Observed
from ecr_retention.domain.sentinel.held import HeldRemoval, held_body, held_lines, held_removals, held_subject
from ecr_retention.layout import alert_claim_key
from ecr_retention.ports import (
    Bucket,
    ClaimingBucket,
    ImagesUnreadable,
    ManifestCache,
    Notifier,
    Registry,
    RepositoryGone,
)
from ecr_retention.registries import PrunedRegistry, Registries, deciding_sources
from ecr_retention.services.inventory import read_inventory_from_bucket, read_inventory_with_holds
from ecr_retention.services.removals import (
    AlertClaim,
    AlertClaims,
    Ignored,
    RemovalsRead,
    create_removal,
    read_removals,
    write_removal,
)
from ecr_retention.services.replication import read_replication
from ecr_retention.services.snapshot import read_index_manifest, snapshot_repository

if TYPE_CHECKING:
    # The image models: read by the registry adapter when a removal is confirmed (a running image's: rare). What a
    # restore answers: loaded with the restore itself (heal), for an archived image that runs.
    from ecr_retention.domain.planning.ledger import Answer
    from ecr_retention.domain.registry.images import ImageDetail
    from ecr_retention.domain.sentinel.trail_events import LifecyclePolicyPut

logger = logging.getLogger(__name__)

DUPLICATE_WINDOW = timedelta(minutes=15)
IGNORED_NAMED = 3  # the ignored records an alert names before "and N more"


@dataclass(frozen=True)
class SentinelPorts:
    registry: Registry  # the home Region's: the function's own
    bucket: ClaimingBucket
    notifier: Notifier
    cache: ManifestCache
    # This deployment's sentinel role (SENTINEL_ROLE_ARN): the writer its records name, and the only one whose records
    # and claims count. None: unknown, so nothing it reads silences an alert.
    sentinel_role: str | None = None
    # The registries of the other Regions the deployment prunes (PRUNED_REGIONS), as a run's Adapters has them.
    other_registries: tuple[Registry, ...] = field(default=(), kw_only=True)

    @property
    def registries(self) -> Registries:
        return Registries.of(self.registry, self.other_registries)


@dataclass(frozen=True)
class Watched:
    """What one event led to."""

    repository: str
    recorded: tuple[str, ...] = ()  # the keys of the removals written
    broken: tuple[Broken, ...] = ()
    alerted: bool = False
    policy_findings: int = 0  # PutLifecyclePolicy: what the doctor found the new policy would take
    notes: tuple[str, ...] = field(default=())
    region: str | None = None  # the Region named when the deployment prunes several
    ignored: str | None = None  # why nothing was done: an event of a Region not pruned, or of another account
    held: tuple[str, ...] = ()  # the holds (their keys) of the held images the event removed, which it alerted on

    @property
    def restored(self) -> int:
        return sum(1 for item in self.broken if item.restoring)

    def summary(self) -> dict[str, object]:
        where = {"region": self.region} if self.region is not None else {}
        ignored = {"ignored": self.ignored} if self.ignored is not None else {}
        return {
            "repository": self.repository,
            **where,
            "recorded": len(self.recorded),
            "broken": [item.what_follows for item in self.broken],
            "alerted": self.alerted,
            "restored": self.restored,
            "policyFindings": self.policy_findings,
            **ignored,
            **({"held": list(self.held)} if self.held else {}),
        }


def watch(
    observed: Observed,
    *,
    config: RetentionConfig,
    ports: SentinelPorts,
    now: datetime,
    sleep: Callable[[float], None] = time.sleep,
) -> Watched:
    """`sleep`: how a delivery waits for another delivery of the same event that holds its alert's claim."""
    foreign = foreign_event("event", observed.event_id, observed.account, ports.registry.registry_id)
    if foreign is not None:
        return ignored(observed, foreign)
    # An event that names no Region (outside EventBridge) is taken for the home Region's (Observed.region).
    here = ports.registries.in_region(observed.region or ports.registry.region)
    if here is None:
        return not_pruned(observed, ports.registries)
    put = observed.policy_put
    if put is not None:
        return check_new_policy(put, config=config, ports=ports, now=now, here=here)
    return watch_removals(observed, here, config=config, ports=ports, now=now, sleep=sleep)


def watch_removals(
    observed: Observed,
    here: PrunedRegistry,
    *,
    config: RetentionConfig,
    ports: SentinelPorts,
    now: datetime,
    sleep: Callable[[float], None],
) -> Watched:
    """The removals of one event in its Region's registry: recorded, matched against what runs, confirmed, healed
    where they can be, and alerted once."""
    update = {"writer": ports.sentinel_role, "region": here.key}
    removals = tuple(removal.model_copy(update=update) for removal in observed.removals())
    repository = observed.repository_name
    if not removals:  # a lifecycle evaluation that acted on nothing, a refused BatchDeleteImage
        return Watched(repository, region=here.named)
    told = recorded_nearby(ports, repository, removals, here)
    recorded = tuple(record_removals(ports.bucket, removals))
    replication = read_replication(here.port)  # once: what runs here, and who decides the replicas here
    here = here.reading(replication.replication_configuration)
    inventory = read_inventory_with_holds(ports.bucket)
    held = untold_held(inventory, removals, told.removals, config, here, now)
    references, notes = running_references(config, inventory, now, here, replication.problem)
    candidates = candidates_of(removals, in_repository(references, repository), told.removals, ports.cache)
    broken = confirmed_and_healed(config, ports, here, repository, candidates)
    if not broken and not held:
        return Watched(repository, recorded, region=here.named)
    notes = (*notes, *ignored_notes(ports.bucket, told.ignored))
    claim_key = alert_claim_key(repository, removals[0].removed_at, observed.event_id, here.key)
    claims = AlertClaims(ports.bucket, claim_key, ports.sentinel_role, sleep)
    alert = Alert(removals, broken, held, notes)
    already = publish_once(claims, alert, ports=ports, now=now, region=here.named)
    notes = notes if already is None else (already,)
    return Watched(
        repository,
        recorded,
        broken,
        alerted=already is None,
        notes=notes,
        region=here.named,
        held=tuple(item.held.image.key for item in held),
    )


def confirmed_and_healed(
    config: RetentionConfig,
    ports: SentinelPorts,
    here: PrunedRegistry,
    repository: str,
    candidates: Sequence[tuple[PulledReference, Removal]],
) -> tuple[Broken, ...]:
    """What the registry confirms broken (and this Region is to alert), each healed where it can be."""
    if not candidates:
        return ()
    broken = left_to_sources(config, ports.registries, here, repository, confirm(here.port, repository, candidates))
    return tuple(heal(item, config, here) for item in broken)


def untold_held(
    inventory: Inventory,
    removals: Sequence[Removal],
    told: Sequence[Removal],
    config: RetentionConfig,
    here: PrunedRegistry,
    now: datetime,
) -> tuple[HeldRemoval, ...]:
    """The removals of held images, except those another event's alert already named for the same action and
    cause (an ECR Image Action and a PolicyExecutionEvent tell one lifecycle expiry)."""
    held = held_removals(inventory.holds, removals, here.coordinates, now, config.safety.max_hold)
    return tuple(
        item
        for item in held
        if not any(
            earlier.action == item.removal.action
            and item.mark in earlier.alerted
            and _same_cause(earlier, item.removal)
            for earlier in told
        )
    )


@dataclass(frozen=True)
class Alert:
    """What one event's alert tells: the in-use references it broke, and the held images it removed."""

    removals: Sequence[Removal]
    broken: Sequence[Broken]
    held: Sequence[HeldRemoval]
    notes: Sequence[str]

    def subject(self, region: str | None) -> str:
        return alert_subject(self.broken, region) if self.broken else held_subject(self.held, region)

    def body(self, now: datetime, region: str | None) -> str:
        if not self.broken:
            return held_body(self.held, self.notes, now, region)
        return alert_body(self.broken, (*held_lines(self.held, now)[1:], *self.notes), region)


def left_to_sources(
    config: RetentionConfig, registries: Registries, here: PrunedRegistry, repository: str, broken: Sequence[Broken]
) -> tuple[Broken, ...]:
    """A deletion replicated here from a pruned source is the source's event's to alert: what runs from this
    registry's replica is among the source's references (SPEC "Several Regions"), so a replicated deletion gives one
    alert, not one per Region. A source that still holds the image did not delete it: then the deletion was made here,
    and is alerted here (as when the source cannot be asked)."""
    deletions = [item for item in broken if item.removal.action == "deleted"]
    if not registries.several or not deletions:
        return tuple(broken)
    sources = replication_sources(config, registries, here, repository)
    return tuple(item for item in broken if not (item in deletions and _deleted_at(sources, repository, item)))


def replication_sources(
    config: RetentionConfig, registries: Registries, here: PrunedRegistry, repository: str
) -> list[Registry]:
    """The pruned registries whose deletions of the repository replicate here and decide it (registries.py
    `deciding_sources`); `here` with the replication rules the event's watch read of it."""
    others = (
        other.reading(read_replication(other.port).replication_configuration) for other in registries.elsewhere(here)
    )
    sources, _ = deciding_sources(config, here.coordinates, others, repository)
    return [source.port for source in sources]


def _deleted_at(sources: Sequence[Registry], repository: str, item: Broken) -> bool:
    """Whether a source no longer holds the image: the deletion came from there."""
    digest = item.removal.image_digest
    return digest is not None and any(not _holds(source, repository, digest) for source in sources)


def _holds(source: Registry, repository: str, digest: str) -> bool:
    """Whether the registry holds the image (one that cannot be asked is taken to: the alert stays)."""
    try:
        return bool(source.describe_images_by_id(repository, [{"imageDigest": digest}]))
    except ImagesUnreadable:
        return True
    except RepositoryGone:
        return False


def not_pruned(observed: Observed, registries: Registries) -> Watched:
    """An event from a Region the deployment does not prune (a forwarding rule left behind, another deployment's):
    nothing read, recorded, restored or alerted; one warning line. Not a failure: a retry would repeat it and the DLQ
    would keep it for no one; the rule that sent it is what to fix."""
    note = (
        f"event {observed.event_id} happened in {observed.region}, a Region this deployment does not prune "
        f"(regions: {', '.join(registries.regions)}): nothing done"
    )
    return ignored(observed, note)


def ignored(observed: Observed, note: str) -> Watched:
    """An event the sentinel does nothing with (an unpruned Region's, another account's): one warning line."""
    logger.warning("%s", note)
    return Watched(observed.repository_name, notes=(note,), region=observed.region, ignored=note)


def publish_once(
    claims: AlertClaims,
    alert: Alert,
    *,
    ports: SentinelPorts,
    now: datetime,
    region: str | None = None,
) -> str | None:
    """The event's one alert, unless another delivery of the event published it (then: the note that says so).
    `region`: the Region the alert names (a deployment of several Regions)."""
    event_id = alert.removals[0].event_id
    claim = AlertClaim(event_id=event_id, writer=ports.sentinel_role, state="claimed", at=now)
    held = claims.claim(claim)
    if held is not None:
        logger.info("event %s: another delivery published its alert", event_id)
        return f"another delivery of event {event_id} published its alert ({held.at:%Y-%m-%d %H:%M:%S} UTC)"
    published = False
    try:
        ports.notifier.publish(alert.subject(region), alert.body(now, region), ALERT_ATTRIBUTES)
        published = True
    finally:  # a failed publish releases the claim: the retry alerts
        claims.mark(claim.model_copy(update={"state": "published" if published else "released"}))
    record_alerted(ports.bucket, alert)
    return None


def ignored_notes(bucket: Bucket, ignored: Sequence[Ignored]) -> tuple[str, ...]:
    """What the alert says of records under removals/ that this deployment's sentinel did not write."""
    if not ignored:
        return ()
    named = "; ".join(f"s3://{bucket.name}/{each.told}" for each in ignored[:IGNORED_NAMED])
    more = f" and {len(ignored) - IGNORED_NAMED} more" if len(ignored) > IGNORED_NAMED else ""
    return (
        f"Ignored {len(ignored)} record(s) under removals/ that this deployment's sentinel did not write (they "
        f"silence nothing): {named}{more}.",
    )


# --- the record of removals -----------------------------------------------------------------------------------------


def record_removals(bucket: ClaimingBucket, removals: Sequence[Removal]) -> list[str]:
    """One object per removal, named by time, event and position: another delivery of the event leaves the records
    there (and what they say its alert named)."""
    return [create_removal(bucket, removal, position) for position, removal in enumerate(removals)]


def record_alerted(bucket: Bucket, alert: Alert) -> None:
    """Once the alert is out: each removal's record says which images it named (and which holds), so that another
    event telling the same removal does not alert them again (and one that breaks something else still does)."""
    for position, removal in enumerate(alert.removals):
        named = [item.reference.image for item in alert.broken if item.removal == removal]
        named += [item.mark for item in alert.held if item.removal == removal]
        alerted = tuple(dict.fromkeys(named))
        if alerted:
            write_removal(bucket, removal.model_copy(update={"alerted": alerted}), position)


def recorded_nearby(
    ports: SentinelPorts, repository: str, removals: Sequence[Removal], here: PrunedRegistry
) -> RemovalsRead:
    """What other events recorded for this repository of the event's registry within DUPLICATE_WINDOW of these
    removals: those this deployment's sentinel wrote, and those it did not (ignored)."""
    ours = {removal.event_id for removal in removals}
    times = [removal.removed_at for removal in removals]
    start, end = min(times) - DUPLICATE_WINDOW, max(times) + DUPLICATE_WINDOW
    days = sorted({start.date(), end.date()})
    read = read_removals(ports.bucket, repository, days, sentinel=ports.sentinel_role, key=here.key)
    return RemovalsRead(
        removals=tuple(
            removal for removal in read.removals if removal.event_id not in ours and start <= removal.removed_at <= end
        ),
        unreadable=read.unreadable,
        ignored=read.ignored,
    )


# --- matching -----------------------------------------------------------------------------------------------------------


def running_references(
    config: RetentionConfig, inventory: Inventory, now: datetime, here: PrunedRegistry, replication_problem: str | None
) -> tuple[tuple[PulledReference, ...], tuple[str, ...]]:
    """What counts as running in `here` (the event's registry, with the replication rules read of it, or none with
    `replication_problem`; the readable manifests, and the memory for clusters whose reading is suspect:
    domain/in_use/references.py `pulled_references`; a reference protects in the registry its host names), and what
    the alert must say about how well that is known."""
    notes = [
        f"Unreadable in-use manifest {source}: only what the in-use memory remembers of its cluster is matched."
        for source in inventory.problems
    ]
    if replication_problem is not None:
        notes.append(f"Only this registry's references were matched: {replication_problem}.")
    references = pulled_references(inventory, now=now, safety=config.safety, registry=here.coordinates)
    return references, tuple(notes)


def candidates_of(
    removals: Sequence[Removal],
    references: Sequence[PulledReference],
    told: Sequence[Removal],
    cache: ManifestCache,
) -> list[tuple[PulledReference, Removal]]:
    """Each reference a removal may have broken, with the first removal that did, unless another event's alert for
    the same action already named it."""
    children = index_children(references, cache)
    found: dict[PulledReference, Removal] = {}
    for removal in removals:
        for reference in may_break(removal, references, children):
            if reference in found or any(_tells(earlier, removal, reference) for earlier in told):
                continue
            found[reference] = removal
    return list(found.items())


def may_break(
    removal: Removal, references: Sequence[PulledReference], children: dict[str, list[str]]
) -> tuple[PulledReference, ...]:
    """What the removal names (domain `affected_by`), and the tag references whose clusters resolved the removed
    digest: ECR tells a deletion tag by tag, and the first event's confirmation then finds every tag of the image gone
    at once. The registry decides which are broken; a tag that still resolves is not."""
    named = affected_by(removal, references, children)
    by_digest = tuple(
        reference
        for reference in references
        if reference.digest is None and removal.image_digest in reference.resolved and reference not in named
    )
    return named + by_digest


def _tells(earlier: Removal, removal: Removal, reference: PulledReference) -> bool:
    """Another event's alert already told this: the same action on the same image, by the same cause."""
    return earlier.action == removal.action and reference.image in earlier.alerted and _same_cause(earlier, removal)


def _same_cause(earlier: Removal, removal: Removal) -> bool:
    """Dedupe per cause. Two events that each name a cause (a BatchDeleteImage call's principal, a PolicyExecutionEvent's
    rule) tell the same removal only when they name the same one: a record never silences an alert whose cause, principal
    or rule differs, so a first event that blames another principal or rule (mistaken, or forged by invoking the
    function) cannot hide the one that names who really removed the image. An ECR Image Action names no cause: ECR sends
    one beside each of those events, so it is the same removal as any of them, whichever comes first."""
    if "image-action" in (earlier.cause, removal.cause):
        return True
    return (earlier.cause, earlier.principal, earlier.rule_priority) == (
        removal.cause,
        removal.principal,
        removal.rule_priority,
    )


def index_children(references: Sequence[PulledReference], cache: ManifestCache) -> dict[str, list[str]]:
    """The children of the in-use images whose index manifest the pipeline cached (`manifests/<digest>.json`)."""
    pulled = sorted({d for reference in references for d in (reference.digest, *reference.resolved) if d})
    found = {digest: _children_of(digest, cache) for digest in pulled}
    return {digest: children for digest, children in found.items() if children}


def _children_of(digest: str, cache: ManifestCache) -> list[str]:
    text = cache.get(digest)
    manifest = read_index_manifest(digest, text) if text is not None else None
    return [child["digest"] for child in manifest["manifests"]] if manifest is not None else []


# --- confirming and healing --------------------------------------------------------------------------------------------


def confirm(
    registry: Registry, repository: str, candidates: Sequence[tuple[PulledReference, Removal]]
) -> tuple[Broken, ...]:
    """Which candidates the next pull cannot get, as the registry answers now; every candidate, unconfirmed, when it
    cannot answer (the alert then says so)."""
    images = contain(lambda: _images_now(registry, repository, candidates), log=None, what="confirming removals")
    if isinstance(images, Defect):
        unreadable = isinstance(images.error, ImagesUnreadable)
        logger.log(WARNING if unreadable else ERROR, "removals in %s not confirmed: %s", repository, images)
        return tuple(Broken(reference, removal, "unconfirmed") for reference, removal in candidates)
    broken = []
    for reference, removal in candidates:
        breakage = "repository-gone" if images is None else breakage_of(reference, removal, images)
        if breakage is not None:
            broken.append(Broken(reference, removal, breakage))
    return tuple(broken)


def _images_now(
    registry: Registry, repository: str, candidates: Sequence[tuple[PulledReference, Removal]]
) -> list[ImageDetail] | None:
    """The images the candidates and the removals name (by tag or by digest), archived ones too. None: the repository
    is gone. Raises ImagesUnreadable."""
    ids = [reference.image_id for reference, _ in candidates]
    ids += [{"imageDigest": removal.image_digest} for _, removal in candidates if removal.image_digest]
    try:
        return registry.describe_images_by_id(repository, ids)
    except RepositoryGone:
        return None


def breakage_of(reference: PulledReference, removal: Removal, images: Sequence[ImageDetail]) -> Breakage | None:
    """None: the next pull still works (a tag removed from a digest a digest reference pulls; a tag that moved)."""
    pulled = reference.pulls(images)
    if pulled is None:
        return "gone"
    if pulled.image_status == "ARCHIVED":
        return "archived"
    if removal.image_digest is None or removal.image_digest == pulled.image_digest:
        return None
    return _child_breakage(removal.image_digest, images)


def _child_breakage(child_digest: str, images: Sequence[ImageDetail]) -> Breakage | None:
    """The index the reference pulls is there: what became of its child the removal named."""
    child = next((image for image in images if image.image_digest == child_digest), None)
    if child is None:
        return "child-gone"
    return "child-archived" if child.image_status == "ARCHIVED" else None


def heal(item: Broken, config: RetentionConfig, here: PrunedRegistry) -> Broken:
    """An archived in-use image comes back at once, in the registry it was archived in, as a run would restore it
    (SPEC "Archived images"), but only in a repository a policy manages there (the function's IAM allows no other) and
    when safety.restore_in_use is on."""
    digest = item.archived_digest
    if digest is None:
        return item
    repository = item.reference.repository
    refusal = _not_restorable(config, repository, digest, here)
    if refusal is not None:
        return _restored(item, refusal)
    from ecr_retention.services.act import restore  # an archived image that runs: rare, and a restore's ledger with it

    answer = restore(here.port, repository, [digest]).answer(digest)
    return _restored(item, restore_told(answer), restoring=answer.kind == "done")


def restore_told(answer: Answer) -> str:
    """What the alert says of the restore the ledger recorded: only a restore ECR confirmed started (ACTIVATING) is
    said to be under way; one of an image gone meanwhile, or one the registry did not confirm, is not restored."""
    if answer.kind == "done":
        return "restore started: ECR is bringing it back to STANDARD (ACTIVATING, about 20 minutes)"
    if answer.kind == "already":
        return "already ACTIVE or being restored"
    if answer.kind in ("gone", "unconfirmed"):
        from ecr_retention.domain.planning.ledger import RESTORE_FAILURES  # loaded by the restore already

        code, detail = RESTORE_FAILURES[answer.kind]
        return f"not restored ({code}: {detail})"
    problem = f"{answer.failure[0]}: {answer.failure[1]}" if answer.failure is not None else "no answer"
    return f"restore refused ({problem})"


def _not_restorable(config: RetentionConfig, repository: str, digest: str, here: PrunedRegistry) -> str | None:
    if not managed_in(config, repository, here.region):
        # restore works in the standard AWS configuration's Region (no --region yet: docs/sentinel.md, Limits)
        region = f"AWS_REGION={here.named} " if here.named is not None else ""
        return (
            "not restored: no policy of the rules file manages this repository; restore it with "
            f"`{region}ecr-retention restore --repository {repository} --digest {digest}`"
        )
    if not config.safety.restore_in_use:
        return "not restored: safety.restore_in_use is off"
    return None


def _restored(item: Broken, text: str, *, restoring: bool = False) -> Broken:
    return Broken(item.reference, item.removal, item.breakage, restored=text, restoring=restoring)


# --- a new lifecycle policy (with a trail) -----------------------------------------------------------------------------


def check_new_policy(
    put: LifecyclePolicyPut, *, config: RetentionConfig, ports: SentinelPorts, now: datetime, here: PrunedRegistry
) -> Watched:
    """The doctor on the policy just put, against the repository's images in the registry it was put in (`here`) and
    what runs, before ECR acts on it. The policy is the one ECR holds now
    (GetLifecyclePolicy), never the event's `lifecyclePolicyText`: an event tells that a policy was put, not what ECR
    will apply (a forged or foreign event's text would alert on a policy that is not there, and a later put replaced
    it). A repository without a policy any more has nothing to check."""
    registry, repository = here.port, put.request_parameters.repository_name
    if put.error_code is not None:
        refused = f"PutLifecyclePolicy was refused ({put.error_code}): nothing to check"
        return Watched(repository, notes=(refused,), region=here.named)
    # BatchGetImage only where a policy manages (infra/sentinel.py): elsewhere the doctor knows the cached indexes.
    managed = managed_in(config, repository, registry.region)
    try:
        policy = registry.lifecycle_policy(repository)
        if policy is None:
            gone = "the repository has no lifecycle policy now: nothing to check"
            return Watched(repository, notes=(gone,), region=here.named)
        snapshot = snapshot_repository(registry, repository, ports.cache, read_uncached=managed)
    except RepositoryGone:
        return Watched(repository, notes=("the repository no longer exists",), region=here.named)
    replication = read_replication(registry)
    # Imported here, for a PutLifecyclePolicy event only: the doctor's checks are not what the sentinel's other
    # events (removals, archives) need, and every cold start of the function would load them.
    from ecr_retention.domain.doctor.diagnosis import diagnose_repository

    diagnosis = diagnose_repository(
        policy,
        snapshot,
        now=now,
        inventory=read_inventory_from_bucket(ports.bucket),
        registry=here.reading(replication.replication_configuration).coordinates,
    )
    taking = [finding for finding in diagnosis.findings if finding.code in TAKING_FINDINGS]
    if taking:
        subject, body = policy_alert(repository, put.user_identity.who, taking, here.named)
        ports.notifier.publish(subject, body, ALERT_ATTRIBUTES)
    return Watched(repository, alerted=bool(taking), policy_findings=len(taking), region=here.named)
