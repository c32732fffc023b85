"""What the MultiKueue manager may do on a worker: one list for the program (components/multikueue.py) and the policy
pack, which holds the manager's roles on every worker to it.

The rules of Kueue's create-multikueue-kubeconfig.sh for the Job and JobSet adapters (kueue v0.19.2
site/static/examples/multikueue/create-multikueue-kubeconfig.sh: its batch, jobset.x-k8s.io and kueue.x-k8s.io rules),
in the API's own (wire) form. Pure standard library, so the policy pack (which runs in its own virtualenv) imports it.
"""

from __future__ import annotations

WORKER_ACCOUNT = "multikueue-manager"
"""The ServiceAccount in `kueue-system` on each worker that the manager's Kueue acts as."""
Rule = dict[str, list[str]]
_READ = ["get", "list", "watch"]
READ_RULES: tuple[Rule, ...] = (
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": _READ},
    {"apiGroups": ["batch"], "resources": ["jobs/status"], "verbs": ["get"]},
    {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": _READ},
    {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets/status"], "verbs": ["get"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": _READ},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["get"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues", "localqueues"], "verbs": _READ},
)
"""What the manager reads on a worker, cluster-wide: its clients watch Jobs, JobSets and Workloads everywhere."""
DISPATCH_RULES: tuple[Rule, ...] = (
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "delete"]},
    {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": ["create", "delete"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": ["create", "delete", "update", "patch"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["patch", "update"]},
)
"""What the manager writes on a worker, only in the teams' namespaces (RoleBindings): the copies of the workloads and
their Jobs or JobSets. Creating Jobs only where the teams' LocalQueues are keeps the token from running pods
elsewhere."""
READ_ROLE = f"{WORKER_ACCOUNT}-read"
DISPATCH_ROLE = f"{WORKER_ACCOUNT}-dispatch"
ROLES = {READ_ROLE: READ_RULES, DISPATCH_ROLE: DISPATCH_RULES}
"""The manager's ClusterRoles on a worker, by name, and the rules each may grant."""
