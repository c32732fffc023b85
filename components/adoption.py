"""Importing an adopted cluster's existing resources: the `import` resource option on each one the stack file lists.

The engine reads an imported resource through its provider and, in the same `pulumi up`, updates it in place where
the program differs; a preview shows each as `= import` and its changes as `~ update`, and the engine refuses to
replace a resource whose `import` ID the program still gives ("previously-imported resources that still specify an ID
may not be replaced": pulumi/pulumi pkg/resource/deploy/step_generator.go, the import overhaul of pulumi#19339,
released in 3.174.0). A stack transformation sets the option, so the components need not know about adoption; it
runs in the SDK before registration (pulumi/resource.py Resource.__init__), under the real engine and offline alike.

Every imported Google resource (the cluster, its node pools) is also protected, whatever the stack's name, as
`pulumi import` protects what it imports unless told otherwise (pulumi/pulumi pkg/cmd/pulumi/operations/import.go,
`--protect` defaults to true): `pulumi destroy`, or a slice removed from the config, then stops at the slices xpk or
Cluster Toolkit made instead of deleting them. Letting one go is deliberate: `pulumi state unprotect <urn>` (the
URNs adopt prints), then the change that removes it (docs/adopt.md). `retainOnDelete` stays off: an orphaned slice
still bills; a refused delete says so.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import pulumi

from components.config.adopted import ImportConfig


def import_existing(imports: Sequence[ImportConfig]) -> pulumi.ResourceTransformation:
    """A stack transformation giving each resource whose URN the stack file lists its `import` ID, and each Google one
    `protect`.

    Resources are matched by URN, since one type and name can be two resources under different parents. A
    transformation runs before the resource registers, so its URN is not known yet (the SDK's `create_urn` waits on the
    parent's); it is built here as the engine builds it (pulumi/pulumi pkg/resource/deploy/deployment.go generateURN,
    sdk/go/common/resource/urn/urn.go New): `urn:pulumi:STACK::PROJECT::TYPE::NAME`, TYPE the parent's qualified type
    and `$` and the resource's own, a child of the root stack its own type alone. The transformation sees every
    resource as it is constructed, parents first (a stack transformation is inherited by every child: the SDK's
    Resource.__init__, pulumi/resource.py), so it keeps each one's qualified type for its children. (The SDK's mock
    monitor keeps only the parent's last type, pulumi/runtime/mocks.py make_urn; the engine's is what `import` needs.)
    """
    ids = {entry.urn: entry.id for entry in imports}
    qualified: weakref.WeakKeyDictionary[pulumi.Resource, str] = weakref.WeakKeyDictionary()
    prefix = f"urn:pulumi:{pulumi.get_stack()}::{pulumi.get_project()}::"

    def transform(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
        parent = args.opts.parent
        above = "" if parent is None or parent is pulumi.runtime.get_root_resource() else qualified.get(parent)
        if above is None:
            return None  # a parent made before the transformation was registered: nothing of it is imported
        own = f"{above}${args.type_}" if above else args.type_
        qualified[args.resource] = own
        found = ids.get(f"{prefix}{own}::{args.name}")
        if found is None:
            return None
        protect = True if args.type_.startswith("gcp:") else None
        return pulumi.ResourceTransformationResult(
            args.props, pulumi.ResourceOptions.merge(args.opts, pulumi.ResourceOptions(import_=found, protect=protect))
        )

    return transform
