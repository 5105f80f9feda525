# Staff front door. `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PYTEST := cd solutions && ../$(PY) -m pytest -p no:cacheprovider

.DEFAULT_GOAL := help
.PHONY: help install test test-fast lint demo bench clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

$(STAMP): requirements.txt requirements-dev.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt -r requirements-dev.txt
	@touch $@

install: $(STAMP) ## create .venv with the pinned packages (torch 2.13.0 CPU)

test: $(STAMP) lint ## run every test the repository has
	$(PYTEST) tests

test-fast: $(STAMP) ## the single-process tests only (no gloo workers)
	$(PYTEST) tests -m "not workers"

lint: $(STAMP) ## prove the code runs on Gradescope's Python 3.10
	$(VENV)/bin/vermin --quiet --no-tips --violations -t=3.10- --eval-annotations solutions

demo: $(STAMP) ## train with minddp and torch DDP side by side on 2 ranks
	cd solutions && ../$(PY) -m minddp.launch --nproc-per-node 2 demo.py

bench: $(STAMP) ## step time of minddp vs torch DDP (median ratio per model)
	cd solutions && ../$(PY) -m minddp.launch --nproc-per-node 2 bench.py

clean: ## remove the venv and build products
	rm -rf $(VENV) dist
