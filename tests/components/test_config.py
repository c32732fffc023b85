"""Invalid stack config: one exact line per problem naming the key, exit code 2, nothing registered."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.config.base import ConfigError, parse_duration
from components.config.pools import (
    TpuPoolConfig,
    gke_allocatable_ephemeral_mib,
    gke_reserved_cpu_millicores,
    gke_reserved_memory_mib,
)
from components.config.stack import load
from offline import __main__ as cli
from offline.engine import _engine_config, read_stack_file, run_program
from tests.fixtures import stack_data, stack_path, stack_plan

# Trillium in us-central1-b, on spot VMs: us-central1 offers no Trillium on flex-start (vendor/data/tpu_zones.json).
POOL = {"name": "train", "machineType": "ct6e-standard-4t", "topology": "4x4", "zone": "us-central1-b",
        "provisioning": "spot"}  # fmt: skip
SOON = (datetime.now(UTC) + timedelta(days=7)).replace(microsecond=0)


def pool(**changes: Any) -> dict[str, Any]:
    merged = {**POOL, **changes}
    return {k: v for k, v in merged.items() if v is not None}


def window(start: datetime, days: float) -> dict[str, str]:
    return {"startTime": start.isoformat(), "endTime": (start + timedelta(days=days)).isoformat()}


def pools(*items: dict[str, Any]) -> dict[str, Any]:
    return {"tpu-stack:tpuPools": list(items)}


VALID_TOPOLOGIES = "2x2, 2x4, 4x4, 4x8, 8x8, 8x16, 16x16"
P0 = "tpu-stack:tpuPools[0]"
# MultiKueue: the stack's cluster (us-central1, default name tpu-cluster) is the manager of workers in other regions.
EAST = {"name": "east", "machineType": "ct6e-standard-4t", "provisioning": "flex-start", "zone": "us-east5-b"}
JAPAN = {"name": "japan", "machineType": "ct6e-standard-4t", "provisioning": "flex-start", "zone": "asia-northeast1-b"}
EAST5 = {"name": "tpu-east5", "region": "us-east5", "tpuPools": [EAST]}
ASIA = {"name": "tpu-japan", "region": "asia-northeast1", "tpuPools": [JAPAN]}
MK = "tpu-stack:multiKueue.workers"


def workers(*items: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"tpu-stack:multiKueue": {"workers": list(items), **fields}}


CASES: list[tuple[str, dict[str, Any], str]] = [
    ("unknown top-level key", {"tpu-stack:clusterr": {"name": "x"}},
     "tpu-stack:clusterr: unknown config key; did you mean tpu-stack:cluster? known tpu-stack keys: bucket, charts, "
     "cluster, labels, monitoring, multiKueue, protected, queues, saxml, serving, throwaway, tpuPools"),
    # The engine passes structured config as JSON text: text that only looks like JSON is a config error too.
    # The value is never repeated: pasted text may be a credential of no known form.
    ("labels that are not JSON", {"tpu-stack:labels": "{team: ml"},
     "tpu-stack:labels: the value starts like JSON but is not (Expecting property name enclosed in double quotes "
     "at column 2); give a YAML mapping or list"),
    # A key file's private_key with its newlines as typed: a control character inside a JSON string.
    ("a service account key pasted into a setting",
     {"tpu-stack:labels": '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADAN'
                          'BgkqhkiG9w0\n-----END PRIVATE KEY-----\n"}'},
     "tpu-stack:labels: the value starts like JSON but is not (Invalid control character at column 72); give a "
     "YAML mapping or list"),
    ("labels as an empty string", {"tpu-stack:labels": ""},
     "tpu-stack:labels: expected a mapping (key: value lines), got the text ''"),
    ("pools that are not JSON", {"tpu-stack:tpuPools": "[train"},
     "tpu-stack:tpuPools: the value starts like JSON but is not (Expecting value at column 2); give a YAML mapping "
     "or list"),
    ("unknown pool key", pools(pool(topolgy="4x4")),
     f"{P0}.topolgy: unknown key; did you mean topology?"),
    ("bad topology for the machine type", pools(pool(topology="4x5")),
     f"{P0}.topology: '4x5' is not a v6e topology for ct6e-standard-4t; valid: {VALID_TOPOLOGIES}"),
    ("topology of the wrong dimension", pools(pool(topology="2x2x2")),
     f"{P0}.topology: '2x2x2' has 3 dimensions; v6e slices are 2-D (ct6e-standard-4t valid: {VALID_TOPOLOGIES})"),
    ("zero slices", pools(pool(slices=0)), f"{P0}.slices: is 0; a pool group needs at least 1 slice"),
    ("negative slices", pools(pool(slices=-2)), f"{P0}.slices: is -2; a pool group needs at least 1 slice"),
    ("slices not a number", pools(pool(slices="three")),
     f"{P0}.slices: the text 'three' is not a whole number; write one like 4"),
    ("flex-start with a reservation", pools(pool(provisioning="flex-start", reservation="r1")),
     f"{P0}.reservation: provisioning flex-start cannot consume a reservation (it needs NO_RESERVATION); "
     "remove it or set provisioning: reservation"),
    ("queued with spot", pools(pool(provisioning="queued", spot=True)),
     f"{P0}.spot: spot is a provisioning mode, not a flag, and queued capacity cannot be spot; "
     "set provisioning: spot or remove spot"),
    ("spot flag on a spot pool", pools(pool(provisioning="spot", spot=True)),
     f"{P0}.spot: spot is a provisioning mode, not a flag, and this pool already has provisioning: spot; "
     "remove spot"),
    ("unknown provisioning mode", pools(pool(provisioning="preemptible")),
     f"{P0}.provisioning: the text 'preemptible' is not accepted; use 'flex-start', 'queued', 'on-demand', 'spot' "
     "or 'reservation'"),
    ("multi-host pool without a zone", pools(pool(zone=None)),
     f"{P0}.zone: required: a 4x4 slice spans 4 VMs, which must sit in one zone"),
    ("zone outside the region", pools(pool(zone="europe-west4-a")),
     f"{P0}.zone: 'europe-west4-a' is not in gcp:region 'us-central1'"),
    ("unknown machine type", pools(pool(machineType="n2-standard-8")),
     f"{P0}.machineType: 'n2-standard-8' is not a TPU machine type; valid: ct4p-hightpu-4t, ct5lp-hightpu-1t, "
     "ct5lp-hightpu-4t, ct5lp-hightpu-8t, ct5p-hightpu-4t, ct6e-standard-1t, ct6e-standard-4t, ct6e-standard-8t, "
     "tpu7x-standard-1t, tpu7x-standard-4t"),
    ("machine type and version both set", pools(pool(tpuVersion="v6e")),
     f"{P0}.machineType: set exactly one of machineType, tpuVersion or accelerator"),
    ("unknown TPU version", pools(pool(machineType=None, tpuVersion="v9")),
     f"{P0}.tpuVersion: 'v9' is not a TPU version; valid: v4, v5e, v5p, v6e, tpu7x"),
    ("node pool name too long once suffixed", pools(pool(name="a-very-long-pool-name-for-the-team-xyz", slices=12)),
     f"{P0}.name: node pool name 'a-very-long-pool-name-for-the-team-xyz-10' is 41 characters; "
     "GKE allows at most 40: shorten it"),
    ("name not a DNS label", pools(pool(name="Train_Pool")),
     f"{P0}.name: node pool name 'Train_Pool-0' must be a DNS label: lowercase letters, digits and '-', "
     "starting with a letter"),
    ("duplicate pool names", pools(pool(), pool(topology="2x4")),
     "tpu-stack:tpuPools[1].name: 'train' is already used by tpuPools[0]"),
    # GKE names node pools per cluster and the engine refuses a second resource of one URN (pulumi
    # pkg/resource/deploy/step_generator.go generateURN): a group's slice names must not be another group's.
    ("two groups, one node pool name", pools(pool(name="a", slices=2), pool(name="a-1", topology="2x4",
                                                                            legacyFirstSliceName=True)),
     "tpu-stack:tpuPools[1].name: its node pool 'a-1' (slice 0) is already slice 1 of tpuPools[0] ('a'); rename one "
     "of the two groups"),
    ("a group named after the system pool", pools(pool(name="system", legacyFirstSliceName=True)),
     f"{P0}.name: its node pool 'system' (slice 0) is already the cluster's system node pool; rename the group"),
    ("reservation mode without a reservation", pools(pool(provisioning="reservation")),
     f"{P0}.reservation: provisioning reservation needs a reservation name or a futureReservation"),
    ("reservation and future reservation both",
     pools(pool(provisioning="reservation", reservation="r", futureReservation=window(SOON, 7))),
     f"{P0}.futureReservation: set reservation or futureReservation, not both"),
    ("flex-start run longer than 7 days", pools(pool(provisioning="flex-start", maxRunDuration="8d")),
     f"{P0}.maxRunDuration: 8d exceeds flex-start's 7-day limit; use 7d or less"),
    # 7 days = 168 hours: one hour more is over the limit, which a duration read with a wrong unit would miss.
    ("flex-start run of 169 hours", pools(pool(provisioning="flex-start", maxRunDuration="169h")),
     f"{P0}.maxRunDuration: 169h exceeds flex-start's 7-day limit; use 7d or less"),
    ("flex-start run of 10081 minutes", pools(pool(provisioning="flex-start", maxRunDuration="10081m")),
     f"{P0}.maxRunDuration: 10081m exceeds flex-start's 7-day limit; use 7d or less"),
    ("run duration without a unit", pools(pool(maxRunDuration="3600")),
     f"{P0}.maxRunDuration: '3600' is not a duration; use a number and a unit, e.g. 3600s, 90m, 24h, 7d"),
    ("run duration on on-demand", pools(pool(provisioning="on-demand", maxRunDuration="24h")),
     f"{P0}.maxRunDuration: applies to flex-start, queued and spot pools, not on-demand"),
    ("calendar window ends before it starts",
     pools(pool(provisioning="reservation",
                futureReservation={"startTime": "2027-01-10T00:00:00Z", "endTime": "2027-01-09T00:00:00Z"})),
     f"{P0}.futureReservation: endTime 2027-01-09T00:00:00+00:00 is not after startTime"),
    # Calendar-mode limits (Compute "Create a future reservation request in calendar mode"): 1 to 90 days,
    # at most 120 days ahead; per request v6e 1-256, v5p 4-1024, v5e 16-256 chips (1, 4, 8 for SERVING only).
    ("calendar window longer than 90 days", pools(pool(provisioning="reservation", futureReservation=window(SOON, 91))),
     f"{P0}.futureReservation: window is 91 days long; calendar mode reserves 1 to 90 days"),
    ("calendar window shorter than a day",
     pools(pool(provisioning="reservation", futureReservation=window(SOON, 0.5))),
     f"{P0}.futureReservation: window is 0.5 days long; calendar mode reserves 1 to 90 days"),
    ("calendar window more than 120 days ahead",
     pools(pool(provisioning="reservation", futureReservation=window(SOON + timedelta(days=130), 7))),
     f"{P0}.futureReservation: startTime is more than 120 days ahead; calendar-mode requests can start at most "
     "that far out"),
    ("calendar request of a chip count Compute does not take",
     pools(pool(provisioning="reservation", slices=3, futureReservation=window(SOON, 7))),
     f"{P0}.slices: 3 x 4x4 = 48 v6e chips; a calendar-mode request takes 1, 4, 8, 16, 32, 64, 128, 256 chips: "
     "change slices or topology"),
    ("calendar request of a TPU version calendar mode does not offer",
     pools(pool(provisioning="reservation", machineType="ct4p-hightpu-4t", topology="2x2x2",
                futureReservation=window(SOON, 7))),
     f"{P0}.futureReservation: calendar mode reserves TPU v5e, v5p, v6e, not v4; use another provisioning mode or "
     "TPU version"),
    ("calendar request of 8 v5e chips for batch",
     pools(pool(provisioning="reservation", machineType="ct5lp-hightpu-4t", topology="2x4",
                futureReservation=window(SOON, 7))),
     f"{P0}.futureReservation.workloadType: 8 v5e chips can be reserved only for SERVING; set workloadType: SERVING "
     "or reserve 16 chips or more"),
    ("calendar limits are Compute's, not config",
     pools(pool(provisioning="reservation", futureReservation={**window(SOON, 7), "maxDurationDays": 14})),
     f"{P0}.futureReservation.maxDurationDays: unknown key; check the spelling against the config reference "
     "(docs/config.md)"),
    ("queued run longer than 7 days", pools(pool(provisioning="queued", maxRunDuration="8d")),
     f"{P0}.maxRunDuration: 8d exceeds the 7-day limit of queued pools (they run on flex-start capacity); use 7d "
     "or less"),
    ("saxml on a TPU version Saxml does not know",
     {**pools(pool(name="serve", provisioning="on-demand")),
      "tpu-stack:saxml": {"pool": "serve", "service": {"sourceRanges": ["10.20.0.0/24"]}}},
     "tpu-stack:saxml.pool: pool 'serve' is TPU v6e, a chip Saxml's model server does not know (--platform_chip); "
     "serve on v4, v5e"),
    ("saxml in a system namespace",
     {**pools(pool(name="serve", provisioning="on-demand", machineType="ct5lp-hightpu-4t", zone="us-central1-a")),
      "tpu-stack:saxml": {"pool": "serve", "namespace": "kube-system", "service": {"sourceRanges": ["10.20.0.0/24"]}}},
     "tpu-stack:saxml.namespace: 'kube-system' belongs to the system; use default or a namespace of your own"),
    ("system pool whose per-zone start exceeds its maximum",
     {"tpu-stack:cluster": {"systemPool": {"minNodes": 4, "maxNodes": 5}}},
     "tpu-stack:cluster.systemPool.maxNodes: GKE starts the pool with 2 node(s) in each of its 3 zones = 6, above "
     "maxNodes 5; raise maxNodes to 6 or more"),
    ("calendar window in the past",
     pools(pool(provisioning="reservation", futureReservation=window(SOON - timedelta(days=30), 7))),
     f"{P0}.futureReservation: startTime is in the past; choose a window that starts later"),
    # GKE runs TPU7x from 1.34.0-gke.2201000 on Standard clusters (its Ironwood page); the default floor is 1.33.
    ("multi-host Ironwood on the default version floor",
     pools(pool(machineType="tpu7x-standard-4t", topology="2x2x2", zone="us-central1-c")),
     "tpu-stack:cluster.minMasterVersion: '1.33' is below 1.34.0-gke.2201000, the first GKE version that runs TPU7x "
     "(Ironwood) on Standard clusters (tpuPools[0]); set minMasterVersion: \"1.34.0-gke.2201000\" or a newer version"),
    ("cluster name not a DNS label", {"tpu-stack:cluster": {"name": "TPU Cluster"}},
     "tpu-stack:cluster.name: cluster name 'TPU Cluster' must be a DNS label: lowercase letters, digits and '-', "
     "starting with a letter"),
    ("system pool min above max", {"tpu-stack:cluster": {"systemPool": {"minNodes": 5, "maxNodes": 2}}},
     "tpu-stack:cluster.systemPool: minNodes (5) is above maxNodes (2)"),
    ("unknown cluster mode", {"tpu-stack:cluster": {"mode": "serverless"}},
     "tpu-stack:cluster.mode: the text 'serverless' is not accepted; use 'standard' or 'autopilot'"),
    ("autopilot with TPU pools", {"tpu-stack:cluster": {"mode": "autopilot"}, **pools(pool())},
     "tpu-stack:tpuPools: Autopilot provisions TPU nodes itself; remove tpuPools or set cluster.mode: standard"),
    ("cluster location outside the region", {"tpu-stack:cluster": {"location": "us-east1-b"}},
     "tpu-stack:cluster.location: 'us-east1-b' is not in gcp:region 'us-central1'"),
    # A regional location too: the stack's subnetwork and Cloud NAT are in gcp:region, and GKE puts a cluster's nodes
    # only in a subnetwork of the cluster's own region.
    ("cluster region other than the stack's", {"tpu-stack:cluster": {"location": "us-east1"}},
     "tpu-stack:cluster.location: 'us-east1' is not gcp:region 'us-central1'; use gcp:region or one of its zones, or "
     "change gcp:region"),
    ("a subnetwork of another region", {"tpu-stack:cluster": {
        "network": "tpu-net", "subnetwork": "projects/proj-1234/regions/us-east1/subnetworks/tpu",
        "ipRanges": {"nodes": "10.1.0.0/24", "pods": "10.4.0.0/14", "services": "10.3.0.0/20"}}},
     "tpu-stack:cluster.subnetwork: 'projects/proj-1234/regions/us-east1/subnetworks/tpu' is a subnetwork of "
     "us-east1, but the cluster is in us-central1; a cluster's nodes use a subnetwork of its own region: name one "
     "of us-central1"),
    # GKE: "at least 48 hours of maintenance availability in a 32-day rolling window. Only contiguous availability
    # windows of at least four hours are considered." A Sunday each week is 4 Sundays in some 32 days: 24 hours.
    ("a maintenance window too rare for GKE", {"tpu-stack:cluster": {"maintenance": {"recurringWindow": {
        "startTime": "2026-01-04T02:00:00Z", "endTime": "2026-01-04T08:00:00Z",
        "recurrence": "FREQ=WEEKLY;BYDAY=SU"}}}},
     "tpu-stack:cluster.maintenance.recurringWindow: FREQ=WEEKLY;BYDAY=SU with 6-hour windows allows 24 hours of "
     "maintenance in some 32 days; GKE requires at least 48 hours in every 32 days, counting only windows of 4 hours "
     "or more: lengthen the window or let it recur more often"),
    ("maintenance windows too short to count", {"tpu-stack:cluster": {"maintenance": {"recurringWindow": {
        "startTime": "2026-01-04T01:00:00Z", "endTime": "2026-01-04T04:00:00Z", "recurrence": "FREQ=DAILY"}}}},
     "tpu-stack:cluster.maintenance.recurringWindow: FREQ=DAILY with 3-hour windows allows 0 hours of maintenance in "
     "some 32 days; GKE requires at least 48 hours in every 32 days, counting only windows of 4 hours or more: "
     "lengthen the window or let it recur more often"),
    ("every other weekend", {"tpu-stack:cluster": {"maintenance": {"recurringWindow": {
        "startTime": "2026-01-03T02:00:00Z", "endTime": "2026-01-03T08:00:00Z",
        "recurrence": "FREQ=WEEKLY;INTERVAL=2;BYDAY=SA,SU"}}}},
     "tpu-stack:cluster.maintenance.recurringWindow: FREQ=WEEKLY;INTERVAL=2;BYDAY=SA,SU with 6-hour windows allows "
     "24 hours of maintenance in some 32 days; GKE requires at least 48 hours in every 32 days, counting only "
     "windows of 4 hours or more: lengthen the window or let it recur more often"),
    ("auto-upgrade off on a release channel", pools(pool(autoUpgrade=False)),
     f"{P0}.autoUpgrade: GKE keeps node auto-upgrade on in clusters on a release channel (cluster.releaseChannel "
     "RAPID); remove autoUpgrade and hold upgrades during training with cluster.maintenance.exclusions, or set "
     "cluster.releaseChannel: UNSPECIFIED"),
    ("maintenance exclusion without a window",
     {"tpu-stack:cluster": {"maintenance": {"exclusions": [{"name": "run", **window(SOON, 10)}]}}},
     "tpu-stack:cluster.maintenance.exclusions: exclusions need a maintenance window; set dailyStartTime or "
     "recurringWindow"),
    ("maintenance exclusion that ends before it starts",
     {"tpu-stack:cluster": {"maintenance": {"dailyStartTime": "03:00", "exclusions": [
         {"name": "run", "startTime": "2026-12-10T00:00:00Z", "endTime": "2026-12-01T00:00:00Z"}]}}},
     "tpu-stack:cluster.maintenance.exclusions[0].endTime: 2026-12-01T00:00:00+00:00 is not after startTime "
     "2026-12-10T00:00:00+00:00"),
    ("no-upgrades exclusion longer than GKE allows",
     {"tpu-stack:cluster": {"maintenance": {"dailyStartTime": "03:00", "exclusions": [
         {"name": "freeze", "scope": "NO_UPGRADES", **window(SOON, 45)}]}}},
     "tpu-stack:cluster.maintenance.exclusions[0].endTime: a NO_UPGRADES exclusion lasts at most 30 days (this one "
     "45); shorten it or use scope NO_MINOR_OR_NODE_UPGRADES"),
    ("daily maintenance start not a time", {"tpu-stack:cluster": {"maintenance": {"dailyStartTime": "3am"}}},
     "tpu-stack:cluster.maintenance.dailyStartTime: '3am' is not a UTC time like 03:00"),
    ("reader with a checkpoint folder",
     {"tpu-stack:bucket": {"readers": [{"namespace": "default", "serviceAccount": "a", "checkpointPath": "ckpt"}]}},
     "tpu-stack:bucket.readers[0].checkpointPath: a reader holds roles/storage.objectViewer and cannot write "
     "checkpoints; move this entry to bucket.writers or remove checkpointPath"),
    # Pods that name no service account run as `default`: a grant to it is a grant to each of them.
    ("a bucket writer as the namespace's default account",
     {"tpu-stack:bucket": {"writers": [{"namespace": "default", "serviceAccount": "default"}]}},
     "tpu-stack:bucket.writers[0].serviceAccount: 'default' is the account of every pod in namespace default that "
     "names none, and each of them would write and delete the bucket's objects; name an account of its own, e.g. "
     "trainer"),
    ("a bucket reader as the namespace's default account",
     {"tpu-stack:bucket": {"readers": [{"namespace": "default", "serviceAccount": "default"}]}},
     "tpu-stack:bucket.readers[0].serviceAccount: 'default' is the account of every pod in namespace default that "
     "names none, and each of them would read the bucket; name an account of its own, e.g. analyst"),
    ("bucket folder that climbs out", {"tpu-stack:bucket": {"writers": [
         {"namespace": "default", "serviceAccount": "a", "dataPath": "../other"}]}},
     "tpu-stack:bucket.writers[0].dataPath: '../other' is not a folder of the bucket; use a relative path like "
     "datasets or checkpoints/team"),
    ("PodsReady timeout not a duration", {"tpu-stack:queues": {"podsReady": {"timeout": "two hours"}}},
     "tpu-stack:queues.podsReady.timeout: 'two hours' is not a duration; use a number and a unit, e.g. 3600s, 90m, "
     "24h, 7d"),
    ("PodsReady timeout under a minute", {"tpu-stack:queues": {"podsReady": {"timeout": "30s"}}},
     "tpu-stack:queues.podsReady.timeout: 30s is under a minute; Kueue needs a start timeout, give one of 1m or more"),
    ("PodsReady recovery timeout not a duration", {"tpu-stack:queues": {"podsReady": {"recoveryTimeout": "1y"}}},
     "tpu-stack:queues.podsReady.recoveryTimeout: '1y' is not a duration; use a number and a unit, e.g. 3600s, 90m, "
     "24h, 7d"),
    ("negative requeue limit", {"tpu-stack:queues": {"podsReady": {"requeueLimit": -1}}},
     "tpu-stack:queues.podsReady.requeueLimit: the number -1 is too small; use 0 or more"),
    # Kueue deletes the pods at its PodsReady timeout (30 minutes here, no pool groups): a Pending pod alert held
    # as long never fires.
    ("not-starting alert held past the PodsReady timeout", {"tpu-stack:monitoring": {"notStartingMinutes": 30}},
     "tpu-stack:monitoring.notStartingMinutes: 30 minutes is not less than Kueue's PodsReady timeout (30m0s), which "
     "deletes the pods first, so the alert would never fire; use fewer than 30, or a longer queues.podsReady.timeout"),
    ("notification channel not a resource name", {"tpu-stack:monitoring": {"notificationChannels": ["ops@x.com"]}},
     "tpu-stack:monitoring.notificationChannels[0]: 'ops@x.com' is not a notification channel; give its resource "
     "name, projects/<project>/notificationChannels/<id> (gcloud beta monitoring channels list)"),
    # Google Cloud resource labels (Resource Manager "Requirements for labels"): keys 1-63 characters starting with
    # a lowercase letter, values 0-63; lowercase letters, digits, '_' and '-' only.
    ("resource label key with upper case", {"tpu-stack:labels": {"CostCenter": "ml"}},
     "tpu-stack:labels.CostCenter: label key 'CostCenter' must be 1-63 lowercase letters, digits, '_' or '-', "
     "starting with a lowercase letter (Google Cloud labels)"),
    ("resource label key starting with a digit", {"tpu-stack:labels": {"1team": "ml"}},
     "tpu-stack:labels.1team: label key '1team' must be 1-63 lowercase letters, digits, '_' or '-', starting with a "
     "lowercase letter (Google Cloud labels)"),
    ("resource label value with a dot", {"tpu-stack:labels": {"team": "ml.platform"}},
     "tpu-stack:labels.team: value 'ml.platform' must be at most 63 lowercase letters, digits, '_' or '-' (Google "
     "Cloud labels)"),
    ("resource label value of 64 characters", {"tpu-stack:labels": {"team": "a" * 64}},
     f"tpu-stack:labels.team: value '{'a' * 64}' must be at most 63 lowercase letters, digits, '_' or '-' (Google "
     "Cloud labels)"),
    ("resource label value not text", {"tpu-stack:labels": {"cost-center": 4711}},
     'tpu-stack:labels.cost-center: the number 4711 is not text; quote it: "4711"'),
    ("more resource labels than Google Cloud allows", {"tpu-stack:labels": {f"l{i}": "x" for i in range(61)}},
     "tpu-stack:labels: node pools would carry 65 labels (these, managed-by, app, env and tpu-pool); Google Cloud "
     "allows 64: remove 1"),
    # Kubernetes labels ("Labels and Selectors: syntax and character set"): optional DNS-subdomain prefix and '/',
    # a name of 1-63 [A-Za-z0-9-_.] starting and ending alphanumeric; values at most 63 of the same.
    ("node label key with a space", pools(pool(labels={"team name": "a"})),
     f"{P0}.labels.team name: key 'team name': the name 'team name' must be 1-63 letters, digits, '-', '_' or '.', "
     "starting and ending with a letter or digit (Kubernetes labels)"),
    ("node label key with an upper-case prefix", pools(pool(labels={"Example.com/team": "a"})),
     f"{P0}.labels.Example.com/team: key 'Example.com/team': prefix 'Example.com' must be a DNS subdomain (lowercase "
     "letters, digits, '-' and '.', at most 253 characters), e.g. example.com/team"),
    ("node label name of 64 characters", pools(pool(labels={"example.com/" + "n" * 64: "a"})),
     f"{P0}.labels.example.com/{'n' * 64}: key 'example.com/{'n' * 64}': the name '{'n' * 64}' must be 1-63 letters, "
     "digits, '-', '_' or '.', starting and ending with a letter or digit (Kubernetes labels)"),
    ("node label value ending in a dash", pools(pool(labels={"team": "ml-"})),
     f"{P0}.labels.team: value 'ml-' must be at most 63 letters, digits, '-', '_' or '.', starting and ending with "
     "a letter or digit (Kubernetes labels)"),
    ("taint value with a slash", pools(pool(taints=[{"key": "example.com/dedicated", "value": "a/b"}])),
     f"{P0}.taints[0].value: value 'a/b' must be at most 63 letters, digits, '-', '_' or '.', starting and ending "
     "with a letter or digit (Kubernetes labels)"),
    # Project ids (Resource Manager "Creating and managing projects"): 6-30 characters, lowercase letters, digits and
    # hyphens, starting with a letter, not ending with a hyphen.
    ("project id too short", {"gcp:project": "tpu"},
     "gcp:project: 'tpu' is not a project id: 6-30 lowercase letters, digits and '-', starting with a letter and not "
     "ending with '-'"),
    ("project id with upper case and underscore", {"gcp:project": "My_Project"},
     "gcp:project: 'My_Project' is not a project id: 6-30 lowercase letters, digits and '-', starting with a letter "
     "and not ending with '-'"),
    ("project id ending in a hyphen", {"gcp:project": "tpu-stack-"},
     "gcp:project: 'tpu-stack-' is not a project id: 6-30 lowercase letters, digits and '-', starting with a letter "
     "and not ending with '-'"),
    ("project number instead of id", {"gcp:project": "123456789012"},
     "gcp:project: '123456789012' is a project number; give the project id (e.g. tpu-stack-dev)"),
    ("zone as gcp:region", {"gcp:region": "us-central1-b"},
     "gcp:region: 'us-central1-b' is a zone; gcp:region takes its region: us-central1"),
    ("gcp:region not a region", {"gcp:region": "central"}, "gcp:region: 'central' is not a region like us-east5"),
    ("zone as bucket location", {"tpu-stack:bucket": {"location": "us-central1-b"}},
     "tpu-stack:bucket.location: 'us-central1-b' is a zone; a bucket lives in a region (us-central1), a dual-region "
     "or a multi-region such as US"),
    ("region as a pool zone", pools(pool(zone="us-central1")),
     f"{P0}.zone: 'us-central1' is a region; give one of its zones, e.g. us-central1-a"),
    ("typo in the project namespace", {"tpu-stak:tpuPools": [pool()]},
     "tpu-stak:tpuPools: 'tpu-stak' is not a config namespace this stack reads, so everything under it would be "
     "ignored; did you mean tpu-stack:tpuPools? namespaces: tpu-stack, gcp, kubernetes, pulumi"),
    ("unknown namespace with nothing close", {"aws:region": "us-east-1"},
     "aws:region: 'aws' is not a config namespace this stack reads, so everything under it would be ignored; "
     "namespaces: tpu-stack, gcp, kubernetes, pulumi"),
    # The policy pack's least-privilege-iam reasoning, applied where the config grants roles.
    # IAM: a role granted on the project lets the member act as every service account in it
    # (https://cloud.google.com/iam/docs/service-account-permissions).
    ("a token creator role for the node account",
     {"tpu-stack:cluster": {"nodeServiceAccountRoles": ["roles/iam.serviceAccountTokenCreator"]}},
     "tpu-stack:cluster.nodeServiceAccountRoles[0]: roles/iam.serviceAccountTokenCreator on a whole "
     "project/folder/organization lets the member act as every service account in it: grant it on the one service "
     "account that needs it (node account roles are granted on the whole project)"),
    ("primitive role for the node account", {"tpu-stack:cluster": {"nodeServiceAccountRoles": ["roles/editor"]}},
     "tpu-stack:cluster.nodeServiceAccountRoles[0]: roles/editor is a primitive role: grant a predefined role scoped "
     "to what the member uses (node account roles are granted on the whole project)"),
    ("project-level storage role for the node account",
     {"tpu-stack:cluster": {"nodeServiceAccountRoles": ["roles/container.defaultNodeServiceAccount",
                                                        "roles/storage.objectViewer"]}},
     "tpu-stack:cluster.nodeServiceAccountRoles[1]: roles/storage.objectViewer on a whole project/folder/organization: "
     "grant roles/storage.objectUser (or objectViewer) on the one bucket instead (node account roles are granted on "
     "the whole project)"),
    ("node account role not a role name",
     {"tpu-stack:cluster": {"nodeServiceAccountRoles": ["artifactregistry.reader"]}},
     "tpu-stack:cluster.nodeServiceAccountRoles[0]: 'artifactregistry.reader' is not a role name; use "
     "roles/<service>.<role> or a custom role (projects/<id>/roles/<name>)"),
    ("node account role listed twice",
     {"tpu-stack:cluster": {"nodeServiceAccountRoles": ["roles/artifactregistry.reader",
                                                        "roles/artifactregistry.reader"]}},
     "tpu-stack:cluster.nodeServiceAccountRoles[1]: roles/artifactregistry.reader is already "
     "nodeServiceAccountRoles[0]; list it once"),
    # Shares and borrowing limits name the pool group they belong to.
    ("negative share", {**pools(pool()), "tpu-stack:queues": {"teams": [{"name": "a", "shares": {"train": -4}}]}},
     "tpu-stack:queues.teams[0].shares.train: -4 is negative; give chips (16) or a percentage of the pool's chips "
     "('50%')"),
    ("share that is not a number",
     {**pools(pool()), "tpu-stack:queues": {"teams": [{"name": "a", "shares": {"train": "half"}}]}},
     "tpu-stack:queues.teams[0].shares.train: 'half' is not a number of chips or a percentage up to 100%; give chips "
     "(16) or a percentage of the pool's chips ('50%')"),
    ("fractional share", {**pools(pool()), "tpu-stack:queues": {"teams": [{"name": "a", "shares": {"train": 2.5}}]}},
     "tpu-stack:queues.teams[0].shares.train: 2.5 is not a whole number of chips; give chips (16) or a percentage of "
     "the pool's chips ('50%')"),
    ("negative borrowing limit",
     {**pools(pool()), "tpu-stack:queues": {"teams": [{"name": "a", "borrowingLimit": {"train": -1}}]}},
     "tpu-stack:queues.teams[0].borrowingLimit.train: -1 is negative; give chips (16) or a percentage of the pool's "
     "chips ('50%')"),
    ("borrowing limit that is a list",
     {**pools(pool()), "tpu-stack:queues": {"teams": [{"name": "a", "borrowingLimit": {"train": [8]}}]}},
     "tpu-stack:queues.teams[0].borrowingLimit.train: [8] is not a number of chips; give chips (16) or a percentage "
     "of the pool's chips ('50%')"),
    # A FUSE file cache the node's boot disk cannot hold gets the TPU pod evicted (43 GiB allocatable on GKE's
    # default 100 GiB disk, 10 GiB kept for the pod's containers: 33 GiB at most).
    ("file cache larger than the boot disk holds",
     {**pools(pool()), "tpu-stack:bucket": {"writers": [{"namespace": "default", "serviceAccount": "t"}],
                                           "fileCacheGb": 80}},
     "tpu-stack:bucket.fileCacheGb: 80 GiB does not fit the 100 GiB boot disk of pool 'train' (43 GiB allocatable "
     "after GKE's reservations, 10 GiB kept for the pod's containers); use at most 33, or 0 to turn the file cache "
     "off"),
    # Pydantic's messages in the user's words.
    ("pools given as a mapping", {"tpu-stack:tpuPools": pool()},
     "tpu-stack:tpuPools: expected a list of pool groups ('-' items), got a mapping (key: value lines)"),
    ("version given as a number", {"tpu-stack:cluster": {"minMasterVersion": 1.33}},
     'tpu-stack:cluster.minMasterVersion: the number 1.33 is not text; quote it: "1.33"'),
    ("flag that is not true or false", {"tpu-stack:cluster": {"deletionProtection": "maybe"}},
     "tpu-stack:cluster.deletionProtection: the text 'maybe' is not true or false"),
    ("calendar start not a time",
     pools(pool(provisioning="reservation", futureReservation={"startTime": "soon", "endTime": "2027-01-09T00:00Z"})),
     f"{P0}.futureReservation.startTime: the text 'soon' is not a date and time like 2026-12-01T00:00:00Z"),
    # MultiKueue: the manager runs no TPU capacity and no servers of its own.
    ("pools on a MultiKueue manager", {**workers(EAST5), **pools(pool())},
     "tpu-stack:tpuPools: the MultiKueue manager runs no TPU pool groups; move them to a worker "
     "(multiKueue.workers[].tpuPools)"),
    # Before: also "saxml.pool: 'east' names no TPU pool; tpuPools: none", which only followed from this.
    ("Saxml on a MultiKueue manager",
     {**workers(EAST5), "tpu-stack:saxml": {"pool": "east", "service": {"sourceRanges": ["10.0.0.0/8"]}}},
     "tpu-stack:saxml: servers run on the cluster's own pool groups and the MultiKueue manager has none; remove it, "
     "or serve from a stack without multiKueue"),
    # Before: also "serving.servers: no server is listed" and "serving.service.sourceRanges: required".
    ("vLLM serving on a MultiKueue manager", {**workers(EAST5), "tpu-stack:serving": {"servers": []}},
     "tpu-stack:serving: servers run on the cluster's own pool groups and the MultiKueue manager has none; remove it, "
     "or serve from a stack without multiKueue"),
    # Before: also "multiKueue.workers[0].tpuPools: Autopilot provisions TPU nodes itself; remove tpuPools": the
    # worker inherited the manager's mode.
    ("Autopilot MultiKueue manager", {**workers(EAST5), "tpu-stack:cluster": {"mode": "autopilot"}},
     "tpu-stack:cluster.mode: MultiKueue's clusters are Standard clusters (workers run TPU pools); use standard"),
    ("subnetwork with MultiKueue workers",
     {**workers(EAST5), "tpu-stack:cluster": {"subnetwork": "projects/proj-1234/regions/us-central1/subnetworks/s"}},
     "tpu-stack:cluster.subnetwork: a subnetwork is regional and the workers are in other regions; remove it, or "
     "set each worker's own (multiKueue.workers[].subnetwork)"),
    ("worker in the manager's region", workers({**EAST5, "region": "us-east5"}, {**ASIA, "region": "us-central1",
     "tpuPools": [{**JAPAN, "provisioning": "spot", "zone": "us-central1-b"}]}),
     f"{MK}[1].region: 'us-central1' already has a cluster of this stack (gcp:region); put each worker in a region "
     "of its own (a cluster's Cloud NAT covers every subnetwork of its region, and Compute refuses a second NAT that "
     "does)"),
    ("two workers in one region", workers(EAST5, {**ASIA, "region": "us-east5",
     "tpuPools": [{**JAPAN, "zone": "us-east5-b"}]}),
     f"{MK}[1].region: 'us-east5' already has a cluster of this stack (workers[0].region); put each worker in a "
     "region of its own (a cluster's Cloud NAT covers every subnetwork of its region, and Compute refuses a second "
     "NAT that does)"),
    ("two workers of one name", workers(EAST5, {**ASIA, "name": "tpu-east5"}),
     f"{MK}[1].name: 'tpu-east5' is already the name of workers[0]"),
    ("two workers' groups, one node pool name",
     workers({**EAST5, "tpuPools": [{**EAST, "name": "a", "slices": 2}]},
             {**ASIA, "tpuPools": [{**JAPAN, "name": "a-1", "legacyFirstSliceName": True}]}),
     f"{MK}[1].tpuPools[0].name: its node pool 'a-1' (slice 0) is already slice 1 of workers[0].tpuPools[0] ('a'); "
     "rename one of the two groups"),
    ("one worker's groups, one node pool name",
     workers({**EAST5, "tpuPools": [{**EAST, "name": "a", "slices": 2},
                                    {**EAST, "name": "a-1", "legacyFirstSliceName": True, "topology": "2x4"}]}),
     f"{MK}[0].tpuPools[1].name: its node pool 'a-1' (slice 0) is already slice 1 of tpuPools[0] ('a'); rename one "
     "of the two groups"),
    ("worker named like the manager", workers({**EAST5, "name": "tpu-cluster"}),
     f"{MK}[0].name: 'tpu-cluster' is already the name of cluster.name"),
    # Node service account ids are the cluster name's first 24 characters and -nodes (30 at most).
    ("worker whose node account is the manager's",
     {"tpu-stack:cluster": {"name": "tpu-multiregion-cluster-manager"},
      **workers({**EAST5, "name": "tpu-multiregion-cluster-east5"})},
     f"{MK}[0].name: its node service account 'tpu-multiregion-cluster-nodes' (the name's first 24 characters) is "
     "already cluster.name's; change the start of the name"),
    ("two workers with one node account",
     workers({**EAST5, "name": "tpu-multiregion-worker-east5"}, {**ASIA, "name": "tpu-multiregion-worker-east-asia"}),
     f"{MK}[1].name: its node service account 'tpu-multiregion-worker-e-nodes' (the name's first 24 characters) is "
     "already workers[0]'s; change the start of the name"),
    ("worker name not a DNS label", workers({**EAST5, "name": "East_5"}),
     f"{MK}[0].name: cluster name 'East_5' must be a DNS label: lowercase letters, digits and '-', starting with a "
     "letter"),
    ("one pool group name in two workers", workers(EAST5, {**ASIA, "tpuPools": [{**JAPAN, "name": "east"}]}),
     f"{MK}[1].tpuPools[0].name: 'east' is already workers[0].tpuPools[0]"),
    ("share of no worker's pool group",
     {**workers(EAST5, ASIA), "tpu-stack:queues": {"teams": [{"name": "a", "shares": {"east": 4, "west": 4}}]}},
     "tpu-stack:queues.teams[0].shares.west: 'west' names no worker's pool group; pools: east, japan"),
    ("borrowing limit of no worker's pool group",
     {**workers(EAST5), "tpu-stack:queues": {"teams": [{"name": "a", "borrowingLimit": {"west": 4}}]}},
     "tpu-stack:queues.teams[0].borrowingLimit.west: 'west' names no worker's pool group; pools: east"),
    ("ladder rung of no worker's pool group",
     {**workers(EAST5), "tpu-stack:queues": {"ladders": {"v6e": ["east", "west"]}}},
     "tpu-stack:queues.ladders.v6e: 'west' names no worker's pool group; pools: east"),
    ("ladder across two workers",
     {**workers(EAST5, ASIA), "tpu-stack:queues": {"ladders": {"v6e": ["east", "japan"]}}},
     "tpu-stack:queues.ladders.v6e: its rungs are in different workers, and each worker's Kueue walks only its own; "
     "keep a ladder's pool groups in one worker"),
    # Before (and for the next three): also "multiKueue.workers: Tuple should have at least 1 item after validation,
    # not 0", pydantic counting only the workers that validated.
    ("worker region given as a zone", workers({**EAST5, "region": "us-east5-b"}),
     f"{MK}[0].region: 'us-east5-b' is a zone; a worker's region takes its region: us-east5"),
    ("worker region not a region", workers({**EAST5, "region": "east"}),
     f"{MK}[0].region: 'east' is not a region like us-east5"),
    ("worker without pool groups", workers({**EAST5, "tpuPools": []}),
     f"{MK}[0].tpuPools: is empty; it lists pool groups ('-' items) and needs at least 1"),
    # A worker's pool groups are checked as the worker's stack: their zones against the worker's region.
    ("worker pool zone outside the worker's region",
     workers(EAST5, {**ASIA, "tpuPools": [JAPAN, {**JAPAN, "name": "japan-4x4", "topology": "4x4",
                                                   "zone": "us-east5-b"}]}),
     f"{MK}[1].tpuPools[1].zone: 'us-east5-b' is not in {MK}[1].region 'asia-northeast1'"),
    ("worker pool zone given as a region", workers({**EAST5, "tpuPools": [{**EAST, "zone": "us-east5"}]}),
     f"{MK}[0].tpuPools[0].zone: 'us-east5' is a region; give one of its zones, e.g. us-east5-a"),
    ("no workers", workers(), f"{MK}: is empty; it lists worker clusters ('-' items) and needs at least 1"),
    ("token generation 0", workers(EAST5, tokenGeneration=0),
     "tpu-stack:multiKueue.tokenGeneration: the number 0 is too small; use 1 or more"),
    # Draining takes a group's chips out of every queue: naming it in a share would give a team nothing.
    ("a share of a draining group", {**pools(pool(drain=True), pool(name="other", topology="2x4")),
                                     "tpu-stack:queues": {"teams": [{"name": "a", "shares": {"train": 8}}]}},
     "tpu-stack:queues.teams[0].shares.train: pool 'train' is draining (drain: true): its chips are out of every "
     "queue until it is removed; it is not Kueue capacity"),
    ("a serving group drained", {**pools(pool(provisioning="on-demand", drain=True)),
                                 "tpu-stack:serving": {"service": {"sourceRanges": ["10.20.0.0/24"]}, "servers": [
                                     {"name": "chat", "pool": "train", "modelFolder": "models/chat",
                                      "billionsOfParameters": 8, "maxModelLen": 4096}]}},
     f"{P0}.drain: pool group 'train' serves the vLLM server 'chat', whose replicas hold its slices, not Kueue "
     "capacity: there is no queue to drain it from; remove drain"),
]  # fmt: skip


def write_stack(tmp_path: Path, config: dict[str, Any]) -> Path:
    path = tmp_path / "Pulumi.case.yaml"
    path.write_text(yaml.safe_dump({"config": config}))
    return path


@pytest.mark.parametrize(("case", "extra", "message"), CASES, ids=[c[0] for c in CASES])
def test_invalid_config_is_one_clear_line_and_exit_2(
    case: str, extra: dict[str, Any], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_one_clear_line(extra, message, tmp_path, capsys)


def assert_one_clear_line(
    extra: dict[str, Any], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A preview of a us-central1 stack with `extra` exits 2 with `message` as its one error line, registering
    nothing and printing no traceback."""
    config = {"gcp:project": "proj-1234", "gcp:region": "us-central1", **extra}
    out = tmp_path / "out"
    code = cli.main(["preview", "--stack", "case", "--config", str(write_stack(tmp_path, config)), "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.splitlines() == [f"error: {message}", "1 config error(s); nothing was registered."]
    assert "Traceback" not in captured.err + captured.out
    assert not out.exists()


@pytest.mark.parametrize(("case", "extra", "message"), CASES, ids=[c[0] for c in CASES])
def test_invalid_config_registers_nothing(case: str, extra: dict[str, Any], message: str) -> None:
    recorded: list[dict[str, Any]] = []
    with pytest.raises(ConfigError):
        run_program({"gcp:project": "proj-1234", "gcp:region": "us-central1", **extra}, stack="dev", recorded=recorded)
    assert recorded == []


def test_missing_project_names_the_command_to_fix_it() -> None:
    with pytest.raises(ConfigError) as error:
        load({"gcp:region": "us-central1"}, stack="dev")
    assert error.value.lines == ["gcp:project: required; set it with `pulumi config set gcp:project <value>`"]


def test_several_problems_give_one_line_each() -> None:
    with pytest.raises(ConfigError) as error:
        load({"gcp:project": "proj-1234", "gcp:region": "us-central1",
              **pools(pool(topology="4x5"), pool(name="b", slices=0))}, stack="dev")  # fmt: skip
    assert [line.split(":")[1] for line in error.value.lines] == [
        "tpuPools[0].topology",
        "tpuPools[1].slices",
    ]


def test_structured_values_arrive_as_json_strings_like_the_engine_sends_them() -> None:
    config = load({"gcp:project": "proj-1234", "gcp:region": "us-central1", "tpu-stack:tpuPools": '[{"name": "a", '
                   '"machineType": "ct5lp-hightpu-4t", "topology": "2x4", "slices": 3, "zone": "us-central1-a"}]'},
                  stack="dev")  # fmt: skip
    (group,) = config.tpu_pools
    assert (group.vms_per_slice, group.chips_per_slice, group.total_chips) == (2, 8, 24)
    assert group.node_pool_names == ["a-0", "a-1", "a-2"]


def test_provider_keys_are_the_providers_to_read_encrypted_or_not(tmp_path: Path) -> None:
    """An encrypted provider value reaches the offline preview as the secret marker and a real run as its text; either
    way only the provider reads it (tests/test_config_reference.py: the schema takes `{secure: ...}` there)."""
    data = stack_data("dev") | {
        "gcp:accessToken": {"secure": "v1:AAAABBBBCCCC"},
        "gcp:credentials": '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\nMIIE\n"}',
    }
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump({"config": data}))
    assert load(_engine_config(read_stack_file(path)), stack="dev").project == data["gcp:project"]


def test_an_encrypted_setting_of_the_stack_is_refused_without_its_text(tmp_path: Path) -> None:
    """Values under tpu-stack: are plain; the preview cannot read an encrypted one, so it says that, not that the
    marker it would read is bad JSON."""
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump({"config": stack_data("dev") | {"tpu-stack:labels": {"secure": "v1:AAAA"}}}))
    with pytest.raises(ConfigError) as error:
        read_stack_file(path)
    assert error.value.lines == [
        "tpu-stack:labels: is encrypted ({secure: ...}); settings under tpu-stack: are plain, none is a secret, and "
        "the preview cannot read an encrypted one: set it with `pulumi config set` without --secret"
    ]


