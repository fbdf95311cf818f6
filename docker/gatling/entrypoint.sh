#!/bin/sh
# Runs gatling in the foreground under tini (see the Dockerfile for why not as PID 1 itself).
# gatling has no config file: everything is a flag.
set -eu

if [ -z "${BENCH_PORT:-}" ]; then
    echo "benchctl/gatling: BENCH_PORT is not set; run with -e BENCH_PORT=<port> (gatling listens on 127.0.0.1:<port>)" >&2
    exit 64
fi
case $BENCH_PORT in
    *[!0-9]*) echo "benchctl/gatling: BENCH_PORT must be a port number, got '$BENCH_PORT'" >&2; exit 64 ;;
esac
if [ "$BENCH_PORT" -lt 1 ] || [ "$BENCH_PORT" -gt 65535 ]; then
    echo "benchctl/gatling: BENCH_PORT out of range: $BENCH_PORT" >&2; exit 64
fi
[ -d /srv/www ] || { echo "benchctl/gatling: /srv/www is missing; mount the documents there (read-only)" >&2; exit 66; }

# -i 127.0.0.1 -p PORT  HTTP on loopback only (gatling always runs in the foreground)
# -F -S                 no FTP and no SMB service: HTTP only, nothing else bound
# -V                    no virtual hosting: files are served from the docroot itself, not from
#                       a per-Host-header subdirectory
# -D                    no generated directory indexes
# -n                    no logging (gatling otherwise writes a line per event to stdout)
# -u nobody -c /srv/www drop root and chroot into the documents after binding
# gatling is one process with one event loop (epoll) and sends files with sendfile; it has
# no tuning knobs beyond these. Its listen backlog is fixed in the source at 16.
exec tini -- gatling -i 127.0.0.1 -p "$BENCH_PORT" -F -S -V -D -n -u nobody -c /srv/www
