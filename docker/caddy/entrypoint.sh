#!/bin/sh
# Writes Caddy's config from the environment and runs Caddy in the foreground as PID 1.
# Runs as the image's non-root user (caddy, 999:999) with no capabilities and a read-only root
# filesystem: the config and Caddy's data and config directories go to the /run tmpfs.
#   BENCH_PORT  (required) the port to listen on
#   BENCH_ADDR  (default 127.0.0.1) the address to listen on: IPv4 or IPv6
set -eu

die() { echo "benchctl/caddy: $*" >&2; exit 64; }

[ -n "${BENCH_PORT:-}" ] || die "BENCH_PORT is not set; run with -e BENCH_PORT=<port> (Caddy listens on \$BENCH_ADDR:<port>, 127.0.0.1 by default)"
case $BENCH_PORT in *[!0-9]*) die "BENCH_PORT must be a port number, got '$BENCH_PORT'" ;; esac
{ [ "$BENCH_PORT" -ge 1 ] && [ "$BENCH_PORT" -le 65535 ]; } || die "BENCH_PORT out of range: $BENCH_PORT"
# Without capabilities a port below net.ipv4.ip_unprivileged_port_start (1024 unless changed; with
# --network host it is the host's setting) cannot be bound.
unprivileged=$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start 2>/dev/null || echo 1024)
if [ "$(id -u)" != 0 ] && [ "$BENCH_PORT" -lt "$unprivileged" ]; then
    die "BENCH_PORT $BENCH_PORT is a privileged port (below $unprivileged) and Caddy runs as uid $(id -u) without capabilities; use a port >= $unprivileged"
fi

# BENCH_ADDR: the address to listen on, 127.0.0.1 when unset: an IPv4 address in dotted decimal,
# or an IPv6 address (bare or in brackets; no zone index). Checked here so that a bad value
# stops the container with one line instead of a server's own parse error.
ipv4_ok() {
    case $1 in *[!0-9.]*|.*|*.|*..*) return 1 ;; esac
    set -f; old_ifs=$IFS; IFS=.; set -- $1; IFS=$old_ifs; set +f
    [ $# = 4 ] || return 1
    for o in "$@"; do
        case $o in 0|[1-9]|[1-9][0-9]|[1-9][0-9][0-9]) [ "$o" -le 255 ] || return 1 ;; *) return 1 ;; esac
    done
}
ipv6_ok() {
    a=$1
    case $a in *:*) ;; *) return 1 ;; esac
    case $a in *[!0-9A-Fa-f:.]*|*:::*|*::*::*) return 1 ;; esac
    case $a in :[!:]*|*[!:]:) return 1 ;; esac
    case $a in *.*) ipv4_ok "${a##*:}" || return 1; a=${a%:*}:0:0 ;; esac
    n=0
    set -f; old_ifs=$IFS; IFS=:; set -- $a; IFS=$old_ifs; set +f
    for g in "$@"; do
        case $g in '') ;; ?|??|???|????) n=$((n + 1)) ;; *) return 1 ;; esac
    done
    case $a in *::*) [ $n -le 7 ] ;; *) [ $n = 8 ] ;; esac
}
addr=${BENCH_ADDR:-127.0.0.1}
case $addr in \[*\]) addr=${addr#\[}; addr=${addr%\]} ;; esac
if ipv4_ok "$addr"; then host=$addr
elif ipv6_ok "$addr"; then host="[$addr]"   # the Caddyfile's bind takes an IPv6 address in brackets
else die "BENCH_ADDR must be an IPv4 or IPv6 address (e.g. 127.0.0.1 or ::1), got '$BENCH_ADDR'"
fi

[ -d /srv/www ] || { echo "benchctl/caddy: /srv/www is missing; mount the documents there (read-only)" >&2; exit 66; }

# The config goes to /run/benchctl, and so do Caddy's config directory (autosave.json, which
# persist_config off leaves unwritten) and data directory (its storage: lock files, and the
# certificates it would manage if it managed any). Their defaults are under the user's home,
# /var/lib/caddy, on the read-only root filesystem.
export XDG_CONFIG_HOME=/run/benchctl/caddy/config XDG_DATA_HOME=/run/benchctl/caddy/data
mkdir -p "$XDG_CONFIG_HOME" "$XDG_DATA_HOME" 2>/dev/null || true
for d in /run/benchctl "$XDG_CONFIG_HOME" "$XDG_DATA_HOME"; do
    [ -d "$d" ] && [ -w "$d" ] || { echo "benchctl/caddy: cannot write to $d as uid $(id -u); run with --tmpfs /run (the root filesystem is read-only)" >&2; exit 73; }
done
# BENCH_TLS=1: HTTPS with the run's certificate, mounted read-only at /etc/benchctl/tls.
case ${BENCH_TLS:-} in
    ''|0) tls=0 ;;
    1)
        tls=1
        for f in cert.pem key.pem; do
            [ -r "/etc/benchctl/tls/$f" ] || { echo "benchctl/caddy: BENCH_TLS=1 but /etc/benchctl/tls/$f is missing or unreadable; mount the run's certificate folder there (read-only)" >&2; exit 66; }
        done
        ;;
    *) echo "benchctl/caddy: BENCH_TLS must be 1 or 0, got '$BENCH_TLS'" >&2; exit 64 ;;
esac
scheme=http
tls_conf="# plain HTTP"
if [ $tls = 1 ]; then
    scheme=https
    tls_conf="tls /etc/benchctl/tls/cert.pem /etc/benchctl/tls/key.pem"
fi
# BENCH_HTTP2=1: HTTP/2 on the same port: over TLS by ALPN h2 (HTTP/1.1 still offered), in
# cleartext h2c by prior knowledge or by Upgrade (HTTP/1.x still served).
protocols=h1
case ${BENCH_HTTP2:-} in
    ''|0) ;;
    1) if [ $tls = 1 ]; then protocols="h1 h2"; else protocols="h1 h2c"; fi ;;
    *) echo "benchctl/caddy: BENCH_HTTP2 must be 1 or 0, got '$BENCH_HTTP2'" >&2; exit 64 ;;
esac
# BENCH_HTTP3=1: HTTP/3 over QUIC as well, on UDP at the same address and port number; QUIC is
# always encrypted, so it needs BENCH_TLS=1. HTTPS over TCP stays served beside it.
case ${BENCH_HTTP3:-} in
    ''|0) ;;
    1)
        [ $tls = 1 ] || { echo "benchctl/caddy: BENCH_HTTP3=1 needs BENCH_TLS=1 (HTTP/3 runs over QUIC, which is always encrypted)" >&2; exit 64; }
        protocols="$protocols h3"
        ;;
    *) echo "benchctl/caddy: BENCH_HTTP3 must be 1 or 0, got '$BENCH_HTTP3'" >&2; exit 64 ;;
esac
sed -e "s/@BENCH_HOST@/$host/g" -e "s/@BENCH_PORT@/$BENCH_PORT/g" -e "s/@BENCH_LISTEN@/$host:$BENCH_PORT/g" \
    -e "s/@BENCH_SCHEME@/$scheme/g" -e "s|@BENCH_TLS_CONF@|$tls_conf|g" -e "s/@BENCH_PROTOCOLS@/$protocols/g" \
    /etc/caddy/bench.Caddyfile.template > /run/benchctl/Caddyfile
# `caddy run` stays in the foreground (PID 1 gets docker's signals; SIGTERM stops it gracefully).
exec caddy run --config /run/benchctl/Caddyfile --adapter caddyfile
