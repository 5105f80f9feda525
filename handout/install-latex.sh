#!/usr/bin/env bash
# Install what `make handout` needs to compile the LaTeX source (Debian/Ubuntu, as root).
# Called by the Makefile only when latexmk is missing; safe to run again (apt-get skips what is installed).
set -euo pipefail

PACKAGES=(texlive-latex-recommended texlive-latex-extra texlive-fonts-recommended latexmk)

if command -v latexmk >/dev/null 2>&1 && command -v pdflatex >/dev/null 2>&1; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "handout: latexmk/pdflatex are missing and this is not a Debian-like system (no apt-get)." >&2
    echo "handout: install a TeX distribution with latexmk (e.g. TeX Live: ${PACKAGES[*]}) and rerun 'make handout'." >&2
    exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "handout: latexmk/pdflatex are missing; installing them needs root. Run as root, or:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y ${PACKAGES[*]}" >&2
    exit 1
fi
echo "handout: installing LaTeX (${PACKAGES[*]}); this takes a few minutes once"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${PACKAGES[@]}" >/dev/null
command -v latexmk >/dev/null && command -v pdflatex >/dev/null || {
    echo "handout: apt-get finished but latexmk/pdflatex are still missing" >&2; exit 1; }
echo "handout: LaTeX installed ($(pdflatex --version | head -1))"
