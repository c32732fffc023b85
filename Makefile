# The two everyday commands: `make preview` (offline plan of the dev stack) and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
HELM := .tools/bin/helm
STACK ?= dev
# The team's policy config (reviewed exceptions, e.g. prod's tag-pinned images); the workflows pass the same file.
POLICY_CONFIG ?= policies/config.json

.PHONY: preview test lint typecheck unit bench urns workloads scan mutate clean helm config-docs analyzers plan-diff properties

$(STAMP): requirements.txt requirements-cli.txt requirements-dev.txt policies/requirements.txt constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt -c constraints.txt
	touch $(STAMP)

# The pinned helm (offline/helm.py) the offline preview renders the Kueue and JobSet charts with.
$(HELM): offline/helm.py | $(STAMP)
	$(PY) -m offline.helm

helm: $(HELM)

# The tests' analyzers of effects (tests/effects/): IBM's network-config-analyzer in its own virtualenv (it pins
# another PyYAML than the stack), and promtool from Debian's prometheus package (tests/effects/promtool.py).
NCA_VENV := .nca-venv
NCA_STAMP := $(NCA_VENV)/.installed-stamp
PROMTOOL := .promtool/bin/promtool

$(NCA_STAMP): requirements-nca.txt constraints-nca.txt
	test -x $(NCA_VENV)/bin/python || $(PYTHON) -m venv $(NCA_VENV)
	$(NCA_VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-nca.txt -c constraints-nca.txt
	touch $(NCA_STAMP)

$(PROMTOOL): tests/effects/promtool.py | $(STAMP)
	$(PY) -m tests.effects.promtool

analyzers: $(NCA_STAMP) $(PROMTOOL)

# Bytecode of the project's own modules, which Python reads even where PYTHONDONTWRITEBYTECODE stops it writing
# any (pip compiles installed packages at install the same way): a tenth of a preview. Only changed files recompile.
BYTECODE := $(PY) -m compileall -q components offline policies bench

preview: $(STAMP) $(HELM)
	$(BYTECODE)
	$(PY) -m offline preview --stack $(STACK) --policy-config $(POLICY_CONFIG)

workloads: $(STAMP)
	$(PY) -m offline workloads --stack $(STACK)

test: lint unit

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
	$(VENV)/bin/check-jsonschema --schemafile schema/stack.schema.json Pulumi.*.yaml

unit: $(STAMP) $(HELM) $(NCA_STAMP) $(PROMTOOL)
	$(PY) -m pytest -q

# The property tests (tests/properties/) with many more examples than `make test` runs, drawn at random: configs a team
# may write and changes between them (TPU_STACK_PROPERTIES=deep; a number instead sets the configs, a sixteenth of it
# the changes of each kind). Not part of `make test`: about 10 minutes on 2 cores.
PROPERTIES ?= deep
properties: $(STAMP) $(HELM)
	TPU_STACK_PROPERTIES=$(PROPERTIES) $(PY) -m pytest -q tests/properties

bench: $(STAMP) $(HELM)
	$(BYTECODE)
	$(PY) -m bench

# The plan diff a pull request gets, on a laptop: what HEAD changes against BASE in every stack (capacity, quotas,
# replacements, refusals, resources, policies). BASE is a git revision (default HEAD); HEAD is a revision too, or empty
# (the default) for the working tree, uncommitted edits included. Both sides are built outside the work tree with the
# installed environment (offline/local_diff.py); the comment is printed and written to build/plan-diff/comment.md.
BASE ?= HEAD
HEAD ?=
plan-diff: $(STAMP) $(HELM)
	$(PY) -m offline.local_diff --base '$(BASE)' $(if $(HEAD),--head '$(HEAD)')

# Regenerate the config reference from the config models (components/config/): the README's tables, Pulumi.yaml's
# config sections and schema/stack.schema.json. `make test` fails while they differ (tests/test_config_reference.py).
config-docs: $(STAMP)
	$(PY) -m offline.configdocs --write

# Regenerate tests/snapshots/urns-*.txt after a deliberate rename or new resources (see offline/urns.py).
urns: $(STAMP) $(HELM)
	$(PY) -m offline.urns --update

# Security scan (not part of `make test`): checkov over every object the stacks render (manifests, example
# workloads, JobSets unwrapped into Jobs) and zizmor over the workflows, from their own pinned virtualenv.
SCAN_VENV := .scan-venv
SCAN_STAMP := $(SCAN_VENV)/.installed-stamp
# Every stack file present (Pulumi.yaml is the project, not a stack): a new stack is scanned with no other edit.
SCAN_STACKS ?= $(sort $(patsubst Pulumi.%.yaml,%,$(wildcard Pulumi.*.yaml)))

$(SCAN_STAMP): requirements-scan.txt constraints-scan.txt
	test -x $(SCAN_VENV)/bin/python || $(PYTHON) -m venv $(SCAN_VENV)
	$(SCAN_VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-scan.txt -c constraints-scan.txt
	touch $(SCAN_STAMP)

scan: $(STAMP) $(HELM) $(SCAN_STAMP)
	for stack in $(SCAN_STACKS); do \
		$(PY) -m offline preview --stack $$stack --policy-config $(POLICY_CONFIG) --quiet >/dev/null && \
		$(PY) -m offline workloads --stack $$stack >/dev/null || exit 1; \
	done
	$(PY) -m security $(SCAN_STACKS)
	$(SCAN_VENV)/bin/checkov --directory build/scan --framework kubernetes --compact --quiet
	$(SCAN_VENV)/bin/zizmor --offline --min-severity medium .github/workflows

# Mutation testing (not part of `make test`): its own virtualenv; scope and tests in pyproject.toml [tool.mutmut].
MUTATE_VENV := .mutmut-venv
MUTATE_STAMP := $(MUTATE_VENV)/.installed-stamp

$(MUTATE_STAMP): requirements-mutate.txt requirements-dev.txt requirements-cli.txt requirements.txt policies/requirements.txt constraints.txt
	test -x $(MUTATE_VENV)/bin/python || $(PYTHON) -m venv $(MUTATE_VENV)
	$(MUTATE_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-mutate.txt -c constraints.txt
	touch $(MUTATE_STAMP)

# MUTANTS: mutmut's names of the mutants to run (e.g. "components.gcs_fuse*"), all of them when empty.
MUTANTS ?=
mutate: $(MUTATE_STAMP) $(HELM) $(NCA_STAMP) $(PROMTOOL)
	rm -rf mutants
	$(MUTATE_VENV)/bin/mutmut run --max-children 2 $(MUTANTS)
	$(MUTATE_VENV)/bin/mutmut results

clean:
	rm -rf build .tools .promtool .pytest_cache .mypy_cache .ruff_cache mutants
