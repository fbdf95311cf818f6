#!/bin/sh
# Writes nginx's config from the environment and runs nginx in the foreground as PID 1.
set -eu

if [ -z "${BENCH_PORT:-}" ]; then
    echo "benchctl/nginx: BENCH_PORT is not set; run with -e BENCH_PORT=<port> (nginx listens on 127.0.0.1:<port>)" >&2
    exit 64
fi
case $BENCH_PORT in
    *[!0-9]*) echo "benchctl/nginx: BENCH_PORT must be a port number, got '$BENCH_PORT'" >&2; exit 64 ;;
esac
if [ "$BENCH_PORT" -lt 1 ] || [ "$BENCH_PORT" -gt 65535 ]; then
    echo "benchctl/nginx: BENCH_PORT out of range: $BENCH_PORT" >&2; exit 64
fi
[ -d /srv/www ] || { echo "benchctl/nginx: /srv/www is missing; mount the documents there (read-only)" >&2; exit 66; }

sed "s/@BENCH_PORT@/$BENCH_PORT/g" /etc/nginx/bench.conf.template > /etc/nginx/bench.conf
# -e stderr: errors before the config is read go to stderr too, not to /var/log/nginx.
exec nginx -e stderr -c /etc/nginx/bench.conf
