"""The stack's dashboard and alert policies."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field

from components.config.base import ConfigModel

_NOTIFICATION_CHANNEL = re.compile(r"^projects/[^/]+/notificationChannels/[^/]+$")


def _channel(name: str) -> str:
    if not _NOTIFICATION_CHANNEL.match(name):
        raise ValueError(
            f"{name!r} is not a notification channel; give its resource name, "
            "projects/<project>/notificationChannels/<id> (gcloud beta monitoring channels list)"
        )
    return name


class MonitoringConfig(ConfigModel):
    """The stack's dashboard and alert policies (`tpu-stack:monitoring`)."""

    notification_channels: tuple[Annotated[str, AfterValidator(_channel)], ...] = ()
    """Channels every alert policy notifies; none by default (incidents show in Cloud Monitoring only)."""
    pending_minutes: int = Field(default=30, ge=1)
    """A ClusterQueue with workloads pending this long alerts."""
    idle_minutes: int = Field(default=30, ge=1)
    """TPU TensorCores idle this long while workloads wait alerts."""
    provisioning_minutes: int = Field(default=120, ge=1)
    """A workload waiting this long for its queued-provisioning request alerts."""
