#!/bin/sh
# Writes nginx's config from the environment and runs nginx in the foreground as PID 1.
# Runs as the image's non-root user (www-data, 33:33) with no capabilities and a read-only root
# filesystem: everything it writes goes to the /run and /tmp tmpfs mounts.
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
# Without capabilities a port below net.ipv4.ip_unprivileged_port_start (1024 unless changed; with
# --network host it is the host's setting) cannot be bound.
unprivileged=$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start 2>/dev/null || echo 1024)
if [ "$(id -u)" != 0 ] && [ "$BENCH_PORT" -lt "$unprivileged" ]; then
    echo "benchctl/nginx: BENCH_PORT $BENCH_PORT is a privileged port (below $unprivileged) and nginx runs as uid $(id -u) without capabilities; use a port >= $unprivileged" >&2; exit 64
fi
[ -d /srv/www ] || { echo "benchctl/nginx: /srv/www is missing; mount the documents there (read-only)" >&2; exit 66; }

# The config and the pid file go to /run/benchctl, the temporary directories to /tmp/nginx (the
# root filesystem is read-only; /run and /tmp are tmpfs mounts the user may create directories in).
mkdir -p /run/benchctl /tmp/nginx 2>/dev/null || true
for d in /run/benchctl /tmp/nginx; do
    [ -d "$d" ] && [ -w "$d" ] || { echo "benchctl/nginx: cannot write to $d as uid $(id -u); run with --tmpfs /run and --tmpfs /tmp (the root filesystem is read-only)" >&2; exit 73; }
done
sed "s/@BENCH_PORT@/$BENCH_PORT/g" /etc/nginx/bench.conf.template > /run/benchctl/nginx.conf
# -e stderr: errors before the config is read go to stderr too, not to /var/log/nginx.
exec nginx -e stderr -c /run/benchctl/nginx.conf
