#!/usr/bin/env bash
# Install what the Gradescope-shaped container (autograder/container.py) needs (Debian/Ubuntu, as root):
#   runc        the OCI runtime Docker itself uses, so that seccomp is applied by the same libseccomp;
#   iproute2    a network namespace with loopback up for each container (as Docker gives);
#   e2fsprogs   an ext4 file on a loop device holds the container layers (overlayfs needs another file system
#               than the machine's root, which is the lower layer);
# and moby's own defaults: Docker's seccomp profile (profiles/seccomp/default.json), its default capability
# set (oci/caps/defaults.go) and masked/read-only paths (oci/defaults.go), taken from Debian's
# golang-github-docker-docker-dev (the source of Debian's docker.io) into DEST (default dist/moby).
# Safe to run again: what is there is kept.
set -euo pipefail

DEST="${1:-dist/moby}"
PACKAGES=(runc iproute2 e2fsprogs)

missing=()
command -v runc >/dev/null 2>&1 || missing+=(runc)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v mkfs.ext4 >/dev/null 2>&1 || missing+=(e2fsprogs)
if [ "${#missing[@]}" -eq 0 ] && [ -f "$DEST/profiles/seccomp/default.json" ]; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "container: needs ${PACKAGES[*]} and moby's defaults, and this is not a Debian-like system (no apt-get)" >&2
    exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "container: installing what is missing needs root (the simulated container needs root anyway)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if [ "${#missing[@]}" -gt 0 ]; then
    echo "container: installing ${missing[*]}"
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ ! -f "$DEST/profiles/seccomp/default.json" ]; then
    download=$(mktemp -d)
    trap 'rm -rf "$download"' EXIT
    chmod 777 "$download"  # apt-get download drops to its own user
    (cd "$download" && apt-get download -qq golang-github-docker-docker-dev)
    dpkg-deb -x "$download"/golang-github-docker-docker-dev_*.deb "$download/x"
    moby="$download/x/usr/share/gocode/src/github.com/docker/docker"
    mkdir -p "$DEST/profiles/seccomp" "$DEST/oci/caps"
    cp "$moby/profiles/seccomp/default.json" "$DEST/profiles/seccomp/"
    cp "$moby/oci/caps/defaults.go" "$DEST/oci/caps/"
    cp "$moby/oci/defaults.go" "$DEST/oci/"
    dpkg-deb -f "$download"/golang-github-docker-docker-dev_*.deb Version > "$DEST/VERSION"
    echo "container: moby's defaults of Docker $(cat "$DEST/VERSION") in $DEST"
fi
