"""How large each kind of input may be before it is read: one place for the CLI and the S3 pipeline.

Every input is read whole into memory, so an unbounded one (`/dev/zero`, a runaway export, a hostile
object in the bucket) would end in MemoryError. Each cap is generous for real use (measured, or taken
from AWS's own limits) and still bounds what one input can cost in memory.
A reader checks the size before reading (stat, or an object's ContentLength) and then reads at most
`max_bytes + 1` bytes, because a file can grow after it was measured.
"""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1024 * 1024


@dataclass(frozen=True)
class SizeLimit:
    """The most bytes one input of a kind may hold; `kind` names it in errors ("an in-use manifest")."""

    kind: str
    max_bytes: int

    @property
    def described(self) -> str:
        article = "an" if self.kind[:1] in "aeiou" else "a"
        return f"{article} {self.kind}"

    def too_large(self, size: int | None = None) -> str:
        """The problem, for an error line that starts with the input's name. `size` None: it grew past the
        cap while it was read, so its size is unknown."""
        limit = f"the {format_limit(self.max_bytes)} limit for {self.described}"
        if size is None:
            return f"larger than {limit}"
        return f"{size / MiB:.1f} MiB is larger than {limit}"


def format_limit(size: int) -> str:
    """A cap as it was chosen: 64 MiB, 512 KiB, or bytes."""
    if size % MiB == 0:
        return f"{size // MiB} MiB"
    if size % 1024 == 0:
        return f"{size // 1024} KiB"
    return f"{size} bytes"


# A hand-written retention.yaml is a few KiB; a generated one with hundreds of policies stays far below.
RULES_FILE = SizeLimit("rules file", 1 * MiB)

# One cluster's image references: a 30,000-pod cluster, with its workload templates and ReplicaSet
# history, is about 7 MB. Nine times that leaves room for the largest clusters.
IN_USE_MANIFEST = SizeLimit("in-use manifest", 64 * MiB)

# A spoke account's folder of manifests (in-use/<account>/): what one run reads of it, in key order. EKS lets an account
# have 100 clusters per Region: five Regions of them fit the count, and the size is four manifests at their own cap
# (the in-use memory's, which remembers them). Past either, a manifest is not read: it blocks the run when its cluster
# is listed, and warns otherwise (docs/security.md "One spoke cannot stop pruning").
SPOKE_FOLDER_FILES = 500
SPOKE_FOLDER = SizeLimit("spoke account's folder of in-use manifests", 256 * MiB)

# The in-use memory: every reference the manifests named within in_use_grace, about 300 bytes each; four manifests
# at their cap, remembered whole.
IN_USE_MEMORY = SizeLimit("in-use memory", 256 * MiB)

# A registry snapshot: a 500-repository registry with its describe-images pages and index manifests
# is about 200 MB; 512 MiB is 2.5 times that.
SNAPSHOT = SizeLimit("snapshot", 512 * MiB)

# ECR rejects a lifecycle policy over 30,720 characters; `get-lifecycle-policy` output wraps it in JSON
# with escaped quotes, so even the largest valid one is well under 1 MiB.
LIFECYCLE_POLICY = SizeLimit("lifecycle policy", 1 * MiB)

# `aws ecr describe-images` output for one repository, or a snapshot given in its place: the snapshot cap.
IMAGES_FILE = SizeLimit("describe-images file", SNAPSHOT.max_bytes)

# `aws ecr describe-repository-creation-templates` output: a template holds at most a 30,720-character lifecycle
# policy and a repository policy; hundreds of templates stay below 16 MiB.
CREATION_TEMPLATES = SizeLimit("repository creation templates file", 16 * MiB)

# A kubeconfig with inline certificates for dozens of clusters is a few hundred KiB.
KUBECONFIG = SizeLimit("kubeconfig", 1 * MiB)

# The collector's spoke roles: about 60 bytes a role, so 1 MiB is thousands of accounts.
SPOKE_ROLES = SizeLimit("spoke roles file", 1 * MiB)
# A hold is a few hundred bytes (domain/holds/model.py); 64 KiB leaves room for a long reason and nothing more.
HOLD_OBJECT = SizeLimit("hold", 64 * 1024)
