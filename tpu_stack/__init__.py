"""`tpu-stack`: the workload command for the people who use the TPUs of a deployed stack.

It reads the stack's outputs (teams, queues, flavors, pool groups, the validated config, the kubeconfig) and
talks to the cluster with the official Kubernetes client: `submit` builds a Job or JobSet with the code of
`make workloads` (components/workloads.py); `list`, `why`, `logs` and `delete` read Kueue's objects as Kueue
writes them. `why` (tpu_stack/why.py) is pure: Kueue objects in, plain sentences out.
"""
