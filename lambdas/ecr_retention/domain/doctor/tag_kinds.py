"""Which tags move (mutable: latest, dev, main) and which name one build (1.12.370, v2, 3f2c1a9, build-febacfb).

The doctor protects mutable tags: ECR expires images, not tags, so a mutable tag goes with the image it rides on.
Telling the two apart is a heuristic; `TagKinds` carries the patterns a user adds to override it."""

import re

from pydantic import BaseModel, ConfigDict

from ecr_retention.domain.lifecycle.matching import tag_matches

# A commit id as CI writes it into tags: 7 to 40 lowercase hex characters (git's short and full SHA), alone or
# after a prefix and a dash. About one 7-character SHA in a thousand has no digit (`cafebab`), so the digit rule
# alone would call that build's tag mutable.
COMMIT_ID_TAG = re.compile(r"(?:.+-)?[0-9a-f]{7,40}")


def looks_like_commit_id(tag: str) -> bool:
    return COMMIT_ID_TAG.fullmatch(tag) is not None


def is_build_tag_by_default(tag: str) -> bool:
    """House heuristic: a tag with a digit (1.12.370, v2, pr-12, sha256-....sig) or one that looks like a commit
    id (cafebab, build-febacfb) names a build; every other tag (latest, dev, main, stable) names a moving target."""
    return any(character.isdigit() for character in tag) or looks_like_commit_id(tag)


class TagKinds(BaseModel):
    """The heuristic with the user's overrides: tag patterns (ECR's `*`, whole tag) of tags that move
    (`doctor --mutable-tag`) and of tags that name a build (`doctor --build-tag`). A tag that matches both
    is taken as mutable, the side that protects it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mutable: tuple[str, ...] = ()
    build: tuple[str, ...] = ()

    def is_mutable(self, tag: str) -> bool:
        if any(tag_matches(tag, pattern) for pattern in self.mutable):
            return True
        if any(tag_matches(tag, pattern) for pattern in self.build):
            return False
        return not is_build_tag_by_default(tag)


DEFAULT_TAG_KINDS = TagKinds()


def is_mutable_tag(tag: str, kinds: TagKinds = DEFAULT_TAG_KINDS) -> bool:
    return kinds.is_mutable(tag)