def test_flex_start_runs_up_to_exactly_seven_days() -> None:
    """Flex-start VMs run at most 7 days (604800 s); 168h and 10080m are that limit, not over it."""
    for duration, seconds in (("7d", 604800), ("168h", 604800), ("10080m", 604800), ("24h", 86400), ("90s", 90)):
        flex = pool(provisioning="flex-start", zone="us-east5-b", maxRunDuration=duration)
        config = load({"gcp:project": "proj-1234", "gcp:region": "us-east5", **pools(flex)}, stack="dev")
        assert config.tpu_pools[0].max_run_duration_seconds == seconds, duration


def test_durations_as_go_writes_them_are_read_too() -> None:
    """Custom timeouts come back from the engine as Go durations ("45m0s"); config may use them as well."""
    assert [parse_duration(d) for d in ("1h30m", "45m0s", "1d12h", "1.5h")] == [5400, 2700, 129600, 5400]
    with pytest.raises(ValueError, match="'1h30' is not a duration"):
        parse_duration("1h30")


def test_stack_error_from_a_missing_stack_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["preview", "--stack", "nope"]) == 2
    assert "no Pulumi.nope.yaml" in capsys.readouterr().err


SMALL = {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
MEDIUM = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}}
LARGE = {"requests": {"cpu": "2", "memory": "2Gi"}, "limits": {"cpu": "4", "memory": "4Gi"}}


