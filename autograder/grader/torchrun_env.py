#!/usr/bin/env python3
"""Staff: the environment a real `torchrun --standalone --nproc_per_node=N` gives its ranks (torch 2.13), for
check 1.4 on Gradescope.

    python -m grader.torchrun_env            write torchrun_env.json beside this file
    python -m grader.torchrun_env --check    exit 1 if it differs from a fresh capture

On Gradescope, check 1.4 starts its ranks itself, jailed like every worker (torchrun's own agent would be a
process of the student's uid free to start programs), each with exactly this environment: the variables
torchrun sets, minus what names this capture (its run id, port, error files), with a fresh port. As under
torchrun, the ranks find the rendezvous store hosted outside them (TORCHELASTIC_USE_AGENT_STORE=True): by a
jailed process of the grader's (``zygote.StorePool``), whose keys show that the ranks met as a process group.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "torchrun_env.json")
NPROC = (2,)
DUMP = "import json, os, sys\njson.dump(dict(os.environ), open(os.path.join(sys.argv[1], os.environ['RANK']), 'w'))\n"
DROPPED = ("PATH", "HOME", "LC_CTYPE", "LANG", "PWD", "TORCHELASTIC_ERROR_FILE")  # the caller's, or this capture's
REPLACED = {"MASTER_PORT": "{port}", "TORCHELASTIC_RUN_ID": "{run_id}"}


def capture(nproc: int) -> list[dict[str, str]]:
    with tempfile.TemporaryDirectory() as folder:
        script = os.path.join(folder, "dump.py")
        with open(script, "w") as f:
            f.write(DUMP)
        subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
                        script, folder], env={"PATH": "/usr/bin:/bin", "HOME": folder}, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
        envs = []
        for rank in range(nproc):
            with open(os.path.join(folder, str(rank))) as f:
                env = json.load(f)
            envs.append({k: REPLACED.get(k, v) for k, v in sorted(env.items()) if k not in DROPPED})
    return envs


def text() -> str:
    return json.dumps({str(n): capture(n) for n in NPROC}, indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    fresh = text()
    if "--check" in argv:
        with open(OUT) as f:
            if f.read() != fresh:
                print(f"{OUT} differs from what torchrun gives now: run {__file__}", file=sys.stderr)
                return 1
        return 0
    with open(OUT, "w") as f:
        f.write(fresh)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
