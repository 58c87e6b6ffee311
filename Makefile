# Two commands for a fresh machine (Python 3.11 with venv):
#   make run    set up .venv with TensorFlow $(TF_VERSION) and measure every pair, one child per core
#               at once, filing the records in results/records/<machine>.local/tf-<version>.jsonl
#   make test   set up the same .venv and run the test suite
# (make lint: ruff and mypy, which CI runs before make test)
#   make publish  regenerate the published dataset (every pair on every build, asv, the tables):
#               leakbench publish, resumable; hours on 2 cores (docs/publish.md)
# TF_VERSION=nightly installs the newest tf-nightly the registry serves (checked at every call);
# TF_VERSION=2.23.0.dev20261026 that dated nightly.
TF_VERSION ?= 2.21.0
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

ifeq ($(TF_VERSION),nightly)
# the newest nightly, pinned exactly: its own dependencies stay on final releases
TF_REQ = tf-nightly==$$($(BIN)/python -m pip index versions --pre tf-nightly 2>/dev/null | sed -n 's/^tf-nightly (\(.*\))$$/\1/p')
STAMP := $(VENV)/.installed-tf-nightly
# tensorflow-cpu and tf-nightly (keras and keras-nightly) install the same modules: one at a time
OTHER_TF := tensorflow-cpu keras
.PHONY: $(STAMP)
else ifneq ($(findstring .dev,$(TF_VERSION)),)
# a dated nightly, e.g. 2.23.0.dev20261026 (the version of a records file or a bisect boundary)
TF_REQ := tf-nightly==$(TF_VERSION)
STAMP := $(VENV)/.installed-tf-$(TF_VERSION)
OTHER_TF := tensorflow-cpu keras
else
TF_REQ := tensorflow-cpu==$(TF_VERSION)
STAMP := $(VENV)/.installed-tf-$(TF_VERSION)
OTHER_TF := tf-nightly keras-nightly
endif

.PHONY: setup run test lint publish

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip uninstall -y -q $(OTHER_TF) 2>/dev/null || true
	# TensorFlow is pinned here, not in pyproject.toml: pip resolves numpy for it.
	$(BIN)/python -m pip install -q -e '.[test]' "$(TF_REQ)"
	rm -f $(VENV)/.installed-tf-*
	touch $@

setup: $(STAMP)
	scripts/system-packages

run: setup
	$(BIN)/leakbench run $(ARGS)

publish: setup
	$(BIN)/leakbench publish $(ARGS)

test: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# ruff (lint, and the format at 100 columns) and mypy on the package: pyproject.toml's settings.
# Needs the virtualenv only (ruff and mypy come with the test extra), not setup's Debian packages.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