@pytest.mark.parametrize(
    ("system_max", "slices", "expected"),
    [(4, 30, SMALL), (5, 30, MEDIUM), (4, 254, MEDIUM), (5, 254, LARGE)],
    ids=["64 nodes", "65 nodes", "512 nodes", "513 nodes"],
)
def test_controllers_are_sized_by_the_most_nodes_the_cluster_can_have(
    system_max: int, slices: int, expected: dict[str, dict[str, str]]
) -> None:
    """System pool maximum + 2 VMs per v5e 2x4 slice; up to 64 nodes small, up to 512 medium, then large."""
    group = {"name": "ms", "machineType": "ct5lp-hightpu-4t", "topology": "2x4", "slices": slices,
             "zone": "us-central1-a"}  # fmt: skip
    config = load({"gcp:project": "proj-1234", "gcp:region": "us-central1", "tpu-stack:tpuPools": [group],
                   "tpu-stack:cluster": {"systemPool": {"maxNodes": system_max}}}, stack="dev")  # fmt: skip
    assert config.controller_resources == expected


def test_autopilot_controllers_count_only_the_declared_tpu_capacity() -> None:
    capacity = [{"tpuVersion": "v5e", "topology": "2x4", "slices": 33}]  # 66 VMs, no system pool
    config = load({"gcp:project": "proj-1234", "gcp:region": "us-central1", "tpu-stack:cluster": {"mode": "autopilot"},
                   "tpu-stack:queues": {"autopilotCapacity": capacity}}, stack="dev")  # fmt: skip
    assert config.controller_resources == MEDIUM


