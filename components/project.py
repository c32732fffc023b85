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
    "iamcredentials": "iamcredentials.googleapis.com",
}
"""Short name -> the API: networks, firewall, NAT and calendar requests (compute); clusters and node pools
(container); service accounts and their IAM (iam); project IAM grants and the project lookup (cloudresourcemanager);
the bucket (storage); dashboards and alerts, and managed Prometheus (monitoring); GKE's system logs (logging); Cloud
DNS for GKE (dns); tokens of the Google service accounts workloads impersonate, which the GKE metadata server mints
through the IAM Service Account Credentials API (iamcredentials; google/kctf#194 shows its 403 where the API is off).
Resource Manager is on before the program runs (ENABLED_BY_HAND): its entry here turns nothing on
(the provider finds it enabled and records it) and is kept because removing a protected resource from a deployed
stack is refused."""

ENABLED_BY_HAND: dict[str, str] = {
    "serviceusage.googleapis.com": "turns every other API on, and cannot turn itself on (terraform-provider-google "
    "#16883: the enable call is Service Usage's own)",
    "cloudresourcemanager.googleapis.com": "the google provider reads the project through it when it enables any "
    "API (resource_google_project_service.go Create -> Read -> Projects.Get, L212-290 at e03b762; "
    "terraform-provider-google #6101, #11435), and the program looks up the project number through it at start-up "
    "when bucket.projectNumber is not set (organizations.getProject)",
    "cloudkms.googleapis.com": "the stack's secrets key (the stack file's gcpkms secrets provider), read before the "
    "program runs",
    "sts.googleapis.com": "CI's Workload Identity Federation exchanges GitHub's token here",
    "iamcredentials.googleapis.com": "CI's federated identity then impersonates the deploy or preview service account",
}
"""API -> why it must be on in the stack's project before the first `pulumi` command: what runs before the program, or
what the provider needs in order to turn the stack's APIs on (README, An empty project)."""

ENABLING_NEEDS = ("serviceusage.googleapis.com", "cloudresourcemanager.googleapis.com")
"""What the provider calls to enable an API (projects.Service): Service Usage's enable and list, and Resource
Manager's projects.get in the Read that follows (resource_google_project_service.go L212-290 at e03b762)."""

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
        optional = {"dns": config.uses_cloud_dns, "iamcredentials": config.impersonates_service_accounts}
        wanted = [short for short in SERVICES if optional.get(short, True)]
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
