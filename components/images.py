"""When an image reference names one fixed image: a digest, or a release tag. Tags such as `latest`, `nightly`,
`main` or `stable` are moved to new builds by their publishers, so the same stack would run other code without any
diff in a preview.

Pure standard library, so the config model and the policy pack (which runs in its own virtualenv) apply one rule.
"""

from __future__ import annotations

import re

RELEASE_TAG = re.compile(r"^v?\d+(?:\.\d+)+(?:[-+_.][0-9A-Za-z][0-9A-Za-z._+-]*)?$")
"""A version number of at least major.minor (`v0.27.0`, `1.1.0`, `2.4.1-tpu`), optionally with a suffix."""
MOVING_WORDS = ("latest", "nightly", "dev", "main", "master", "head", "edge", "snapshot", "unstable", "stable")
"""Words of tags publishers move, also as a release tag's suffix (`v1.2.0-nightly`)."""


def tag_of(image: str) -> str:
    """The tag of an image reference (`repo/name:tag@sha256:...` -> `tag`), '' when it has none."""
    name = image.partition("@")[0]
    return name.rsplit("/", 1)[-1].partition(":")[2]


def moving_tag_problem(image: str) -> str | None:
    """Why `image`'s tag may move under the stack, or None: a digest pins it whatever the tag; else the tag must be a
    release version."""
    if "@sha256:" in image:
        return None
    tag = tag_of(image)
    if not tag:
        return None  # untagged: the callers' own rule says so
    words = set(re.split(r"[-+_.]", tag.lower()))
    if RELEASE_TAG.match(tag) and not words & set(MOVING_WORDS):
        return None
    return f"tag {tag!r} is not a release: its publisher can point it at another build; pin a release tag or a digest"
