# Staff front door. `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# This tree's commands run this tree's code, whatever venv they use: `grader` (autograder/grader, a top-level name)
# is found here before the editable install's mapping, which points at the tree that ran `make install` last (a
# second checkout or a git worktree sharing .venv re-points it).
ifeq ($(findstring $(CURDIR)/autograder,$(PYTHONPATH)),)
export PYTHONPATH := $(CURDIR)/autograder$(if $(PYTHONPATH),:$(PYTHONPATH))
endif
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
# stubs + gradings of the solutions, the stubs and a few mutants), CI (.ci/run): `MUTANTS=all make test`,
# `SELFTEST=all make docker` (every self-test case in Gradescope's room), then `make ci-last`: `make limits`
# (Gradescope's limits, a quarter vCPU) and `make isolation` (the cases the privileged room holds by layers of its
# own) beside `make staff-tools` (the parts table proven, make regrade), `make py310` (Gradescope's Python) and
# `make doors` (the front doors end to end, fresh venvs).
# Each stage of `make check` runs even when one before it failed, and each names everything it finds stale: one
# run lists every line a change left behind.
check: $(STAMP) ## fast checks: lint, release in sync, unit tests of tools, grader, handout (every stage runs)
	@status=0; for target in lint check-sync unit; do $(MAKE) --no-print-directory $$target || status=1; done; \
	[ $$status = 0 ] || echo "make check: FAILED (every stage ran: the messages above name each thing to fix)"; \
	exit $$status

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

# The three suites run side by side (each is mostly one core), each printed whole when it ends.
UNIT_SUITES := "tools/tests" \
	"autograder/tests/test_grader_units.py autograder/tests/test_sandbox.py autograder/tests/test_mounts.py \
	 autograder/tests/test_uids.py autograder/tests/test_seccomp.py autograder/tests/test_reference_cache.py \
	 autograder/tests/test_zygote.py autograder/tests/test_chroot_jail.py autograder/tests/test_coverage.py" \
	"-rs handout/tests"
unit: $(STAMP) ## unit tests: tools, the grader's pieces (staging, sandbox, results), the handout
	@$(TIMINGS) start unit
	@logs=$$(mktemp -d /tmp/minddp-unit-XXXXXX) || exit 1; n=0; pids=""; \
	for suite in $(UNIT_SUITES); do n=$$((n + 1)); echo "$(PYTEST) -q $$suite"; \
	    $(PYTEST) -q $$suite > "$$logs/$$n" 2>&1 & pids="$$pids $$!"; done; \
	status=0; n=0; for pid in $$pids; do n=$$((n + 1)); wait $$pid || status=1; cat "$$logs/$$n"; done; \
	rm -rf "$$logs"; exit $$status
	@$(TIMINGS) stop unit

demo: $(STAMP) ## train with minddp and torch DDP side by side on 2 ranks
	cd solutions && ../$(PY) -m minddp.launch --nproc-per-node 2 demo.py

bench: $(STAMP) ## step time of minddp vs torch DDP (median ratio per model)
	cd solutions && ../$(PY) -m minddp.launch --nproc-per-node 2 bench.py

.PHONY: measure
measure: $(STAMP) ## time gloo's all-reduce on 2 local ranks (solutions/measure.py): the dict of answers.py's Q8
	cd solutions && ../$(PY) measure.py

.PHONY: probe probe-buckets
probe: $(STAMP) ## torch's DDP (IMPL=minddp|both: the reference) on 2 ranks for OPS="F B ...": each operation's collectives (MODEL= KWARGS= RANKS=)
	cd solutions && ../$(PY) probe.py ddp $(if $(MODEL),--model $(MODEL)) $(if $(IMPL),--impl $(IMPL)) \
	    $(if $(KWARGS),--kwargs "$(KWARGS)") $(if $(RANKS),--ranks $(RANKS)) -- "$(OPS)"

probe-buckets: $(STAMP) ## torch's bucket assignment of TENSORS="10MiB 2MiB 8MiB:float16" (LIMITS=, ORDER=)
	cd solutions && ../$(PY) probe.py buckets $(if $(LIMITS),--limits "$(LIMITS)") $(if $(ORDER),--order "$(ORDER)") -- "$(TENSORS)"

.PHONY: trace
trace: $(STAMP) ## record the reference and torch DDP on 2 ranks: Perfetto traces + timeline.png (MODEL=, OUT=dist/trace)
	cd solutions && ../$(PY) tracer.py --out "$(abspath $(or $(OUT),dist/trace))" $(if $(MODEL),--model $(MODEL))

assignment: $(STAMP) ## regenerate assignment/ (the student release) and the public answers from solutions/
	$(PY) -m tools.expected
	$(PY) -m tools.assign generate

check-sync: $(STAMP) ## fail if assignment/ or checks/expected.json is not what `make assignment` writes, or CHANGELOG.md is malformed
	@$(TIMINGS) start check-sync
	status=0; $(PY) -m tools.assign check || status=1; $(PY) -m tools.expected --check || status=1; \
	$(PY) -m tools.changelog check || status=1; exit $$status
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

