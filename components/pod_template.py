"""The pod template of a Deployment, written in the Kubernetes API's own field names.

A pod is written once, as the API spells it (`serviceAccountName`, `volumeMounts`), by the helpers every pod of the
stack shares (components/pod_security.py, components/gcs_fuse.py): the same pods run in Deployments, in JobSets and
LeaderWorkerSets (custom resources, whose specs the SDK passes through as written) and in the Jobs the workload
command submits. A Deployment's typed arguments take that template as it is: the SDK translates a Python name of a
typed input to its API name and leaves a key that already is an API name unchanged, reading the nested types by it
(pulumi sdk/python/lib/pulumi/runtime/rpc.py, serialize_property), so the provider receives the template as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import pulumi_kubernetes as k8s


def pod_template(template: Mapping[str, Any]) -> k8s.core.v1.PodTemplateSpecArgsDict:
    """`template` (`metadata` and `spec`, in the API's field names) as a Deployment's pod template."""
    return cast("k8s.core.v1.PodTemplateSpecArgsDict", template)
