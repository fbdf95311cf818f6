#!/bin/sh
# Writes httpd's config from the environment and runs Apache in the foreground as PID 1.
set -eu

if [ -z "${BENCH_PORT:-}" ]; then
    echo "benchctl/apache: BENCH_PORT is not set; run with -e BENCH_PORT=<port> (Apache listens on 127.0.0.1:<port>)" >&2
    exit 64
fi
case $BENCH_PORT in
    *[!0-9]*) echo "benchctl/apache: BENCH_PORT must be a port number, got '$BENCH_PORT'" >&2; exit 64 ;;
esac
if [ "$BENCH_PORT" -lt 1 ] || [ "$BENCH_PORT" -gt 65535 ]; then
    echo "benchctl/apache: BENCH_PORT out of range: $BENCH_PORT" >&2; exit 64
fi
[ -d /srv/www ] || { echo "benchctl/apache: /srv/www is missing; mount the documents there (read-only)" >&2; exit 66; }

sed "s/@BENCH_PORT@/$BENCH_PORT/g" /etc/apache2/bench.conf.template > /etc/apache2/bench.conf
# Runtime directory for the pid file and the accept mutex; a stale pid file from a previous
# start of the same container would make httpd refuse to start.
mkdir -p /run/apache2
rm -f /run/apache2/httpd.pid
# -DFOREGROUND: the parent process stays in the foreground (PID 1) and gets docker's signals.
exec apache2 -f /etc/apache2/bench.conf -DFOREGROUND
