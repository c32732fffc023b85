"""The stack's dashboard and alert policies."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field

from components.config.base import ConfigModel

PROTO_DURATION_MAX_SECONDS = 315_576_000_000
"""The longest google.protobuf.Duration (about 10,000 years; google/protobuf/duration.proto `seconds`): the Monitoring
API takes a PromQL condition's `duration` as one, so a longer hold is refused when the alert policy is created."""
_NOTIFICATION_CHANNEL = re.compile(r"^projects/[^/]+/notificationChannels/[^/]+$")


def _channel(name: str) -> str:
    if not _NOTIFICATION_CHANNEL.match(name):
        raise ValueError(
            f"{name!r} is not a notification channel; give its resource name, "
            "projects/<project>/notificationChannels/<id> (gcloud beta monitoring channels list)"
        )
    return name


class MonitoringConfig(ConfigModel):
    """The stack's dashboard and alert policies: who is notified, and how long a condition lasts before it alerts."""

    notification_channels: tuple[Annotated[str, AfterValidator(_channel)], ...] = ()
    """Resource names `projects/<project>/notificationChannels/<id>` every alert policy notifies; required in protected
    stacks (named `prod` or `production`, or `tpu-stack:protected: true`), elsewhere with none incidents show in
    Cloud Monitoring only."""
    pending_minutes: int = Field(default=30, ge=1)
    """Minutes a ClusterQueue may have pending workloads before it alerts."""
    idle_minutes: int = Field(default=30, ge=1)
    """Minutes TPU TensorCores may idle while workloads are pending before it alerts."""
    not_starting_minutes: int = Field(default=20, ge=1)
    """Minutes a pod of a team's namespace may stay Pending (not scheduled, its image not pulled, its containers not
    created) before it alerts. A workload's pods exist only once Kueue admitted it, so this is an admitted workload
    that does not start; less than Kueue's PodsReady timeout (queues.podsReady), which deletes them first."""
    provisioning_minutes: int = Field(default=120, ge=1)
    """Minutes a workload may wait on its queued-provisioning request (on a MultiKueue manager: for a worker to admit
    it) before it alerts."""

    def problems(self) -> list[tuple[str, str]]:
        """(field, message): each hold becomes a PromQL condition's `duration` of minutes x 60 seconds, which the
        Monitoring API takes as a google.protobuf.Duration (and `pulumi up` would fail on)."""
        most = PROTO_DURATION_MAX_SECONDS // 60
        return [
            (
                field,
                f"{minutes} minutes is beyond what Cloud Monitoring accepts for an alert condition's duration "
                f"(at most {most} minutes, a google.protobuf.Duration); use fewer",
            )
            for field, minutes in (
                ("pendingMinutes", self.pending_minutes),
                ("idleMinutes", self.idle_minutes),
                ("provisioningMinutes", self.provisioning_minutes),
                ("notStartingMinutes", self.not_starting_minutes),
            )
            if minutes > most
        ]
