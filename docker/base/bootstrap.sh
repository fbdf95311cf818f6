#!/bin/sh
# Make a Debian base image locally, for hosts that cannot reach a container registry.
#
#   docker/base/bootstrap.sh SUITE TAG       e.g.  bookworm debian:bookworm-slim
#                                                  bullseye debian:bullseye-slim
#
# The root filesystem is built by mmdebstrap from the host's own apt sources, so the image
# fetches packages from whatever mirror the host is configured for, and no mirror address is
# written anywhere in this repository. For a suite other than the host's, the host's sources
# file is copied with the suite name substituted (bookworm, bookworm-updates, bookworm-security
# become bullseye, bullseye-updates, bullseye-security).
#
# An existing TAG is left alone; set BOOTSTRAP_FORCE=1 to rebuild it.
# Environment: HOST_SOURCES overrides the sources file used (default: the host's deb822 file).
set -eu

usage() { echo "usage: $0 SUITE TAG   (e.g. $0 bookworm debian:bookworm-slim)" >&2; exit 2; }
[ $# -eq 2 ] || usage
suite=$1
tag=$2

if [ "${BOOTSTRAP_FORCE:-0}" != 1 ] && docker image inspect "$tag" >/dev/null 2>&1; then
    echo "bootstrap: $tag already exists (BOOTSTRAP_FORCE=1 to rebuild)"
    exit 0
fi

command -v mmdebstrap >/dev/null || { echo "bootstrap: mmdebstrap is not installed (apt-get install mmdebstrap)" >&2; exit 1; }

sources=${HOST_SOURCES:-}
if [ -z "$sources" ]; then
    for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
        if [ -s "$f" ]; then sources=$f; break; fi
    done
fi
[ -n "$sources" ] && [ -s "$sources" ] || { echo "bootstrap: no host apt sources file found" >&2; exit 1; }

host_suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$host_suite" ] || { echo "bootstrap: cannot tell the host's Debian suite from /etc/os-release" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM

# mmdebstrap tells the two sources formats apart by the file name's ending.
case $sources in
    *.sources) ext=sources ;;
    *) ext=list ;;
esac
# Whole-word substitution, so "bookworm-security" becomes "bullseye-security" as well.
sed "s/\\b$host_suite\\b/$suite/g" "$sources" > "$work/debian.$ext"

echo "bootstrap: building $suite root filesystem from $sources (suite $host_suite -> $suite)"
start=$(date +%s)
# minbase: essential packages plus apt, the same set debian:*-slim starts from.
# Documentation, man pages and locales are left out as in the slim images; nothing the servers
# need lives there.
mmdebstrap --variant=minbase --include=ca-certificates \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    "$suite" "$work/rootfs.tar" "$work/debian.$ext"

docker import --change 'CMD ["bash"]' "$work/rootfs.tar" "$tag" >/dev/null
echo "bootstrap: imported $tag in $(( $(date +%s) - start )) s"
