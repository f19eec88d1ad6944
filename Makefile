# Compile Lab entry points.
#   make run      worker + dashboard on SQLite, Ctrl-C stops both
#   make test     the fast test tier, each test under a timeout (make test-slow: the slow tier)
#   make lint     ruff
#   make install  .venv with what running needs (requirements.txt); make run does it first
#   make venv     .venv with the test and dev packages too (requirements-dev.txt); make test does
# Each install step reruns only when its requirements file changes: `make run` after `make test`
# installs nothing, `make test` after `make run` adds only the dev packages.

SHELL := /bin/bash

# Python 3.11 by default; override with `make PYTHON=python3.12 venv` (any >= 3.11 works).
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV ?= .venv
# e.g. VENV_ARGS=--system-site-packages to reuse a torch installed outside the venv
VENV_ARGS ?=
PY := $(VENV)/bin/python
# One stamp per install step, so that each reruns only when its own requirements change.
RUN_STAMP := $(VENV)/.run-requirements-stamp
DEV_STAMP := $(VENV)/.dev-requirements-stamp

# The torch release installed when the venv has none.  On this project's dev and CI machines
# pip takes it from a CPU wheel that lies on local disk (no multi-GB download); on a GPU
# machine, install your own CUDA build of torch into the venv first and it is kept.
TORCH_FALLBACK ?= torch==2.13.0

export COMPILELAB_DB ?= sqlite:///compilelab.db
# The dashboard listens on this machine only; `make dashboard ADDRESS=0.0.0.0` (or
# COMPILELAB_ADDRESS) opens it to the network, with a printed warning: see README "Sharing".
ADDRESS ?= $(or $(COMPILELAB_ADDRESS),127.0.0.1)
PORT ?= $(or $(COMPILELAB_PORT),8501)
PYTEST_TIMEOUT ?= 300
PYTEST_ARGS ?=

# The shared deployment (README "Sharing the dashboard"): nginx in front, sign-in first.
LISTEN ?= 127.0.0.1:8443
SERVER_NAME ?=
SHARED_ARGS ?=

.PHONY: install venv run worker dashboard shared test test-slow lint format clean-venv

install: $(RUN_STAMP)

venv: $(DEV_STAMP)

# What running needs: torch, then requirements.txt.  No test or dev package (pytest, ruff,
# playwright, the optional model registries): a user who only runs the app does not get them.
$(RUN_STAMP): requirements.txt
	@if [ ! -x "$(PY)" ]; then \
		echo "creating $(VENV) with $(PYTHON)"; \
		"$(PYTHON)" -m venv $(VENV_ARGS) "$(VENV)"; \
	fi
	@# torch goes in first and only when the venv cannot import one.  Why: requirements.txt
	@# asks for torch>=2.4, which with no torch present would pull the newest (CUDA, several
	@# GB) release.  Here torch==2.13.0 resolves to the local CPU wheel; on a GPU machine the
	@# user has installed their CUDA torch beforehand, `import torch` succeeds, and we keep it.
	@if ! "$(PY)" -c "import torch" >/dev/null 2>&1; then \
		echo "no torch in $(VENV): installing $(TORCH_FALLBACK)"; \
		"$(PY)" -m pip install --disable-pip-version-check "$(TORCH_FALLBACK)"; \
	fi
	"$(PY)" -m pip install --disable-pip-version-check -r requirements.txt
	@touch "$@"

# Tests, lint and the acceptance scripts: requirements-dev.txt on top.  requirements.txt is
# named again so pip resolves both together (it installs nothing already there).
$(DEV_STAMP): $(RUN_STAMP) requirements-dev.txt
	"$(PY)" -m pip install --disable-pip-version-check -r requirements.txt -r requirements-dev.txt
	@touch "$@"

# Worker and dashboard together, as child process groups of one launcher that forwards
# Ctrl-C / SIGTERM to both and waits for them (scripts/run_all.py).
run: install
	"$(PY)" scripts/run_all.py --address "$(ADDRESS)" --port "$(PORT)"

worker: install
	"$(PY)" -m engine worker

# Same launcher as `make run`, without the worker: one place sets the address and the
# Streamlit settings (no usage stats, no Deploy button).
dashboard: install
	"$(PY)" scripts/run_all.py --no-worker --address "$(ADDRESS)" --port "$(PORT)"

# One dashboard for a team: nginx (Debian package) in front of the dashboard and a worker;
# needs COMPILELAB_DASHBOARD_PASSWORD (12+ characters). scripts/shared_dashboard.py --help.
shared: install
	"$(PY)" scripts/shared_dashboard.py serve --listen "$(LISTEN)" \
		$(foreach name,$(SERVER_NAME),--server-name "$(name)") $(SHARED_ARGS)

# The fast tier (under 10 minutes on 2 cores). Real compiles, browser walks and database
# faults carry the `slow` marker: `make test-slow` runs them, and .ci/run runs both tiers.
# --durations: the slowest tests end each log, so the budget shows where it goes.
# The tier runs in TEST_WORKERS processes (pytest-xdist), then the few tests that time this
# host itself (marker host_timing) run alone: beside a second worker they would time it instead.
TEST_WORKERS ?= 2
test: venv
	"$(VENV)/bin/pytest" -q --timeout=$(PYTEST_TIMEOUT) --durations=25 -n $(TEST_WORKERS) \
		-m "not slow and not host_timing" $(PYTEST_ARGS)
	"$(VENV)/bin/pytest" -q --timeout=$(PYTEST_TIMEOUT) -m "host_timing and not slow" $(PYTEST_ARGS)

test-slow: venv
	"$(VENV)/bin/pytest" -q --timeout=$(PYTEST_TIMEOUT) --durations=25 -m slow $(PYTEST_ARGS)

lint: venv
	"$(VENV)/bin/ruff" check .

format: venv
	"$(VENV)/bin/ruff" format .
	"$(VENV)/bin/ruff" check --fix .

clean-venv:
	rm -rf "$(VENV)"
