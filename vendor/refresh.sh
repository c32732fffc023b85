#!/usr/bin/env bash
# Refresh vendor/ from upstream (needs the internet): see vendor/README.md.
# usage: vendor/refresh.sh KUEUE_TAG JOBSET_TAG GMP_TAG XPK_VERSION LWS_TAG PULUMI_TAG   e.g. v0.19.2 v0.12.0 v0.17.2 1.16.0 v0.10.0 v3.259.0
set -euo pipefail
[ $# -eq 6 ] || { sed -n 3p "$0"; exit 2; }
kueue="$1" jobset="$2" gmp="$3" xpk="$4" lws="$5" pulumi="$6"
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
helm="$repo/.tools/bin/helm"
[ -x "$helm" ] || { echo "run 'make helm' first" >&2; exit 2; }
raw=https://raw.githubusercontent.com

fetch() { curl --fail --silent --show-error --location "$1" -o "$2"; }

for kind in admissionchecks clusterqueues cohorts localqueues multikueueclusters multikueueconfigs provisioningrequestconfigs resourceflavors \
  topologies workloadpriorityclasses; do
  fetch "$raw/kubernetes-sigs/kueue/$kueue/config/components/crd/bases/kueue.x-k8s.io_$kind.yaml" \
    "$here/crds/kueue/kueue.x-k8s.io_$kind.yaml"
done
fetch "$raw/kubernetes-sigs/jobset/$jobset/config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml" \
  "$here/crds/jobset/jobset.x-k8s.io_jobsets.yaml"
# The LWS chart ships its CRD (with the conversion stanza naming lws-system): take the chart's copy.
fetch "$raw/kubernetes-sigs/lws/$lws/charts/lws/crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml" \
  "$here/crds/lws/leaderworkerset.x-k8s.io_leaderworkersets.yaml"
for kind in podmonitorings clusterpodmonitorings; do
  fetch "$raw/GoogleCloudPlatform/prometheus-engine/$gmp/charts/operator/crds/monitoring.googleapis.com_$kind.yaml" \
    "$here/crds/gmp/monitoring.googleapis.com_$kind.yaml"
done

# The Pulumi CLI's schema of Pulumi.yaml (it validates every project file it loads against it).
fetch "$raw/pulumi/pulumi/$pulumi/sdk/go/common/workspace/project.json" "$here/schemas/pulumi-project.json"

rm -f "$here"/charts/*.tgz
"$helm" pull oci://registry.k8s.io/kueue/charts/kueue --version "${kueue#v}" -d "$here/charts"
"$helm" pull oci://registry.k8s.io/jobset/charts/jobset --version "${jobset#v}" -d "$here/charts"
# LWS chart versions keep the leading v (lws-v0.10.0.tgz).
"$helm" pull oci://registry.k8s.io/lws/charts/lws --version "$lws" -d "$here/charts"

# The TPU catalog: every TPU system xpk knows, as (version, node label, machine type, chips/VM, topology, chips, VMs).
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
python3 -m venv "$scratch/venv"
"$scratch/venv/bin/pip" install --quiet "xpk==$xpk"
"$scratch/venv/bin/python" - "$xpk" > "$here/data/tpu_catalog_xpk.json" <<'PY'
import json
import sys
from datetime import date

from xpk.core.system_characteristics import UserFacingNameToSystemCharacteristics as systems

names = {"v5litepod": "v5e"}  # xpk's device name for v5e
records = sorted(
    {
        (names.get(s.device_type.split("-")[0], s.device_type.split("-")[0]), s.gke_accelerator, s.gce_machine_type,
         s.chips_per_vm, s.topology, s.chips_per_vm * s.vms_per_slice, s.vms_per_slice)
        for s in systems.values()
        if str(s.accelerator_type).endswith("TPU")
    }
)
source = f"Google xpk (AI-Hypercomputer/xpk) {sys.argv[1]} src/xpk/core/system_characteristics.py, extracted {date.today()}"
fields = ["tpu_version", "accelerator_label", "machine_type", "chips_per_vm", "topology", "chips", "vms"]
json.dump({"source": source, "fields": fields, "records": [list(r) for r in records]}, sys.stdout, separators=(",", ":"))
PY

cd "$here" && find . -type f ! -name README.md ! -name SHA256SUMS ! -name refresh.sh | sort | xargs sha256sum > SHA256SUMS
echo "Refreshed vendor/; now update vendor/README.md and ChartsConfig, then run make test."
