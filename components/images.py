"""When an image reference names one fixed build: a digest, a release version, a full commit or a dated build. Tags
such as `latest`, `nightly`, `main` or `stable`, and versions short of a patch (`1.25`, `v2`), are moved to new builds
by their publishers, so the same stack would run other code without any diff in a preview.

Pure standard library, so the config model and the policy pack (which runs in its own virtualenv) apply one rule.
"""

from __future__ import annotations

import re
from datetime import datetime

RELEASE_TAG = re.compile(r"^v?\d+\.\d+\.\d+(?:\.\d+)?(?:[-+_][0-9A-Za-z][0-9A-Za-z._+-]*)?$")
"""A release of major.minor.patch (`v0.27.0`, `1.1.0`, `2.4.1-tpu`, `v1.2.0-rc1`), optionally with a suffix. A
major.minor tag (`1.25`) is the newest patch of that line, moved at each patch release."""
COMMIT = re.compile(r"^[0-9a-f]{40}$")
"""A full git commit id as a tag word (`2e33fe4...`, `sha-2e33fe4...`): built once, from that commit."""
DATE = re.compile(r"^(?:19|20)\d{6}$")
"""A build date as a tag word, YYYYMMDD (`20250115`, `nightly-20250115-2e33fe4`): the build of that day."""
MOVING_WORDS = ("latest", "nightly", "dev", "main", "master", "head", "edge", "snapshot", "unstable", "stable")
"""Words of tags publishers move, also as a release tag's suffix (`v1.2.0-nightly`)."""


def tag_of(image: str) -> str:
    """The tag of an image reference (`repo/name:tag@sha256:...` -> `tag`), '' when it has none."""
    name = image.partition("@")[0]
    return name.rsplit("/", 1)[-1].partition(":")[2]


def _dated(word: str) -> bool:
    if not DATE.match(word):
        return False
    try:
        datetime.strptime(word, "%Y%m%d")
    except ValueError:
        return False
    return True


def moving_tag_problem(image: str) -> str | None:
    """Why `image`'s tag may move under the stack, or None: a digest pins it whatever the tag; else the tag must be a
    release version, or name a full commit or a build date."""
    if "@sha256:" in image:
        return None
    tag = tag_of(image)
    if not tag:
        return None  # untagged: the callers' own rule says so
    words = re.split(r"[-+_.]", tag.lower())
    if any(COMMIT.match(word) or _dated(word) for word in words):
        return None
    if RELEASE_TAG.match(tag) and not set(words) & set(MOVING_WORDS):
        return None
    return (
        f"tag {tag!r} can be moved by its publisher to another build; pin a release (major.minor.patch, like "
        "v0.27.0), a dated build (20250115), a full 40-character commit, or a digest (@sha256:...)"
    )
