"""What an empty project needs before the stack's first resource: the Google APIs it calls, and its own VPC.

A new project has no API on and, where an organisation enforces `constraints/compute.skipDefaultNetworkCreation`, no
network: every create would fail with SERVICE_DISABLED or a missing network. The stack enables the APIs its resource
types call and makes its network; each resource waits for the API it calls (__main__.py wires that).
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
from pulumi_gcp import compute, projects

from components.config.stack import StackConfig

SERVICES = {
    "compute": "compute.googleapis.com",
    "container": "container.googleapis.com",
    "iam": "iam.googleapis.com",
    "cloudresourcemanager": "cloudresourcemanager.googleapis.com",
    "storage": "storage.googleapis.com",
    "monitoring": "monitoring.googleapis.com",
    "logging": "logging.googleapis.com",
    "dns": "dns.googleapis.com",
}
"""Short name -> the API: networks, firewall, NAT and calendar requests (compute); clusters and node pools
(container); service accounts and their IAM (iam); project IAM grants and the project lookup (cloudresourcemanager);
the bucket (storage); dashboards and alerts, and managed Prometheus (monitoring); GKE's system logs (logging); Cloud
DNS for GKE (dns). The APIs a deployment needs before the program runs (Service Usage to turn these on, Cloud KMS for
the stack's secrets, IAM credentials and STS for CI's federated identity) are enabled by hand once (README)."""

API_OF_TYPE: tuple[tuple[str, str], ...] = (
    ("gcp:container/", "container"),
    ("gcp:compute/", "compute"),
    ("gcp:serviceaccount/", "iam"),
    ("gcp:projects/iAMMember:", "cloudresourcemanager"),
    ("gcp:storage/", "storage"),
    ("gcp:monitoring/", "monitoring"),
)
"""Resource type prefix -> the API its provider calls (the catalogue holds every plan to it)."""


class ProjectServices(pulumi.ComponentResource):
    """The APIs the stack calls, enabled in its project and never disabled by `pulumi destroy` (other stacks and
    people in the project use them too: `disable_on_destroy=False`)."""

    def __init__(self, name: str, *, config: StackConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("tpu-stack:index:ProjectServices", name, None, opts)
        wanted = [short for short in SERVICES if short != "dns" or config.uses_cloud_dns]
        self.services: dict[str, projects.Service] = {
            short: projects.Service(
                f"{name}-{short}",
                project=config.project,
                service=SERVICES[short],
                disable_on_destroy=False,
                opts=pulumi.ResourceOptions(parent=self),
            )
            for short in wanted
        }
        self.register_outputs({})

    def of(self, *shorts: str) -> list[pulumi.Resource]:
        """The services named (`compute`, ...) that this stack enables: what a resource waits for."""
        return [self.services[short] for short in shorts if short in self.services]


class StackNetwork(pulumi.ComponentResource):
    """The stack's own VPC (custom mode: each cluster makes its subnetwork with its ranges; components/
    gke_cluster.py), shared by its cluster and MultiKueue workers."""

    def __init__(
        self,
        name: str,
        *,
        config: StackConfig,
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("tpu-stack:index:StackNetwork", name, None, opts)
        self.network: compute.Network = compute.Network(
            f"{name}-vpc",
            name=config.vpc_name,
            project=config.project,
            description=f"Network of the {config.stack} stack's GKE clusters",
            auto_create_subnetworks=False,
            routing_mode="REGIONAL",
            # Jumbo frames between TPU VMs of a multislice job (DCN traffic): xpk's large-scale guide creates its
            # network with --mtu=8896 (AI-Hypercomputer/xpk xpk-large-scale-guide.sh at 18c02b1).
            mtu=8896,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(depends_on)),
        )
        self.register_outputs({"name": self.network.name})
