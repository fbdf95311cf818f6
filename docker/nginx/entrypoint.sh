#!/bin/sh
# Writes nginx's config from the environment and runs nginx in the foreground as PID 1.
# Runs as the image's non-root user (www-data, 33:33) with no capabilities and a read-only root
# filesystem: everything it writes goes to the /run and /tmp tmpfs mounts.
set -eu

if [ -z "${BENCH_PORT:-}" ]; then
    echo "benchctl/nginx: BENCH_PORT is not set; run with -e BENCH_PORT=<port> (nginx listens on \$BENCH_ADDR:<port>, 127.0.0.1 by default)" >&2
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
if ipv4_ok "$addr"; then listen=$addr:$BENCH_PORT
elif ipv6_ok "$addr"; then listen="[$addr]:$BENCH_PORT"   # nginx takes an IPv6 address in brackets
else echo "benchctl/nginx: BENCH_ADDR must be an IPv4 or IPv6 address (e.g. 127.0.0.1 or ::1), got '$BENCH_ADDR'" >&2; exit 64
fi

[ -d /srv/www ] || { echo "benchctl/nginx: /srv/www is missing; mount the documents there (read-only)" >&2; exit 66; }

# The config and the pid file go to /run/benchctl, the temporary directories to /tmp/nginx (the
# root filesystem is read-only; /run and /tmp are tmpfs mounts the user may create directories in).
mkdir -p /run/benchctl /tmp/nginx 2>/dev/null || true
for d in /run/benchctl /tmp/nginx; do
    [ -d "$d" ] && [ -w "$d" ] || { echo "benchctl/nginx: cannot write to $d as uid $(id -u); run with --tmpfs /run and --tmpfs /tmp (the root filesystem is read-only)" >&2; exit 73; }
done
# BENCH_TLS=1: HTTPS with the run's certificate, mounted read-only at /etc/benchctl/tls.
ssl=""
tls_conf=""
case ${BENCH_TLS:-} in
    ''|0) ;;
    1)
        for f in cert.pem key.pem; do
            [ -r "/etc/benchctl/tls/$f" ] || { echo "benchctl/nginx: BENCH_TLS=1 but /etc/benchctl/tls/$f is missing or unreadable; mount the run's certificate folder there (read-only)" >&2; exit 66; }
        done
        ssl=" ssl"
        tls_conf="ssl_certificate /etc/benchctl/tls/cert.pem; ssl_certificate_key /etc/benchctl/tls/key.pem; ssl_protocols TLSv1.2 TLSv1.3;"
        ;;
    *) echo "benchctl/nginx: BENCH_TLS must be 1 or 0, got '$BENCH_TLS'" >&2; exit 64 ;;
esac
# nginx's version as MAJOR*1000+MINOR (1.22 is 1022), from `nginx -v`.
nginx_version() {
    v=$(nginx -v 2>&1 | sed -n 's|^nginx version: nginx/\([0-9]*\)\.\([0-9]*\).*|\1 \2|p')
    set -- $v
    echo $(( ${1:-0} * 1000 + ${2:-0} ))
}
# BENCH_HTTP2=1: HTTP/2 on the same port. With TLS by ALPN (h2, HTTP/1.1 still offered); without,
# cleartext HTTP/2 by prior knowledge (h2c), which nginx 1.22 serves only on a listener without ssl
# and then only HTTP/2: an HTTP/1.x request on that port is refused. nginx 1.25 and later switch
# it with a directive (`http2 on`; the listen parameter is deprecated there) and tell HTTP/1.x
# from h2c by its first bytes.
http2=""
directives=""
case ${BENCH_HTTP2:-} in
    ''|0) ;;
    1) if [ "$(nginx_version)" -ge 1025 ]; then directives="http2 on;"; else http2=" http2"; fi ;;
    *) echo "benchctl/nginx: BENCH_HTTP2 must be 1 or 0, got '$BENCH_HTTP2'" >&2; exit 64 ;;
esac
# BENCH_HTTP3=1: HTTP/3 over QUIC as well, on UDP at the same address and port number (nginx
# 1.25 and later built with its HTTP/3 module, as Debian trixie's is). `reuseport` gives each
# worker its own UDP socket, and the kernel keeps a connection's packets on one of them; GSO
# sends a burst of QUIC packets in one system call. No Alt-Svc header: benchctl's clients are
# told the protocol, and the header would add bytes to every response over TCP.
quic_listen=""
case ${BENCH_HTTP3:-} in
    ''|0) ;;
    1)
        [ -n "$ssl" ] || { echo "benchctl/nginx: BENCH_HTTP3=1 needs BENCH_TLS=1 (HTTP/3 runs over QUIC, which is always encrypted)" >&2; exit 64; }
        nginx -V 2>&1 | grep -q -- --with-http_v3_module || { echo "benchctl/nginx: BENCH_HTTP3=1, but $(nginx -v 2>&1 | sed 's/^nginx version: //') is built without its HTTP/3 module" >&2; exit 64; }
        quic_listen="listen $listen quic reuseport;"
        directives="$directives quic_gso on;"
        ;;
    *) echo "benchctl/nginx: BENCH_HTTP3 must be 1 or 0, got '$BENCH_HTTP3'" >&2; exit 64 ;;
esac
# BENCH_PLAIN_PORT (with BENCH_TLS=1 or BENCH_HTTP2=1): plain HTTP/1.x on the same address and
# this port as well, for a cache in front of this server (Varnish's backends are plain HTTP/1.1).
plain_listen=""
if [ -n "${BENCH_PLAIN_PORT:-}" ]; then
    [ -n "$ssl$http2$directives" ] || { echo "benchctl/nginx: BENCH_PLAIN_PORT is for a second, plain HTTP/1.x listener beside TLS or HTTP/2; without BENCH_TLS=1 or BENCH_HTTP2=1 the server is plain HTTP/1.x already" >&2; exit 64; }
    case $BENCH_PLAIN_PORT in
        *[!0-9]*) echo "benchctl/nginx: BENCH_PLAIN_PORT must be a port number, got '$BENCH_PLAIN_PORT'" >&2; exit 64 ;;
    esac
    if [ "$BENCH_PLAIN_PORT" -lt "$unprivileged" ] || [ "$BENCH_PLAIN_PORT" -gt 65535 ] || [ "$BENCH_PLAIN_PORT" = "$BENCH_PORT" ]; then
        echo "benchctl/nginx: BENCH_PLAIN_PORT must be a free port from $unprivileged to 65535 other than BENCH_PORT, got '$BENCH_PLAIN_PORT'" >&2; exit 64
    fi
    plain_listen="listen ${listen%:*}:$BENCH_PLAIN_PORT backlog=4096;"
fi
sed -e "s/@BENCH_PORT@/$BENCH_PORT/g" -e "s/@BENCH_LISTEN@/$listen/g" -e "s/@BENCH_SSL@/$ssl$http2/g" \
    -e "s|@BENCH_TLS_CONF@|$tls_conf|g" -e "s/@BENCH_PLAIN_LISTEN@/$plain_listen/g" \
    -e "s/@BENCH_QUIC_LISTEN@/$quic_listen/g" -e "s/@BENCH_DIRECTIVES@/$directives/g" \
    /etc/nginx/bench.conf.template > /run/benchctl/nginx.conf
# -e stderr: errors before the config is read go to stderr too, not to /var/log/nginx.
exec nginx -e stderr -c /run/benchctl/nginx.conf
