#!/bin/sh
# Checks the environment and runs the Tornado application in the foreground as PID 1.
# serve.py reads BENCH_PORT itself (there is no config file to write for Tornado).
# Runs as the image's non-root user (nobody, 65534:65534) with no capabilities and a read-only root
# filesystem; it writes nothing at all.
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
# Without capabilities a port below net.ipv4.ip_unprivileged_port_start (1024 unless changed; with
# --network host it is the host's setting) cannot be bound.
unprivileged=$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start 2>/dev/null || echo 1024)
if [ "$(id -u)" != 0 ] && [ "$BENCH_PORT" -lt "$unprivileged" ]; then
    echo "benchctl/tornado: BENCH_PORT $BENCH_PORT is a privileged port (below $unprivileged) and Tornado runs as uid $(id -u) without capabilities; use a port >= $unprivileged" >&2; exit 64
fi
[ -d /srv/www ] || { echo "benchctl/tornado: /srv/www is missing; mount the documents there (read-only)" >&2; exit 66; }

# -u: unbuffered, so error messages reach `docker logs` at once.
exec python3 -u /usr/local/lib/benchctl/serve.py
