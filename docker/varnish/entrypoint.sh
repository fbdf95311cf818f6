#!/bin/sh
# Writes the VCL from the environment and runs varnishd in the foreground as PID 1.
#   BENCH_PORT        (required) listen on 127.0.0.1:BENCH_PORT
#   BENCH_BACKEND     (required) HOST:PORT or [IPV6]:PORT of the server Varnish caches
#   BENCH_CACHE_SIZE  (default 256m) malloc storage; must exceed the largest document
set -eu

die() { echo "benchctl/varnish: $*" >&2; exit 64; }

[ -n "${BENCH_PORT:-}" ] || die "BENCH_PORT is not set; run with -e BENCH_PORT=<port> (Varnish listens on 127.0.0.1:<port>)"
case $BENCH_PORT in *[!0-9]*) die "BENCH_PORT must be a port number, got '$BENCH_PORT'" ;; esac
{ [ "$BENCH_PORT" -ge 1 ] && [ "$BENCH_PORT" -le 65535 ]; } || die "BENCH_PORT out of range: $BENCH_PORT"

[ -n "${BENCH_BACKEND:-}" ] || die "BENCH_BACKEND is not set; run with -e BENCH_BACKEND=127.0.0.1:<port> of the backend server"
backend_port=${BENCH_BACKEND##*:}
backend_host=${BENCH_BACKEND%:*}
backend_host=${backend_host#[}
backend_host=${backend_host%]}
case $backend_port in ''|*[!0-9]*) die "BENCH_BACKEND must be HOST:PORT, got '$BENCH_BACKEND'" ;; esac
[ -n "$backend_host" ] && [ "$backend_host" != "$BENCH_BACKEND" ] || die "BENCH_BACKEND must be HOST:PORT, got '$BENCH_BACKEND'"

cache_size=${BENCH_CACHE_SIZE:-256m}
case $cache_size in
    [0-9]*[0-9kKmMgG]) ;;
    *) die "BENCH_CACHE_SIZE must be a size such as 256m or 1g, got '$cache_size'" ;;
esac

sed -e "s/@BACKEND_HOST@/$backend_host/g" -e "s/@BACKEND_PORT@/$backend_port/g" \
    /etc/varnish/bench.vcl.template > /etc/varnish/bench.vcl

# -F: stay in the foreground (the manager process is PID 1 and stops the child on SIGTERM).
# -T none: no management console listening on a port; nothing needs to talk to it.
# -s malloc,SIZE: objects in memory, sized above the largest document (a 100 MB file needs
#   256m) or the response to it is cut short.
# thread_pool_min=200 (x 2 pools): 400 worker threads exist before the first request, more than
#   ab -c 300 needs, so none are created while a measurement runs.
# http_gzip_support=off: Varnish neither asks the backend for gzip nor compresses; the exact
#   bytes of each file are stored and sent.
exec varnishd -F \
    -a "127.0.0.1:$BENCH_PORT" \
    -T none \
    -f /etc/varnish/bench.vcl \
    -s "malloc,$cache_size" \
    -p thread_pool_min=200 \
    -p http_gzip_support=off
