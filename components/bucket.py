"""Bucket: the stack's hardened Cloud Storage buckets: one for datasets, models, caches and Saxml's admin state, and,
when the stack has writers, one for their checkpoints.

Hardening is not configurable: uniform bucket-level access (IAM only, no object ACLs), public access prevention
enforced. The datasets' bucket keeps versions (old ones expire). The checkpoint bucket has a hierarchical namespace,
so a checkpointer can commit by renaming a directory (Cloud Storage FUSE renames a folder atomically there, and on a
flat bucket only below `rename-dir-limit`, never one with subdirectories: gcsfuse docs/semantics.md, "Missing
features"), and keeps no versions and, by default, no soft-deleted objects: a checkpoint a trainer rotates out stops
being billed when it is deleted. A hierarchical namespace is set when a bucket is created and never after (ForceNew
in the provider), which is why checkpoints get a bucket of their own instead of the datasets' bucket being replaced.
Only a throwaway stack may delete a bucket with its objects; every other stack protects both, so losing data takes
an explicit `pulumi state unprotect`.
"""

from __future__ import annotations

import pulumi
from pulumi_gcp import storage

from components.config.stack import StackConfig

SECONDS_PER_DAY = 86_400


class Bucket(pulumi.ComponentResource):
    """The datasets' bucket and the checkpoint bucket; `name`, `url`, `checkpoint_name` (None without writers) are
    what other components and the outputs use."""

    def __init__(self, name: str, *, config: StackConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("tpu-stack:index:Bucket", name, None, opts)
        settings = config.bucket
        keep = pulumi.ResourceOptions(parent=self, protect=not config.throwaway)
        force_destroy = True if config.throwaway else None
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
            force_destroy=force_destroy,
            opts=keep,
        )
        checkpoint_name = config.checkpoint_bucket_name
        # In the cluster's region, where the writers run (a hierarchical namespace bucket is created with uniform
        # bucket-level access: pulumi-gcp 10.2.0 storage.Bucket hierarchical_namespace).
        self.checkpoints: storage.Bucket | None = (
            storage.Bucket(
                f"{name}-checkpoints",
                name=checkpoint_name,
                project=config.project,
                location=config.region.upper(),
                uniform_bucket_level_access=True,
                public_access_prevention="enforced",
                hierarchical_namespace={"enabled": True},
                versioning={"enabled": False},
                soft_delete_policy={
                    "retention_duration_seconds": settings.checkpoint_soft_delete_days * SECONDS_PER_DAY
                },
                labels=config.resource_labels,
                force_destroy=force_destroy,
                opts=keep,
            )
            if checkpoint_name
            else None
        )
        self.name: pulumi.Output[str] = self.bucket.name
        self.url: pulumi.Output[str] = self.bucket.url
        self.checkpoint_name: pulumi.Output[str] | None = self.checkpoints.name if self.checkpoints else None
        self.checkpoint_url: pulumi.Output[str] | None = self.checkpoints.url if self.checkpoints else None
        self.register_outputs({"name": self.name, "url": self.url, "checkpointName": self.checkpoint_name})
