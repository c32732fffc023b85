"""Which image tags name one fixed build (components/images.py), the rule the config and the policy pack share: a
digest, a full release version, a full commit or a dated build; never a tag its publisher moves."""

from __future__ import annotations

import pytest

from components import images

COMMIT = "2e33fe4b9c0d8a7e6f5a4b3c2d1e0f9a8b7c6d5e"


@pytest.mark.parametrize(
    "image",
    [
        "vllm/vllm-tpu:v0.27.0",
        "registry.k8s.io/kueue/kueue:v0.19.2",
        "us-docker.pkg.dev/cloud-tpu-images/inference/sax-model-server:v1.1.0",
        "example.com/team/trainer:2.4.1-tpu",
        "example.com/team/trainer:v1.2.0-rc1",
        "example.com/team/trainer:1.2.3.4",
        f"vllm/vllm-tpu:{COMMIT}",  # a full commit: one build
        f"example.com/team/trainer:sha-{COMMIT}",
        "vllm/vllm-tpu:nightly-20250115-2e33fe4",  # a dated nightly: the build of that day
        "example.com/team/trainer:20250115",
        "vllm/vllm-tpu:nightly@sha256:" + "a" * 64,  # the digest pins whatever the tag says
        "example.com/team/trainer",  # untagged: the callers' own rule speaks to it
    ],
)
def test_fixed_builds(image: str) -> None:
    assert images.moving_tag_problem(image) is None


MOVING = (
    "can be moved by its publisher to another build; pin a release (major.minor.patch, like v0.27.0), a dated build "
    "(20250115), a full 40-character commit, or a digest (@sha256:...)"
)


@pytest.mark.parametrize(
    ("image", "tag"),
    [
        ("vllm/vllm-tpu:nightly", "nightly"),
        ("vllm/vllm-tpu:latest", "latest"),
        ("example.com/team/trainer:1.25", "1.25"),  # moves to each new patch release
        ("example.com/team/trainer:v2", "v2"),
        ("example.com/team/trainer:v1.2.0-nightly", "v1.2.0-nightly"),
        ("example.com/team/trainer:stable", "stable"),
        ("vllm/vllm-tpu:2e33fe4", "2e33fe4"),  # a short commit is also a branch-like name
        ("example.com/team/trainer:20251345", "20251345"),  # not a date
    ],
)
def test_tags_that_move(image: str, tag: str) -> None:
    assert images.moving_tag_problem(image) == f"tag {tag!r} {MOVING}"
