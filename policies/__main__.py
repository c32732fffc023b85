"""What the Pulumi CLI runs for `--policy-pack policies`: serve the pack built from rules.POLICIES.

Only this file constructs PolicyPack (it starts a gRPC server); everything else imports `rules`.
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for folder in (str(HERE), str(HERE.parent)):  # `import rules` and `components.tpu_catalog`
    if folder not in sys.path:
        sys.path.insert(0, folder)

import rules  # noqa: E402
from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402

PolicyPack(name="tpu-stack", policies=rules.POLICIES, enforcement_level=EnforcementLevel.MANDATORY)
