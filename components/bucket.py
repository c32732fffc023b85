"""Bucket: the stack's hardened Cloud Storage bucket (checkpoints, Saxml's admin state).

Hardening is not configurable: uniform bucket-level access (IAM only, no object ACLs), public access prevention
enforced, versioning on. Only a throwaway stack may delete the bucket with its objects; every other stack
protects it, so losing data takes an explicit `pulumi state unprotect`.
"""

from __future__ import annotations

import pulumi

from components.config.stack import StackConfig
from components.gcp_resource import GcpResource


class Bucket(pulumi.ComponentResource):
    """One bucket; `name` and `url` are what other components and the outputs use."""

    def __init__(self, name: str, *, config: StackConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("tpu-stack:index:Bucket", name, None, opts)
        settings = config.bucket
        self.bucket: GcpResource = GcpResource(
            "gcp:storage/bucket:Bucket",
            f"{name}-bucket",
            {
                "name": config.bucket_name,
                "project": config.project,
                # GCS reports locations in upper case; sending them so keeps the diff clean.
                "location": (settings.location or config.region).upper(),
                "uniformBucketLevelAccess": True,
                "publicAccessPrevention": "enforced",
                "versioning": {"enabled": True},
                "lifecycleRules": [
                    {
                        "action": {"type": "Delete"},
                        "condition": {
                            "daysSinceNoncurrentTime": settings.noncurrent_version_days,
                            "withState": "ARCHIVED",
                        },
                    }
                ],
                "labels": config.resource_labels,
                "forceDestroy": True if config.throwaway else None,
            },
            outputs=("url",),
            opts=pulumi.ResourceOptions(parent=self, protect=not config.throwaway),
        )
        self.name: pulumi.Output[str] = self.bucket.output("name")
        self.url: pulumi.Output[str] = self.bucket.output("url")
        self.register_outputs({"name": self.name, "url": self.url})