DEV_STACK = stack_path("dev")
DUPLICATED_POOL = """    - name: flex-v6e
      machineType: ct6e-standard-4t
      provisioning: flex-start
      zone: us-east5-b
"""
# One defect in the dev stack file, and the one line it must give. Before, each of these gave the listed
# follow-on lines instead (or nothing at all):
ONE_DEFECT = [
    # 3 lines, none naming the mistake: both pool zones and the cluster location "not in gcp:region 'us-east5-b'".
    ("zone as region", ("gcp:region: us-east5", "gcp:region: us-east5-b"),
     "gcp:region: 'us-east5-b' is a zone; gcp:region takes its region: us-east5"),
    # 6 lines about the teams' shares naming pools that do not exist; the pools themselves were silently dropped.
    ("typo in the namespace of the pools", ("  tpu-stack:tpuPools:", "  tpu-stak:tpuPools:"),
     "tpu-stak:tpuPools: 'tpu-stak' is not a config namespace this stack reads, so everything under it would be "
     "ignored; did you mean tpu-stack:tpuPools? namespaces: tpu-stack, gcp, kubernetes, pulumi"),
    # 1 line about the derived bucket name, not the project id.
    ("project id with upper case", ("gcp:project: tpu-stack-dev", "gcp:project: TPU_Stack_Dev"),
     "gcp:project: 'TPU_Stack_Dev' is not a project id: 6-30 lowercase letters, digits and '-', starting with a "
     "letter and not ending with '-'"),
    # Previewed cleanly; GKE would refuse the node label.
    ("node label value ending in a dash",
     ("- name: flex-v6e\n      # Deployed when a one-slice group's node pool was named after the group: it keeps that "
      "name.\n      legacyFirstSliceName: true\n",
      "- name: flex-v6e\n      # Deployed when a one-slice group's node pool was named after the group: it keeps that "
      "name.\n      legacyFirstSliceName: true\n      labels: {team: ml-}\n"),
     "tpu-stack:tpuPools[0].labels.team: value 'ml-' must be at most 63 letters, digits, '-', '_' or '.', starting "
     "and ending with a letter or digit (Kubernetes labels)"),
    # 3 lines: the name, the two pools' identical node labels, and research's share against one pool's chips.
    ("pool pasted twice", ("    # Seed multislice", DUPLICATED_POOL + "    # Seed multislice"),
     "tpu-stack:tpuPools[1].name: 'flex-v6e' is already used by tpuPools[0]"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "edit", "message"), ONE_DEFECT, ids=[c[0] for c in ONE_DEFECT])
