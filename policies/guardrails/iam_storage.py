"""IAM and Cloud Storage: least-privilege grants (the rule shared with the config model), bucket hardening, and
buckets in the region of the TPUs that use them."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs, StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from components import iam_roles

from .gke import pool_machine
from .props import BUCKET, NODE_POOL, as_list, prop, say

PUBLIC_MEMBERS = ("allUsers", "allAuthenticatedUsers")
# IAM resources whose grant covers everything in a project, folder or organization.
WIDE_IAM_PREFIXES = ("gcp:projects/", "gcp:folder/", "gcp:organizations/")


def _roles(resource_type: str, props: Mapping[str, Any]) -> list[str]:
    """Roles an IAM resource grants: `role` of members and bindings, every binding of a policy document."""
    kind = resource_type.rsplit(":", 1)[-1]
    if kind.endswith(("IAMMember", "IAMBinding")):
        role = props.get("role")
        return [role] if isinstance(role, str) else []
    if kind.endswith("IAMPolicy"):
        try:
            document = json.loads(str(props.get("policyData") or "{}"))
        except ValueError:
            return []
        return [b.get("role", "") for b in document.get("bindings", []) if isinstance(b, dict)]
    return []


def validate_least_privilege(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Primitive roles grant far more than any workload needs; storage admin on a project spans every bucket."""
    if not args.resource_type.startswith("gcp:"):
        return
    wide = args.resource_type.startswith(WIDE_IAM_PREFIXES)
    for role in _roles(args.resource_type, args.props):
        problem = iam_roles.role_problem(role, wide=wide)
        if problem:
            say(report, problem)
    for member in _members(args.resource_type, args.props):
        if member in PUBLIC_MEMBERS:
            say(report, f"member {member} makes the resource public: grant named principals only")


def _known(read: Any) -> list[str]:
    """`read()` as text, or nothing when preview cannot know it: a member unknown during a new stack's preview
    is built from an account the stack creates, never a public one."""
    try:
        return [str(read())]
    except UnknownValueError:
        return []


def _members(resource_type: str, props: Mapping[str, Any]) -> list[str]:
    """The members an IAM resource grants to that preview knows: `member`, each of `members`, or every binding
    of a policy document."""
    kind = resource_type.rsplit(":", 1)[-1]
    if kind.endswith("IAMMember"):
        return _known(lambda: props.get("member", ""))
    if kind.endswith("IAMBinding"):
        members: Any = props.get("members")  # indexed one by one: copying the list would read every member at once
        count = len(members) if isinstance(members, Sequence) and not isinstance(members, str) else 0
        return [m for index in range(count) for m in _known(lambda index=index: members[index])]
    if kind.endswith("IAMPolicy"):
        try:
            document = json.loads(str(props.get("policyData") or "{}"))
        except ValueError:
            return []
        return [str(m) for b in document.get("bindings", []) if isinstance(b, dict) for m in b.get("members", [])]
    return []


