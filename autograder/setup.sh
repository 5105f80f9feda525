#!/usr/bin/env bash
# Gradescope image setup (Ubuntu 22.04, Python 3.10, run as root once when the image is built).
# Everything is installed here; nothing is downloaded while grading. It fails (and the image with it) unless
# the installed torch is the CPU build and a process of an unprivileged uid can import it.
#   AUTOGRADER_ROOT  where the autograder lives (default /autograder; `make gradescope-sim` picks another)
#   TORCH_INDEX_URL  where torch comes from (default: PyTorch's CPU index, since PyPI's Linux wheel is the
#                    multi-GB CUDA build); set it empty to use pip's configured index instead (machines that
#                    cannot reach download.pytorch.org but have a CPU wheel there). An index that does not
#                    answer is skipped with a warning (pip would retry every package); the CPU check below
#                    then refuses an image that got the CUDA build instead.
set -euxo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
TORCH_INDEX_URL="${TORCH_INDEX_URL-https://download.pytorch.org/whl/cpu}"
if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c "import ensurepip" >/dev/null 2>&1; then
    apt-get update
    apt-get install -y --no-install-recommends python3-venv python3-pip
fi
# The venv lives in the tree student workers are chrooted into where the container allows no mount namespace
# (grader/jailtree.py), at the same path as outside, behind a symlink: the tree then needs no copy of it.
JAIL="$ROOT/jail"
mkdir -p "$JAIL$ROOT"
chmod 755 "$JAIL" "$JAIL$ROOT"
python3 -m venv "$JAIL$ROOT/venv"
ln -sfn "jail$ROOT/venv" "$ROOT/venv"
PIP="$ROOT/venv/bin/pip"
if [ -n "$TORCH_INDEX_URL" ] && ! "$ROOT/venv/bin/python" -c "import sys, urllib.request; \
        urllib.request.urlopen(sys.argv[1].rstrip('/') + '/torch/', timeout=15)" "$TORCH_INDEX_URL" 2>/dev/null; then
    echo "setup.sh: WARNING: $TORCH_INDEX_URL does not answer; torch comes from pip's configured index" >&2
    TORCH_INDEX_URL=""
fi
if [ -n "$TORCH_INDEX_URL" ]; then
    "$PIP" install --no-cache-dir "$(grep -E '^torch==' "$ROOT/source/requirements.txt")" --index-url "$TORCH_INDEX_URL"
fi
"$PIP" install --no-cache-dir -r "$ROOT/source/requirements.txt"
# Refuse an image that would zero a whole class: a CUDA build (large, and not what the reference was measured
# with), or a torch that student processes (a uid of their own, no account) cannot import.
"$ROOT/venv/bin/python" - <<'EOF'
import os
import subprocess
import sys

import torch

if torch.version.cuda is not None:
    sys.exit(f"setup.sh: torch {torch.__version__} is a CUDA build (CUDA {torch.version.cuda}); install the CPU "
             "build (TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu)")


def as_student():
    os.setgroups([])
    os.setgid(1_234_567)
    os.setuid(1_234_567)


done = subprocess.run([sys.executable, "-c", "import torch, torch.distributed; print(torch.__version__)"],
                      preexec_fn=as_student, capture_output=True, text=True, timeout=300, cwd="/")
if done.returncode != 0:
    sys.exit("setup.sh: an unprivileged process cannot import torch from this venv:\n" + done.stderr[-2000:])
print(f"setup.sh: torch {done.stdout.strip()} (CPU build) imports as an unprivileged uid")
EOF
# The autograder's source (hidden inputs, reference solution) is root's alone (the grader checks it again);
# student workers see only the harness and the code to grade, copied or mounted read-only for them.
chmod -R go-rwx "$ROOT/source"
# The rest of the tree: the Python installation's import folders, the shared libraries they load, /etc.
(cd "$ROOT/source" && "$ROOT/venv/bin/python" -m grader --source "$ROOT/source" --build-jail)
# The hidden inputs are drawn from a secret made now (grader/secret.py): fixed for this image, unknowable before.
(cd "$ROOT/source" && "$ROOT/venv/bin/python" -m grader --source "$ROOT/source" --make-secret)
# The reference pass, once, here: each grading then reuses it (after checking this machine reproduces it).
(cd "$ROOT/source" && "$ROOT/venv/bin/python" -m grader --source "$ROOT/source" --reference-only)
# Which grader this image is: CODE (CHANGELOG.md names each release's) and DRAW (the secret just drawn); every
# results.json's staff entry repeats it (grader/grader_version.py).
(cd "$ROOT/source" && "$ROOT/venv/bin/python" -m grader.grader_version --source "$ROOT/source")