def test_one_defect_in_the_dev_stack_gives_one_line(
    case: str, edit: tuple[str, str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = DEV_STACK.read_text()
    assert text.count(edit[0]) == 1, "the edit must apply to the dev stack file exactly once"
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(text.replace(edit[0], edit[1]))
    out = tmp_path / "out"
    assert cli.main(["preview", "--stack", "dev", "--config", str(path), "--out", str(out)]) == 2
    assert capsys.readouterr().err.splitlines() == [f"error: {message}", "1 config error(s); nothing was registered."]
    assert not out.exists()


def test_the_env_label_is_the_stack_name_as_a_label_value() -> None:
    """Stack names may hold upper case and '.'; Google Cloud label values may not."""
    config = load({"gcp:project": "proj-1234", "gcp:region": "us-central1"}, stack="QA.Blue_2")
    assert config.resource_labels["env"] == "qa-blue_2"


def test_lowercase_letters_of_any_script_are_label_characters() -> None:
    """Google Cloud labels take international lowercase letters (Unicode Ll and Lo), not upper case."""
    config = load({"gcp:project": "proj-1234", "gcp:region": "us-central1",
                   "tpu-stack:labels": {"équipe": "données", "团队": "ml"}}, stack="dev")  # fmt: skip
    assert config.resource_labels["équipe"] == "données"
    with pytest.raises(ConfigError) as error:
        load({"gcp:project": "proj-1234", "gcp:region": "us-central1", "tpu-stack:labels": {"Équipe": "x"}},
             stack="dev")  # fmt: skip
    assert error.value.lines == [
        "tpu-stack:labels.Équipe: label key 'Équipe' must be 1-63 lowercase letters, digits, '_' or '-', starting "
        "with a lowercase letter (Google Cloud labels)"
    ]


# ---- what a TPU pod may use of its node (GKE's node allocatable rules, by hand) --------------------------------------
@pytest.mark.parametrize(
    ("vcpus", "millicores"),
    [(1, 60), (2, 70), (4, 80), (112, 350), (180, 520)],  # 6% of core 1, 1% of core 2, 0.5% of 3-4, 0.25% above
)
def test_gke_cpu_reservation(vcpus: int, millicores: int) -> None:
    assert gke_reserved_cpu_millicores(vcpus) == millicores


@pytest.mark.parametrize(
    ("memory_mib", "reserved_mib"),
    [
        (4096, 1024),  # 25% of the first 4 GiB
        (16384, 2663),  # 1024 + 819.2 + 819.2 = 2662.4, rounded up
        (196608, 10855),  # 2662.4 + 6% of 112 GiB (6881.28) + 2% of 64 GiB (1310.72) = 10854.4
        (737280, 21668),  # 2662.4 + 6881.28 + 2% of 592 GiB (12124.16) = 21667.84
    ],
)
def test_gke_memory_reservation(memory_mib: int, reserved_mib: int) -> None:
    assert gke_reserved_memory_mib(memory_mib) == reserved_mib


def test_ephemeral_storage_of_gkes_default_boot_disk() -> None:
    """100 GiB disk: 94 GiB filesystem, 9.4 GiB eviction threshold (rounded up to 9626 MiB), min(50, 6 + 35, 100) = 41
    GiB reserved: 96256 - 9626 - 41984 = 44646 MiB. GKE's example node of a 100 GiB disk shows 47060071478 bytes
    (44880 MiB) allocatable: the model never promises more than GKE gives."""
    assert gke_allocatable_ephemeral_mib(100) == 44646
    assert gke_allocatable_ephemeral_mib(100) <= 47060071478 // 2**20


def test_tpu_container_requests_of_v5e_and_v6e_4t_nodes() -> None:
    """Allocatable less 1000m/2048Mi for GKE's DaemonSets and 250m/256Mi for the FUSE sidecar. Memory capacity is the
    machine's memory less the kernel's 2%; GKE's reservation applies to that capacity:
    v5e 4t: 112000 - 350 - 1250 = 110400m; 196608 * 0.98 = 192675, less 10776 reserved and 100 eviction = 181799
    allocatable (177.5 GiB; measured GKE nodes put it near 178), 179495Mi requested, 181543Mi limit.
    v6e 4t: 180000 - 520 - 1250 = 178230m; 737280 * 0.98 = 722534, less 21373 and 100 = 701061 allocatable,
    698757Mi requested, 700805Mi limit."""
    v5e = TpuPoolConfig(name="a", machine_type="ct5lp-hightpu-4t")
    v6e = TpuPoolConfig(name="b", machine_type="ct6e-standard-4t")
    assert v5e.tpu_container_requests == {"cpu": "110400m", "memory": "179495Mi"}
    assert v6e.tpu_container_requests == {"cpu": "178230m", "memory": "698757Mi"}
    assert v5e.tpu_container_limits == {"memory": "181543Mi"}
    assert v6e.tpu_container_limits == {"memory": "700805Mi"}
    assert v5e.file_cache_limit_gib == v6e.file_cache_limit_gib == 33  # (44646 - 10240) // 1024


# ---- what a newcomer trips on ----------------------------------------------------------------------------------


def preview_errors(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The `error:` lines of `make preview` for a stack file written exactly as `text` (YAML as a person types it)."""
    path = tmp_path / "Pulumi.case.yaml"
    path.write_text("config:\n  gcp:project: proj-1234\n  gcp:region: us-central1\n" + text)
    assert cli.main(["preview", "--stack", "case", "--config", str(path), "--out", str(tmp_path / "out")]) == 2
    return [line.removeprefix("error: ") for line in capsys.readouterr().err.splitlines()[:-1]]


@pytest.mark.parametrize(
    ("written", "message"),
    [
        # YAML reads 1.30 as the float 1.3 (and Pulumi's go-yaml does too); the version meant is the one written.
        ("1.30", 'the number 1.30 is not text (YAML reads it as 1.3); quote it: "1.30"'),
        ("1.33", 'the number 1.33 is not text; quote it: "1.33"'),
        ("1.300", 'the number 1.300 is not text (YAML reads it as 1.3); quote it: "1.300"'),
    ],
)
def test_a_number_where_text_belongs_is_quoted_back_as_written(
    written: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = f"  tpu-stack:cluster:\n    minMasterVersion: {written}\n"
    assert preview_errors(tmp_path, text, capsys) == [f"tpu-stack:cluster.minMasterVersion: {message}"]


def test_the_program_alone_cannot_know_the_text_and_says_what_yaml_did() -> None:
    """Under the real engine the program gets the number Pulumi read (1.3), not the text: it says how YAML reads it."""
    with pytest.raises(ConfigError) as error:
        load({"gcp:project": "proj-1234", "gcp:region": "us-central1",
              "tpu-stack:cluster": {"minMasterVersion": 1.3}}, stack="dev")  # fmt: skip
    assert error.value.lines == [
        "tpu-stack:cluster.minMasterVersion: the number 1.3 is not text; quote it as written (unquoted, YAML drops "
        'trailing zeros: 1.30 arrives as 1.3), e.g. "1.3"'
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("  tpu-stack:tpuPools:\n    - name: a\n      machineType: ct6e-standard-4t\n      provisoning: spot\n"
         "      zone: us-central1-b\n",
         "tpu-stack:tpuPools[0].provisoning: unknown key; did you mean provisioning?"),
        ("  tpu-stack:cluster:\n    systemPool:\n      maxNode: 3\n",
         "tpu-stack:cluster.systemPool.maxNode: unknown key; did you mean maxNodes?"),
        ("  tpu-stack:tpuPools:\n    - name: a\n      machineType: ct6e-standard-4t\n      zone: us-central1-b\n"
         "  tpu-stack:queues:\n    teams:\n      - name: a\n        borrowingLimits: {}\n",
         "tpu-stack:queues.teams[0].borrowingLimits: unknown key; did you mean borrowingLimit?"),
        ("  tpu-stack:clusterr:\n    name: x\n",
         "tpu-stack:clusterr: unknown config key; did you mean tpu-stack:cluster? known tpu-stack keys: bucket, "
         "charts, cluster, labels, monitoring, multiKueue, protected, queues, saxml, serving, throwaway, tpuPools"),
        ("  tpu-stack:cluster:\n    colour: blue\n",
         "tpu-stack:cluster.colour: unknown key; check the spelling against the config reference (docs/config.md)"),
    ],
)  # fmt: skip
def test_an_unknown_key_gets_the_closest_known_one(
    text: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert preview_errors(tmp_path, text, capsys) == [message]


def test_independent_mistakes_in_one_entry_are_all_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One pool entry, four mistakes that do not follow from each other: its name, a label, its topology and its
    zone. A misspelled key with a close match is read as that key for the other checks, so its entry's other
    mistakes are reported with it."""
    text = (
        "  tpu-stack:tpuPools:\n"
        "    - name: Train_A\n"
        "      machineType: ct5lp-hightpu-4t\n"
        "      topology: 2x5\n"
        "      zone: us-east1-c\n"
        "      labels: {team: ml-}\n"
        "    - name: b\n"
        "      machineType: ct6e-standard-4t\n"
        "      provisoning: flex-start\n"
        "      maxRunDuration: 24h\n"
        "      zone: us-east1-b\n"
    )
    assert preview_errors(tmp_path, text, capsys) == [
        "tpu-stack:tpuPools[1].provisoning: unknown key; did you mean provisioning?",
        "tpu-stack:tpuPools[0].labels.team: value 'ml-' must be at most 63 letters, digits, '-', '_' or '.', "
        "starting and ending with a letter or digit (Kubernetes labels)",
        "tpu-stack:tpuPools[0].topology: '2x5' is not a v5e topology for ct5lp-hightpu-4t; valid: " + VALID_TOPOLOGIES,
        "tpu-stack:tpuPools[0].name: node pool name 'Train_A-0' must be a DNS label: lowercase letters, digits and "
        "'-', starting with a letter",
        "tpu-stack:tpuPools[0].zone: 'us-east1-c' is not in gcp:region 'us-central1'",
        "tpu-stack:tpuPools[1].zone: 'us-east1-b' is not in gcp:region 'us-central1'",
    ]


MACHINE_TYPES = (
    "ct4p-hightpu-4t, ct5lp-hightpu-1t, ct5lp-hightpu-4t, ct5lp-hightpu-8t, ct5p-hightpu-4t, ct6e-standard-1t, "
    "ct6e-standard-4t, ct6e-standard-8t, tpu7x-standard-1t, tpu7x-standard-4t"
)


def test_a_bad_machine_type_does_not_hide_a_slice_count_of_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`slices: 0` is wrong whatever the machine: both lines at once, not the second after the first is fixed."""
    text = "  tpu-stack:tpuPools:\n    - name: a\n      machineType: ct6e-standard-4tx\n      slices: 0\n"
    assert preview_errors(tmp_path, text, capsys) == [
        f"tpu-stack:tpuPools[0].machineType: 'ct6e-standard-4tx' is not a TPU machine type; valid: {MACHINE_TYPES}",
        "tpu-stack:tpuPools[0].slices: is 0; a pool group needs at least 1 slice",
    ]


def test_a_value_of_the_wrong_type_does_not_hide_the_other_sections_mistakes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A version written as a number is read as left out for the other checks: the pools' mistakes come with it."""
    text = (
        "  tpu-stack:cluster:\n    minMasterVersion: 1.30\n"
        "  tpu-stack:tpuPools:\n    - name: a\n      machineType: ct6e-standard-4tx\n      slices: 0\n"
    )
    assert preview_errors(tmp_path, text, capsys) == [
        'tpu-stack:cluster.minMasterVersion: the number 1.30 is not text (YAML reads it as 1.3); quote it: "1.30"',
        f"tpu-stack:tpuPools[0].machineType: 'ct6e-standard-4tx' is not a TPU machine type; valid: {MACHINE_TYPES}",
        "tpu-stack:tpuPools[0].slices: is 0; a pool group needs at least 1 slice",
    ]


def test_a_check_that_involves_a_value_left_out_is_not_repeated() -> None:
    """With minMasterVersion read as left out, the TPU7x floor check would judge the default (1.33), not the 1.35
    written as a number; only the number's own line is reported, and the pool's independent mistake."""
    pool = {"name": "iw", "machineType": "tpu7x-standard-4t", "topology": "2x2x2", "zone": "us-central1-c",
            "provisioning": "flex-start", "maxRunDuration": "24h", "slices": 0}  # fmt: skip
    with pytest.raises(ConfigError) as error:
        load({"gcp:project": "proj-1234", "gcp:region": "us-central1", "tpu-stack:tpuPools": [pool],
              "tpu-stack:cluster": {"minMasterVersion": 1.35}}, stack="dev")  # fmt: skip
    assert error.value.lines == [
        "tpu-stack:cluster.minMasterVersion: the number 1.35 is not text; quote it as written (unquoted, YAML drops "
        'trailing zeros: 1.30 arrives as 1.3), e.g. "1.35"',
        "tpu-stack:tpuPools[0].slices: is 0; a pool group needs at least 1 slice",
    ]


def loaded_fixture(stack: str, change: Any = None) -> Any:
    """The fixture stack's config model, after `change(config)` on its `config:` mapping."""
    data = copy.deepcopy(stack_data(stack))
    if change is not None:
        change(data)
    return load(_engine_config(data), stack=stack)


UNHELD = (
    "tpu-stack:queues.teams: 8 chips of pool group multislice are no team's share: the cohort lends them to whichever "
    "team asks first and no team can count on them; add them to a team's shares if one needs them"
)


def test_capacity_no_team_holds_is_a_warning() -> None:
    """dev: multislice is 3 v5e 2x4 slices = 24 chips; research holds 8, training 8: 8 are the cohort's."""
    assert loaded_fixture("dev").warnings == [UNHELD]
    assert loaded_fixture("prod").warnings == []  # train 100% training, burst 100% research, serve is Saxml's


def test_a_spot_rung_without_a_taint_is_a_warning() -> None:
    """dev's spot rung (tpuPools[2]) carries the gke-spot taint; without it, TPU pods Kueue never admitted can take
    its VMs."""

    def untaint(config: dict[str, Any]) -> None:
        del config["tpu-stack:tpuPools"][2]["taints"]

    assert loaded_fixture("dev", untaint).warnings == [
        UNHELD,
        "tpu-stack:tpuPools[2].taints: multislice-spot is a spot rung of ladder multislice with no taint: TPU pods "
        "Kueue did not admit can take its VMs, which Kueue counts as free and Compute Engine may reclaim at any time; "
        'taint it (key: cloud.google.com/gke-spot, value: "true"): Kueue adds the toleration to what it admits there',
    ]


def test_a_gated_model_without_a_token_is_a_warning() -> None:
    """llm: llama-31-70b downloads meta-llama/Llama-3.1-70B-Instruct, gated on Hugging Face; llama-33-70b reads
    weights from the bucket (no download)."""
    assert loaded_fixture("llm").warnings == []

    def no_token(config: dict[str, Any]) -> None:
        del config["tpu-stack:serving"]["huggingFaceToken"]

    assert loaded_fixture("llm", no_token).warnings == [
        "tpu-stack:serving.servers[0].model: meta-llama/Llama-3.1-70B-Instruct is gated on Hugging Face (its "
        "publisher's terms must be accepted) and the download fails without a token; set serving.huggingFaceToken "
        "to the Secret holding the token of an account that accepted them"
    ]


def test_the_program_logs_its_warnings_as_the_engine_shows_them() -> None:
    """`pulumi preview` prints what the program logs with pulumi.log.warn; the offline engine keeps it with the plan
    (and never on stderr)."""
    assert stack_plan("dev", render_charts=False).logged == [("warning", UNHELD)]
    assert stack_plan("prod", render_charts=False).logged == []
