"""The Docker-default configuration: the simulated container is what Docker gives by default (moby's own
capabilities, seccomp profile and read-only cgroups, applied by runc), and `make grade` under Docker's
capabilities alone grades with the layers that remain (a uid, seccomp, a chroot). Root only; the Makefile
installs runc and moby's defaults first (autograder/install-container-tools.sh)."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import pytest

from autograder import container
from autograder.grade import expected_score

AUTOGRADER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPOSITORY = os.path.dirname(AUTOGRADER)


@pytest.fixture(scope="module")
def capabilities():
    container.ensure_tools()
    return container.docker_capabilities()


def rules_for(profile: dict, name: str) -> list[dict]:
    return [rule for rule in profile["syscalls"] if name in rule["names"]]


def test_dockers_profile_is_specialised_as_dockerd_does(capabilities):
    """A rule stays when its `includes` hold and its `excludes` do not, for these capabilities and this machine."""
    assert "CAP_SYS_ADMIN" not in capabilities and "CAP_SYS_CHROOT" in capabilities
    default = container.seccomp_profile(capabilities)
    assert default["defaultAction"] == "SCMP_ACT_ERRNO"
    assert rules_for(default, "chroot") and not rules_for(default, "unshare") and not rules_for(default, "mount")
    clone = rules_for(default, "clone")
    assert clone and all(r.get("args") and r["args"][0]["op"] == "SCMP_CMP_MASKED_EQ" for r in clone)
    assert [r.get("errnoRet") for r in rules_for(default, "clone3")] == [38]  # ENOSYS: glibc falls back to clone
    privileged = container.seccomp_profile([*capabilities, "CAP_SYS_ADMIN"])
    assert rules_for(privileged, "unshare") and rules_for(privileged, "mount")
    assert all(r["action"] == "SCMP_ACT_ALLOW" for r in rules_for(privileged, "clone3"))
    without_chroot = container.seccomp_profile([c for c in capabilities if c != "CAP_SYS_CHROOT"])
    assert not rules_for(without_chroot, "chroot")


def test_the_container_is_what_docker_gives_by_default(capabilities):
    seen = container.probe()
    assert seen["CapEff"] == f"{container.capability_mask(capabilities):016x}"
    assert seen["Seccomp"] == "2" and seen["uid"] == 0
    assert (seen["unshare"], seen["mount"], seen["clone3"]) == ("EPERM", "EPERM", "ENOSYS")
    assert seen["chroot"] == "allowed" and seen["cgroups_read_only"]
    assert seen["layers"] == {"names": ["uid", "seccomp", "chroot"], "why_not": [["namespaces", "no CAP_SYS_ADMIN"]]}


@pytest.mark.parametrize("submission,score", [("jail-walk", expected_score("full")), ("stubs", 0.0)])
def test_make_grade_under_dockers_capabilities(capabilities, submission, score, tmp_path):
    """The issue this configuration exists for: root without CAP_SYS_ADMIN once refused to grade at all. The
    solutions are graded as the self-test's jail-walk (they walk the chroot `make grade` builds, as the
    student's uid, for anything only root may read: nothing)."""
    from autograder.selftest import runner
    bounding = ",".join(["-all"] + [f"+{c.removeprefix('CAP_').lower()}" for c in capabilities])
    root = str(tmp_path / "autograder")
    walker = next(c for c in runner.CASES if c.name == "jail-walk")
    args = ["--submission", runner.make_submission(walker, str(tmp_path / "walk"))] if submission == "jail-walk" \
        else ["--submission", os.path.join(REPOSITORY, "assignment")]
    done = subprocess.run(["setpriv", f"--bounding-set={bounding}", sys.executable, "-m", "autograder.grade",
                           "--keep", root, *args], cwd=REPOSITORY, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with open(os.path.join(root, "results", "results.json"), encoding="utf-8") as f:
        results = json.load(f)
    assert results["score"] == score, done.stdout[-3000:]
    isolation = results["extra_data"]["isolation"]
    assert isolation.startswith("isolation: uid ") and ", seccomp, chroot (" in isolation, isolation
    assert "missing: namespaces: no CAP_SYS_ADMIN" in isolation
    assert isolation in done.stdout  # the line `make grade` prints
    staff = next(t for t in results["tests"] if t["name"] == "Integrity report (staff only)")
    assert staff["visibility"] == "hidden" and staff["output"].endswith(
        isolation.replace(f"uid {results['extra_data']['student_uid']} ", "uid of its own "))


def test_a_container_in_a_cgroup_leaves_none_behind(capabilities):
    """runc puts a container with limits below our cgroup in every hierarchy (cgroup v1: blkio, cpuset, devices,
    freezer, pids, ...) and removes only its own folder: ours must go from each (they once piled up, six
    folders per grading). Counted by name before and after, so other gradings on the machine do not count."""
    image = container.Image()
    try:
        before = len(glob.glob("/sys/fs/cgroup/*/minddp-limits-*"))
        ran = image.run(["/bin/true"], {"PATH": "/usr/bin:/bin"}, cpus=0.5, memory_mb=256)
    finally:
        image.close()
    assert ran.exit_code == 0
    assert ran.cgroups_left == [], f"left behind: {ran.cgroups_left} (of {before} minddp-limits-* folders before)"
