# Staff front door. `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PYTEST := $(PY) -m pytest -p no:cacheprovider
TIMINGS := $(PY) -m tools.timings  # each tier's target records its wall time (dist/timings.json)

.DEFAULT_GOAL := help
.PHONY: help install check test lint unit demo bench grade autograder clean assignment check-sync diff validate timings \
        student handout selftest staff-tools mutants coverage sample-export grade-repeat gradescope-sim limits py310 docker

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

$(STAMP): requirements.txt requirements-dev.txt tools/student/install.py pyproject.toml
	$(PYTHON) tools/student/install.py $(VENV) -r requirements.txt -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -e .  # the staff side, in development mode (pyproject.toml)
	@touch $@

install: $(STAMP) ## create .venv with the pinned packages (torch 2.13.0 CPU)

# Tiers: `make check` (lint, sync, unit tests), `make test` (check + the public suite on the solutions and the
# stubs + gradings of the solutions, the stubs and a few mutants), CI (.ci/run): `MUTANTS=all SELFTEST=all make
# test`, then `make ci-last`: `make limits` (Gradescope's limits, a quarter vCPU beside CPU hogs) with, beside it,
# `make staff-tools` (the parts table proven, make regrade), `make py310` (Gradescope's Python) and `make doors`
# (the front doors end to end, fresh venvs).
check: lint check-sync unit ## fast checks: lint, release in sync, unit tests of tools, grader, handout

test: check validate selftest ## the public suite, gradings of the solutions, stubs, a few mutants (CI: all, and more)

# Gradescope's image runs Python 3.10: where one exists here, the public checks and a full grading run under it
# (in .venv310; without a CPU wheel for 3.10 on this machine, pip takes PyPI's CUDA build: ~5 GB, ~1 minute).
PYTHON310 ?= $(shell for p in $(wildcard $(HOME)/.pyenv/versions/3.10*/bin/python3.10) /usr/bin/python3.10 \
                 /usr/local/bin/python3.10; do $$p -c "" 2>/dev/null && echo $$p && break; done)
VENV310 := .venv310
py310: $(STAMP) ## the public checks and one grading of the solutions under a real Python 3.10 (if this machine has one)
	@$(TIMINGS) start py310
ifeq ($(PYTHON310),)
	@echo "py310: no Python 3.10 on this machine (set PYTHON310=...); vermin and ruff still check 3.10 syntax"
else
	@$(MAKE) --no-print-directory $(VENV310)/.installed
	cd solutions && ../$(VENV310)/bin/python -m pytest -p no:cacheprovider -q tests
	@root=$$(mktemp -d /tmp/minddp-py310-XXXXXX) && trap 'rm -rf "$$root"' EXIT && \
	$(VENV310)/bin/python -m autograder.grade --expect full --keep "$$root/autograder"
endif
	@$(TIMINGS) stop py310

$(VENV310)/.installed: requirements.txt tools/student/install.py pyproject.toml
	$(PYTHON310) tools/student/install.py $(VENV310) -r requirements.txt
	$(VENV310)/bin/python -m pip install --quiet --no-deps -e .  # the staff side (grader, autograder, tools)
	@touch $@

lint: $(STAMP) ## ruff (ruff.toml), and prove the code runs on Gradescope's Python 3.10 (vermin)
	@$(TIMINGS) start lint
	$(VENV)/bin/ruff check --quiet .
	$(VENV)/bin/vermin --quiet --no-tips --violations -t=3.10- --eval-annotations solutions autograder tools handout
	@$(TIMINGS) stop lint

unit: $(STAMP) ## unit tests: tools, the grader's pieces (staging, sandbox, results), the handout
	@$(TIMINGS) start unit
	$(PYTEST) -q tools/tests
	$(PYTEST) -q autograder/tests/test_grader_units.py autograder/tests/test_sandbox.py autograder/tests/test_mounts.py \
	    autograder/tests/test_uids.py autograder/tests/test_seccomp.py autograder/tests/test_reference_cache.py \
	    autograder/tests/test_zygote.py autograder/tests/test_chroot_jail.py autograder/tests/test_coverage.py
	$(PYTEST) -q -rs handout/tests
	@$(TIMINGS) stop unit

demo: $(STAMP) ## train with minddp and torch DDP side by side on 2 ranks
	cd solutions && ../$(PY) -m minddp.launch --nproc-per-node 2 demo.py

bench: $(STAMP) ## step time of minddp vs torch DDP (median ratio per model)
	cd solutions && ../$(PY) -m minddp.launch --nproc-per-node 2 bench.py

.PHONY: measure
measure: $(STAMP) ## time gloo's all-reduce on 2 local ranks (solutions/measure.py): the dict of answers.py's Q8
	cd solutions && ../$(PY) measure.py

