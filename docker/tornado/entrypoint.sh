#!/bin/sh
# Checks the environment and runs the Tornado application in the foreground as PID 1.
# serve.py reads BENCH_PORT itself (there is no config file to write for Tornado).
set -eu

if [ -z "${BENCH_PORT:-}" ]; then
    echo "benchctl/tornado: BENCH_PORT is not set; run with -e BENCH_PORT=<port> (Tornado listens on 127.0.0.1:<port>)" >&2
    exit 64
fi
case $BENCH_PORT in
    *[!0-9]*) echo "benchctl/tornado: BENCH_PORT must be a port number, got '$BENCH_PORT'" >&2; exit 64 ;;
esac
if [ "$BENCH_PORT" -lt 1 ] || [ "$BENCH_PORT" -gt 65535 ]; then
    echo "benchctl/tornado: BENCH_PORT out of range: $BENCH_PORT" >&2; exit 64
fi
[ -d /srv/www ] || { echo "benchctl/tornado: /srv/www is missing; mount the documents there (read-only)" >&2; exit 66; }

# -u: unbuffered, so error messages reach `docker logs` at once.
exec python3 -u /usr/local/lib/benchctl/serve.py
