# Two commands for a fresh machine (Python 3.11 with venv):
#   make run    set up .venv with TensorFlow $(TF_VERSION) and measure every pair
#   make test   set up the same .venv and run the test suite
TF_VERSION ?= 2.21.0
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-tf-$(TF_VERSION)

.PHONY: setup run test

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# TensorFlow is pinned here, not in pyproject.toml: pip resolves numpy for it.
	$(BIN)/python -m pip install -q -e '.[test]' 'tensorflow-cpu==$(TF_VERSION)'
	rm -f $(VENV)/.installed-tf-*
	touch $@

setup: $(STAMP)
	scripts/system-packages

run: setup
	$(BIN)/leakbench run $(ARGS)

test: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)
