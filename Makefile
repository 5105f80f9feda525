# Staff front door. `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PYTEST := cd solutions && ../$(PY) -m pytest -p no:cacheprovider

.DEFAULT_GOAL := help
.PHONY: help install test test-fast lint demo bench grade autograder clean assignment check-sync diff validate student handout

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

$(STAMP): requirements.txt requirements-dev.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt -r requirements-dev.txt
	@touch $@

install: $(STAMP) ## create .venv with the pinned packages (torch 2.13.0 CPU)

# validate runs every public test on the solutions (and on the stubs), so solutions/tests is not run twice.
test: $(STAMP) lint check-sync selftest ## run every test the repository has
	$(PY) tools/assign.py validate
	$(PY) -m pytest -p no:cacheprovider tools/tests
	$(PY) -m pytest -p no:cacheprovider -rs handout/tests

test-fast: $(STAMP) ## the single-process tests only (no gloo workers)
	$(PYTEST) tests -m "not workers"

lint: $(STAMP) ## prove the code runs on Gradescope's Python 3.10
	$(VENV)/bin/vermin --quiet --no-tips --violations -t=3.10- --eval-annotations solutions

demo: $(STAMP) ## train with minddp and torch DDP side by side on 2 ranks
	cd solutions && ../$(PY) -m minddp.launch --nproc-per-node 2 demo.py

bench: $(STAMP) ## step time of minddp vs torch DDP (median ratio per model)
	cd solutions && ../$(PY) -m minddp.launch --nproc-per-node 2 bench.py

assignment: $(STAMP) ## regenerate assignment/ (the student release) from solutions/
	$(PY) tools/assign.py generate

check-sync: $(STAMP) ## fail if assignment/ differs from what `make assignment` would write
	$(PY) tools/assign.py check

diff: $(STAMP) ## per function: stub vs solution (SUBMISSION=folder-or-zip: a student's version)
	$(PY) tools/assign.py diff $(if $(SUBMISSION),--submission "$(SUBMISSION)")

validate: $(STAMP) ## public tests pass on solutions/ and fail only by stub on the release
	$(PY) tools/assign.py validate

handout: $(STAMP) ## build handout.pdf from handout/ (installs LaTeX if missing; figures from the reference)
	$(PY) handout/build.py

student: $(STAMP) check-sync ## dist/student.zip: assignment/ (+ handout.pdf if built) for students
	$(PY) tools/assign.py student-zip dist/student.zip

grade: $(STAMP) ## run the Gradescope pipeline locally on the solutions (or SUBMISSION=folder-or-zip)
	$(PY) autograder/build.py grade $(if $(SUBMISSION),--submission $(SUBMISSION))

.PHONY: selftest grade-repeat mutants
selftest: $(STAMP) ## the autograder on hostile submissions and mutants (MUTANTS=all: every mutant; default a subset)
	$(PY) -m pytest -p no:cacheprovider -q autograder/tests

mutants: $(STAMP) ## grade every mutant and correct variant (autograder/selftest/): kill and acceptance rates
	$(PY) autograder/selftest/mutation.py

grade-repeat: $(STAMP) ## grade the solutions N times (default 20): identical results? min/median/max time
	$(PY) autograder/selftest/run.py repeat $(or $(N),20)

autograder: $(STAMP) check-sync ## dist/autograder.zip for Gradescope (setup.sh, run_autograder at its root)
	$(PY) autograder/build.py zip dist/autograder.zip

clean: ## remove the venv and build products
	rm -rf $(VENV) dist