def validate_bucket(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Checkpoints and models are the stack's most valuable data: no ACLs, no public access, old versions kept. A
    hierarchical namespace bucket (the stack's checkpoint bucket, whose data is rewritten and rotated) keeps none."""
    if args.resource_type != BUCKET:
        return
    props = args.props
    if props.get("uniformBucketLevelAccess") is not True:
        say(report, "set uniformBucketLevelAccess true (IAM only, no object ACLs)")
    if props.get("publicAccessPrevention") != "enforced":
        say(report, f"set publicAccessPrevention 'enforced' (found {props.get('publicAccessPrevention')!r})")
    hierarchical = prop(props, "hierarchicalNamespace.enabled") is True
    if not hierarchical and prop(props, "versioning.enabled") is not True:
        say(report, "set versioning.enabled true so an overwritten or deleted checkpoint can be restored")


_ZONE = re.compile(r"^([a-z]+-[a-z]+[0-9]+)-[a-z0-9]+$")
_REGION = re.compile(r"^[a-z]+-[a-z]+[0-9]+$")


def _region(location: str) -> str:
    """The region of a zone (`us-east5-b`, `us-central1-ai1a`), or the location itself."""
    match = _ZONE.match(location)
    return match.group(1) if match else location


def validate_bucket_region(args: StackValidationArgs, report: ReportViolation) -> None:
    """TPU pods read datasets and write checkpoints through Cloud Storage FUSE: from another region than the bucket's
    that is data transfer between regions, billed and slower. A MultiKueue manager's workloads run unchanged in every
    worker's region (Kueue copies the JobSet's spec as it is), so one bucket serves them all. Buckets in a multi- or
    dual-region are left alone: which regions they span is Cloud Storage's to say."""
    resources = list(args.resources)
    regions: dict[str, list[str]] = {}
    for pool in resources:
        if pool.resource_type != NODE_POOL or pool_machine(pool.props) is None:
            continue
        zones = [str(z) for z in as_list(pool.props.get("nodeLocations"))]
        place = zones[0] if zones else str(pool.props.get("location") or "")
        if place:
            regions.setdefault(_region(place.lower()), []).append(str(pool.props.get("name") or pool.name))
    for bucket in resources:
        location = bucket.props.get("location") if bucket.resource_type == BUCKET else None
        if not isinstance(location, str) or not _REGION.match(location.lower()):
            continue
        away = {region: pools for region, pools in regions.items() if region != location.lower()}
        if away:
            where = ", ".join(f"{region} ({', '.join(pools)})" for region, pools in sorted(away.items()))
            report(
                f"bucket in {location} and TPU node pools in {where}: their pods read and write it across regions, "
                "billed as data transfer between regions and slower than in the region; keep a stack's TPUs in the "
                "bucket's region, or see docs/multiregion.md (Data and checkpoints)",
                bucket.urn,
            )


BUCKET_IAM = "gcp:storage/bucketIAM"
VIEWER, USER = "roles/storage.objectViewer", "roles/storage.objectUser"
BUCKET_ROLES = (VIEWER, USER, "roles/storage.objectCreator")
"""What the stack grants on its bucket: objects read (readers, the servers), objects read and written (writers,
Saxml, the servers' cache). Other roles reach past objects: objectAdmin also sets the IAM policies of managed folders,
admin and the legacy roles the bucket's own policy (Cloud Storage IAM roles)."""


def validate_bucket_grants(args: StackValidationArgs, report: ReportViolation) -> None:
    """Bucket grants are object roles only (BUCKET_ROLES). A member that reads the whole bucket and also writes in it
    (the vLLM servers: objectViewer, and objectUser under their cache folder) keeps its write limited by the IAM
    condition the stack gives it: without it the member overwrites and deletes every model and checkpoint."""
    conditionless_users: dict[tuple[str, str], str] = {}
    viewers: set[tuple[str, str]] = set()
    for resource in args.resources:
        if not resource.resource_type.startswith(BUCKET_IAM):
            continue
        for role in _roles(resource.resource_type, resource.props):
            if role not in BUCKET_ROLES:
                report(
                    f"{role} on a bucket reaches past its objects (folder or bucket IAM policies, the bucket itself): "
                    f"grant {VIEWER} to read or {USER} to write",
                    resource.urn,
                )
        if not resource.resource_type.endswith("IAMMember"):
            continue
        bucket = _known(lambda resource=resource: resource.props.get("bucket"))
        member = _known(lambda resource=resource: resource.props.get("member"))
        if not bucket or not member:
            continue
        key = (bucket[0], member[0])
        granted = resource.props.get("role")
        if granted == VIEWER:
            viewers.add(key)
        elif granted == USER and not resource.props.get("condition"):
            conditionless_users[key] = resource.urn
    for key, urn in conditionless_users.items():
        if key in viewers:
            report(
                f"{key[1]} reads bucket {key[0]} and holds {USER} there without a condition: it may overwrite and "
                "delete every object; keep the condition that limits its writes to its folder",
                urn,
            )
