#!/bin/sh
# Writes Cherokee's config from the environment and runs it in the foreground as PID 1.
set -eu

if [ -z "${BENCH_PORT:-}" ]; then
    echo "benchctl/cherokee: BENCH_PORT is not set; run with -e BENCH_PORT=<port> (Cherokee listens on 127.0.0.1:<port>)" >&2
    exit 64
fi
case $BENCH_PORT in
    *[!0-9]*) echo "benchctl/cherokee: BENCH_PORT must be a port number, got '$BENCH_PORT'" >&2; exit 64 ;;
esac
if [ "$BENCH_PORT" -lt 1 ] || [ "$BENCH_PORT" -gt 65535 ]; then
    echo "benchctl/cherokee: BENCH_PORT out of range: $BENCH_PORT" >&2; exit 64
fi
[ -d /srv/www ] || { echo "benchctl/cherokee: /srv/www is missing; mount the documents there (read-only)" >&2; exit 66; }

sed "s/@BENCH_PORT@/$BENCH_PORT/g" /etc/cherokee/bench.conf.template > /etc/cherokee/bench.conf
mkdir -p /var/run
# `cherokee` without -d stays in the foreground; it starts cherokee-worker and stops it on
# SIGTERM.
exec cherokee -C /etc/cherokee/bench.conf
