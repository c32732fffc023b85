"""Bucket: the stack's hardened Cloud Storage bucket (checkpoints, Saxml's admin state).

Hardening is not configurable: uniform bucket-level access (IAM only, no object ACLs), public access prevention
enforced, versioning on. Only a throwaway stack may delete the bucket with its objects; every other stack
protects it, so losing data takes an explicit `pulumi state unprotect`.
"""

from __future__ import annotations

import pulumi
from pulumi_gcp import storage

from components.config.stack import StackConfig


class Bucket(pulumi.ComponentResource):
    """One bucket; `name` and `url` are what other components and the outputs use."""

    def __init__(self, name: str, *, config: StackConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("tpu-stack:index:Bucket", name, None, opts)
        settings = config.bucket
        self.bucket: storage.Bucket = storage.Bucket(
            f"{name}-bucket",
            name=config.bucket_name,
            project=config.project,
            # GCS reports locations in upper case; sending them so keeps the diff clean.
            location=(settings.location or config.region).upper(),
            uniform_bucket_level_access=True,
            public_access_prevention="enforced",
            versioning={"enabled": True},
            lifecycle_rules=[
                {
                    "action": {"type": "Delete"},
                    "condition": {
                        "days_since_noncurrent_time": settings.noncurrent_version_days,
                        "with_state": "ARCHIVED",
                    },
                }
            ],
            labels=config.resource_labels,
            force_destroy=True if config.throwaway else None,
            opts=pulumi.ResourceOptions(parent=self, protect=not config.throwaway),
        )
        self.name: pulumi.Output[str] = self.bucket.name
        self.url: pulumi.Output[str] = self.bucket.url
        self.register_outputs({"name": self.name, "url": self.url})
