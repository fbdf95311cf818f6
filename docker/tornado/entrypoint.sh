#!/bin/sh
# Checks the environment and runs the Tornado application in the foreground as PID 1.
# serve.py reads BENCH_PORT and BENCH_ADDR itself (there is no config file to write for Tornado);
# this script checks them first and passes BENCH_ADDR on bare (127.0.0.1 when unset).
# Runs as the image's non-root user (nobody, 65534:65534) with no capabilities and a read-only root
# filesystem; it writes nothing at all.
set -eu

if [ -z "${BENCH_PORT:-}" ]; then
    echo "benchctl/tornado: BENCH_PORT is not set; run with -e BENCH_PORT=<port> (Tornado listens on \$BENCH_ADDR:<port>, 127.0.0.1 by default)" >&2
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
# serve.py gets the address bare, brackets removed (127.0.0.1 when BENCH_ADDR is unset).
ipv4_ok "$addr" || ipv6_ok "$addr" || { echo "benchctl/tornado: BENCH_ADDR must be an IPv4 or IPv6 address (e.g. 127.0.0.1 or ::1), got '$BENCH_ADDR'" >&2; exit 64; }
export BENCH_ADDR="$addr"

[ -d /srv/www ] || { echo "benchctl/tornado: /srv/www is missing; mount the documents there (read-only)" >&2; exit 66; }

# -u: unbuffered, so error messages reach `docker logs` at once.
# BENCH_TLS=1: HTTPS with the run's certificate, mounted read-only at /etc/benchctl/tls.
case ${BENCH_TLS:-} in
    ''|0) ;;
    1)
        for f in cert.pem key.pem; do
            [ -r "/etc/benchctl/tls/$f" ] || { echo "benchctl/tornado: BENCH_TLS=1 but /etc/benchctl/tls/$f is missing or unreadable; mount the run's certificate folder there (read-only)" >&2; exit 66; }
        done
        ;;
    *) echo "benchctl/tornado: BENCH_TLS must be 1 or 0, got '$BENCH_TLS'" >&2; exit 64 ;;
esac
exec python3 -u /usr/local/lib/benchctl/serve.py
