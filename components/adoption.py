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

from collections.abc import Sequence

import pulumi

from components.config.adopted import ImportConfig


def import_existing(imports: Sequence[ImportConfig]) -> pulumi.ResourceTransformation:
    """A stack transformation giving each resource the stack file lists (by type and name) its `import` ID, and each
    Google one `protect`."""
    ids = {(entry.type, entry.name): entry.id for entry in imports}

    def transform(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
        found = ids.get((args.type_, args.name))
        if found is None:
            return None
        protect = True if args.type_.startswith("gcp:") else None
        return pulumi.ResourceTransformationResult(
            args.props, pulumi.ResourceOptions.merge(args.opts, pulumi.ResourceOptions(import_=found, protect=protect))
        )

    return transform