.PHONY: trace
trace: $(STAMP) ## record the reference and torch DDP on 2 ranks: Perfetto traces + timeline.png (MODEL=, OUT=dist/trace)
	cd solutions && ../$(PY) tracer.py --out "$(abspath $(or $(OUT),dist/trace))" $(if $(MODEL),--model $(MODEL))

assignment: $(STAMP) ## regenerate assignment/ (the student release) and the public answers from solutions/
	$(PY) -m tools.expected
	$(PY) -m tools.assign generate

check-sync: $(STAMP) ## fail if assignment/ or solutions/checks/expected.json is not what `make assignment` writes
	@$(TIMINGS) start check-sync
	$(PY) -m tools.assign check
	$(PY) -m tools.expected --check
	@$(TIMINGS) stop check-sync

diff: $(STAMP) ## per function: stub vs solution (SUBMISSION=folder-or-zip, code only; COMMENTS=1; RESULTS=results.json)
	$(PY) -m tools.assign diff $(if $(SUBMISSION),--submission "$(SUBMISSION)") $(if $(COMMENTS),--comments) \
	    $(if $(RESULTS),--results "$(RESULTS)")

validate: $(STAMP) ## the public checks pass on solutions/ and fail only by stub on the release
	@$(TIMINGS) start validate
	$(PY) -m tools.assign validate
	@$(TIMINGS) stop validate

handout: $(STAMP) ## build handout.pdf from handout/ (installs LaTeX if missing; figures from the reference)
	$(PY) -m handout.build

student: $(STAMP) check-sync ## dist/student.zip: assignment/ (+ handout.pdf if built) for students
	$(PY) -m tools.assign student-zip dist/student.zip

grade: $(STAMP) ## run the Gradescope pipeline locally on the solutions (or SUBMISSION=folder-or-zip)
	$(PY) -m autograder.grade $(if $(SUBMISSION),--submission "$(SUBMISSION)")

.PHONY: regrade
regrade: $(STAMP) ## grade a Gradescope export: EXPORT=zip-or-folder [OLD=git-rev] [JOBS=n] [OUT=dist/regrade]
	$(PY) -m tools.regrade $(if $(EXPORT),"$(EXPORT)") $(if $(OLD),--old "$(OLD)") $(if $(JOBS),--jobs $(JOBS)) \
	    $(if $(OUT),--out "$(OUT)")

selftest: $(STAMP) ## the autograder on hostile submissions and mutants (SELFTEST=all, MUTANTS=all: all of them)
	@$(TIMINGS) start selftest
	$(PYTEST) -q autograder/tests/test_selftest.py autograder/tests/test_mutants.py
	@$(TIMINGS) stop selftest

staff-tools: $(STAMP) ## the staff tools end to end: the table of files each part reads (proven), make regrade; the random configurations of any secret
	@$(TIMINGS) start staff-tools
	$(PYTEST) -q autograder/tests/test_parts.py autograder/tests/test_regrade_export.py autograder/tests/test_random_configurations.py
	@$(TIMINGS) stop staff-tools

.PHONY: doors
doors: $(STAMP) ## the front doors as users walk them: a student's make install/test/submit, then make grade on the zip
	@$(TIMINGS) start doors
	$(PYTEST) -q autograder/tests/test_front_doors.py
	@$(TIMINGS) stop doors

sample-export: $(STAMP) ## dist/sample-export.zip: a Gradescope export of the self-test's submissions to try make regrade on (ONLY=a,b; ALL=1)
	$(PY) -m autograder.selftest.mutation export $(if $(ONLY),--only "$(ONLY)",$(if $(ALL),,--fast))

coverage: $(STAMP) ## rewrite autograder/selftest/COVERAGE.md: each contract item of the handout, its checks and mutants
	$(PY) -m autograder.selftest.coverage --write

mutants: $(STAMP) ## grade every mutant and correct variant (autograder/selftest/): kill and acceptance rates (ONLY=a,b; KEEP=1: keep the graded folders)
	$(PY) -m autograder.selftest.mutation $(if $(ONLY),--only "$(ONLY)") $(if $(KEEP),--keep)

grade-repeat: $(STAMP) ## grade the solutions N times (default 20): identical results? min/median/max time
	$(PY) -m autograder.selftest.runner repeat $(or $(N),20)