# CI's last stage: four lines side by side, each printed whole when it ends, each run to its end even if another
# failed: Gradescope's rooms at their limits, then the front doors; the time-sensitive cases at a quarter vCPU;
# `make isolation`; the staff tools, then py310. The limits' gradings are held to their share of a vCPU, and the
# other lines keep both cores busy meanwhile, the load the CPU hogs make when `make limits` runs alone
# (LIMITS_HOGS=0 here: verdicts may depend on the machine's speed no more than on other tenants).
.PHONY: ci-last
ci-last: $(STAMP) ## CI's last stage: make limits (its two halves) and make isolation, with staff-tools, py310 and doors beside them
	@$(TIMINGS) start ci-last
	@logs=$$(mktemp -d /tmp/minddp-ci-last-XXXXXX) || exit 1; \
	( $(MAKE) --no-print-directory limits-rooms && $(MAKE) --no-print-directory doors ) > "$$logs/rooms" 2>&1 & rooms=$$!; \
	$(MAKE) --no-print-directory limits-speed LIMITS_HOGS=0 > "$$logs/speed" 2>&1 & speed=$$!; \
	$(MAKE) --no-print-directory isolation > "$$logs/isolation" 2>&1 & isolation=$$!; status=0; \
	for target in staff-tools py310; do $(MAKE) --no-print-directory $$target || status=1; done; \
	wait $$isolation || status=1; echo "--- make isolation (run beside the above) ---"; cat "$$logs/isolation"; \
	wait $$speed || status=1; echo "--- make limits-speed (run beside the above) ---"; cat "$$logs/speed"; \
	wait $$rooms || status=1; echo "--- make limits-rooms, then make doors (run beside the above) ---"; \
	cat "$$logs/rooms"; rm -rf "$$logs"; exit $$status
	@$(TIMINGS) stop ci-last

# The self-test cases where the two rooms hold by different layers (cases.py: ON_ISOLATION: files, network, IPC,
# processes), in the privileged room: this machine as root with every capability, namespaces and all. (`make
# docker` grades every case in the Docker-default room, Gradescope's.)
.PHONY: isolation
isolation: $(STAMP) ## the self-test cases that rest on the isolation layers, in the privileged room (root)
	@$(TIMINGS) start isolation
	SELFTEST=isolation $(PYTEST) -q autograder/tests/test_selftest.py
	@$(TIMINGS) stop isolation

# Gradescope's limits, walked the way CI walks them (root only), on a used machine (test_sim_rooms.py): the built
# zip through setup.sh in the privileged configuration, in /autograder as a TA's `make gradescope-sim
# CONFIG=privileged`, a grading killed once begun, then the solutions (full marks) at half a vCPU and 768 MB;
# then in the Docker-default one (the image of `make docker`, kept in dist/gradescope-image) on this machine that
# now has an /autograder, the same; then the self-test's time-sensitive cases at a quarter vCPU beside CPU hogs
# (verdicts must not depend on speed: the stubs, which fail at once, are not among them).
LIMITS_CASES := solutions,infinite-loop,partial-frame  # a hang and a stalled channel: deadlines from the same run
GRADESCOPE_IMAGE := dist/gradescope-image
LIMITS_HOGS ?= 2  # processes spinning beside the quarter-vCPU gradings (ci-last: 0, its other lines are the load)
limits: limits-rooms limits-speed ## Gradescope's limits (root): gradescope-sim, each room after a killed run (solutions); timing cases at 0.25 CPU + hogs

.PHONY: limits-rooms limits-speed
limits-rooms: $(STAMP) check-sync ## the first half of make limits: gradescope-sim in each room, after a killed run
	@$(TIMINGS) start limits-rooms
ifeq ($(shell id -u),0)
	$(PYTEST) -q -s autograder/tests/test_sim_rooms.py
else
	@echo "limits: needs root (cgroups, a student uid), as Gradescope has; not run as uid $$(id -u)"
endif
	@$(TIMINGS) stop limits-rooms

limits-speed: $(STAMP) check-sync ## the second half of make limits: the time-sensitive cases at a quarter vCPU (+ hogs)
	@$(TIMINGS) start limits-speed
ifeq ($(shell id -u),0)
	$(PY) -m autograder.selftest.runner --cases $(LIMITS_CASES) --cpus 0.25 --hog $(LIMITS_HOGS) --jobs 3
else
	@echo "limits: needs root (cgroups, a student uid), as Gradescope has; not run as uid $$(id -u)"
endif
	@$(TIMINGS) stop limits-speed

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

autograder: $(STAMP) check-sync ## dist/autograder.zip for Gradescope (prints its grader version and points), dist/solutions.zip, stubs.zip
	$(PY) -m autograder.assemble smoke-zips dist
	$(PY) -m autograder.assemble zip dist/autograder.zip

.PHONY: release
release: $(STAMP) ## cut a release: CHANGELOG.md's Unreleased entries become YEAR.N with the grader version; assignment/ follows
	$(PY) -m tools.changelog release --grader "$$($(PY) -m autograder.assemble version)"
	$(MAKE) --no-print-directory assignment

clean: ## remove the venv and build products
	-@umount -l $(GRADESCOPE_IMAGE)/disk 2>/dev/null
	rm -rf $(VENV) dist
