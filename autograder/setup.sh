#!/usr/bin/env bash
# Gradescope image setup (Ubuntu 22.04, Python 3.10, run as root once when the image is built).
# Everything is installed here; nothing is downloaded while grading.
set -euxo pipefail
apt-get update
apt-get install -y --no-install-recommends python3-venv python3-pip
python3 -m venv /autograder/venv
# The CPU build of torch: PyPI's default Linux wheel pulls several GB of CUDA libraries.
/autograder/venv/bin/pip install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
/autograder/venv/bin/pip install --no-cache-dir -r /autograder/source/requirements.txt
# Student code runs as this user: it cannot read the hidden checks or the reference, nor write results.
id minddp-student >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin minddp-student
chmod -R go-rwx /autograder/source