# CI's last stage. `make limits` keeps the cores busy for ~9 minutes on purpose (CPU hogs beside gradings held to
# a quarter vCPU), so the other stages run beside it rather than after it: their verdicts may not depend on the
# machine's speed either. Each stage runs to its end even if another failed; limits' output follows theirs.
.PHONY: ci-last
ci-last: $(STAMP) ## CI's last stage: make limits, with make staff-tools, py310 and doors beside it
	@$(TIMINGS) start ci-last
	@log=$$(mktemp /tmp/minddp-limits-log-XXXXXX) || exit 1; \
	$(MAKE) --no-print-directory limits > "$$log" 2>&1 & limits=$$!; status=0; \
	for target in staff-tools py310 doors; do $(MAKE) --no-print-directory $$target || status=1; done; \
	wait $$limits || status=1; echo "--- make limits (run beside the above) ---"; cat "$$log"; rm -f "$$log"; \
	exit $$status
	@$(TIMINGS) stop ci-last

# Gradescope's limits, walked the way CI walks them (root only): the built zip through setup.sh, the solutions
# (full marks) and the stubs (0) at half a vCPU and 768 MB, in the Docker-default configuration (the image of `make
# docker`, kept in dist/gradescope-image) and the solutions in the privileged one (a fresh root); then the
# self-test's time-sensitive cases at a quarter vCPU beside CPU hogs (verdicts must not depend on speed: the
# stubs, which fail at once, are not among them).
LIMITS_CASES := solutions,infinite-loop,partial-frame  # a hang and a stalled channel: deadlines from the same run
GRADESCOPE_IMAGE := dist/gradescope-image
limits: $(STAMP) check-sync ## Gradescope's limits (root): gradescope-sim on solutions and stubs; timing cases at 0.25 CPU + hogs
	@$(TIMINGS) start limits
ifeq ($(shell id -u),0)
	$(PY) -m autograder.sim --config docker --image $(GRADESCOPE_IMAGE) --reuse-setup --submission solutions --expect full
	$(PY) -m autograder.sim --config docker --image $(GRADESCOPE_IMAGE) --reuse-setup --submission stubs --expect 0
	@root=$$(mktemp -d /var/cache/minddp-limits-XXXXXX) && trap 'rm -rf "$$root"' EXIT && chmod 755 "$$root" && \
	$(PY) -m autograder.selftest.runner write --cases jail-walk --into "$$root/walk" && \
	$(PY) -m autograder.sim --config privileged --root "$$root/autograder" --submission "$$root/walk" --expect full
	$(PY) -m autograder.selftest.runner --cases $(LIMITS_CASES) --cpus 0.25 --hog 2 --jobs 2
else
	@echo "limits: needs root (cgroups, a student uid), as Gradescope has; not run as uid $$(id -u)"
endif
	@$(TIMINGS) stop limits

# Gradescope's real room (root only): a container with Docker's defaults (autograder/container.py: runc with
# moby's capabilities, seccomp profile and read-only cgroups), no CAP_SYS_ADMIN. The container is checked to be
# that, `make grade` under Docker's capabilities alone must grade the solutions full marks and the stubs 0, and the
# self-test's cases (SELFTEST=...; CI: all) are graded each in a fresh container from the image.
docker: $(STAMP) check-sync ## Gradescope's real room (root): Docker's defaults via runc; make grade under them; self-test in containers
	@$(TIMINGS) start docker
ifeq ($(shell id -u),0)
	bash autograder/install-container-tools.sh dist/moby
	$(PYTEST) -q autograder/tests/test_container.py
	SELFTEST_CONFIG=docker $(PYTEST) -q autograder/tests/test_selftest.py
else
	@echo "docker: needs root (runc, mounts, cgroups), as Gradescope's container has; not run as uid $$(id -u)"
endif
	@$(TIMINGS) stop docker

timings: $(STAMP) ## after .ci/run: keep this machine's tier durations (tools/timings.json) and show them in README.md
	$(PY) -m tools.timings keep
	$(PY) -m tools.timings readme

CONFIG ?= docker
gradescope-sim: $(STAMP) check-sync ## Gradescope on this machine (root): setup.sh, 0.5 CPU, 768 MB (CONFIG=docker|privileged)
	$(PY) -m autograder.sim --config $(CONFIG) $(if $(filter docker,$(CONFIG)),--image $(GRADESCOPE_IMAGE) --reuse-setup) \
	    $(if $(SUBMISSION),--submission "$(SUBMISSION)") $(SIM_ARGS)

autograder: $(STAMP) check-sync ## dist/autograder.zip for Gradescope, and dist/solutions.zip, stubs.zip to test it with
	$(PY) -m autograder.assemble zip dist/autograder.zip
	$(PY) -m autograder.assemble smoke-zips dist

clean: ## remove the venv and build products
	-@umount -l $(GRADESCOPE_IMAGE)/disk 2>/dev/null
	rm -rf $(VENV) dist
