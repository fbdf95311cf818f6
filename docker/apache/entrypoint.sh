#!/bin/sh
# Writes httpd's config from the environment and runs Apache in the foreground as PID 1.
# Runs as the image's non-root user (www-data, 33:33) with no capabilities and a read-only root
# filesystem: everything it writes goes to the /run tmpfs.
set -eu

if [ -z "${BENCH_PORT:-}" ]; then
    echo "benchctl/apache: BENCH_PORT is not set; run with -e BENCH_PORT=<port> (Apache listens on \$BENCH_ADDR:<port>, 127.0.0.1 by default)" >&2
    exit 64
fi
case $BENCH_PORT in
    *[!0-9]*) echo "benchctl/apache: BENCH_PORT must be a port number, got '$BENCH_PORT'" >&2; exit 64 ;;
esac
if [ "$BENCH_PORT" -lt 1 ] || [ "$BENCH_PORT" -gt 65535 ]; then
    echo "benchctl/apache: BENCH_PORT out of range: $BENCH_PORT" >&2; exit 64
fi
# Without capabilities a port below net.ipv4.ip_unprivileged_port_start (1024 unless changed; with
# --network host it is the host's setting) cannot be bound.
unprivileged=$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start 2>/dev/null || echo 1024)
if [ "$(id -u)" != 0 ] && [ "$BENCH_PORT" -lt "$unprivileged" ]; then
    echo "benchctl/apache: BENCH_PORT $BENCH_PORT is a privileged port (below $unprivileged) and Apache runs as uid $(id -u) without capabilities; use a port >= $unprivileged" >&2; exit 64
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
elif ipv6_ok "$addr"; then listen="[$addr]:$BENCH_PORT"   # Listen takes an IPv6 address in brackets
else echo "benchctl/apache: BENCH_ADDR must be an IPv4 or IPv6 address (e.g. 127.0.0.1 or ::1), got '$BENCH_ADDR'" >&2; exit 64
fi

[ -d /srv/www ] || { echo "benchctl/apache: /srv/www is missing; mount the documents there (read-only)" >&2; exit 66; }

# The config goes to /run/benchctl, the runtime directory (pid file, mutexes) below it: the root
# filesystem is read-only, /run is a tmpfs the user may create directories in.
mkdir -p /run/benchctl/apache 2>/dev/null || true
[ -d /run/benchctl/apache ] && [ -w /run/benchctl/apache ] || { echo "benchctl/apache: cannot write to /run/benchctl/apache as uid $(id -u); run with --tmpfs /run (the root filesystem is read-only)" >&2; exit 73; }
# BENCH_TLS=1: HTTPS with the run's certificate, mounted read-only at /etc/benchctl/tls.
tls_conf="# plain HTTP"
case ${BENCH_TLS:-} in
    ''|0) ;;
    1)
        for f in cert.pem key.pem; do
            [ -r "/etc/benchctl/tls/$f" ] || { echo "benchctl/apache: BENCH_TLS=1 but /etc/benchctl/tls/$f is missing or unreadable; mount the run's certificate folder there (read-only)" >&2; exit 66; }
        done
        # GNU sed reads \n in the replacement as a line break: one directive per line.
        tls_conf='LoadModule ssl_module /usr/lib/apache2/modules/mod_ssl.so\nSSLEngine on\nSSLProtocol -all +TLSv1.2 +TLSv1.3\nSSLCertificateFile /etc/benchctl/tls/cert.pem\nSSLCertificateKeyFile /etc/benchctl/tls/key.pem'
        ;;
    *) echo "benchctl/apache: BENCH_TLS must be 1 or 0, got '$BENCH_TLS'" >&2; exit 64 ;;
esac
# BENCH_HTTP2=1: HTTP/2 on the same port (mod_http2, which needs the event MPM this image already
# runs): over TLS by ALPN h2, HTTP/1.1 still offered; in cleartext h2c by prior knowledge
# (H2Direct) or by Upgrade, HTTP/1.x still served.
http2_conf="# HTTP/1.x only"
case ${BENCH_HTTP2:-} in
    ''|0) ;;
    1) http2_conf='LoadModule http2_module /usr/lib/apache2/modules/mod_http2.so\nProtocols h2 h2c http/1.1\nH2Direct on\nH2MinWorkers 300\nH2MaxWorkers 300' ;;
    *) echo "benchctl/apache: BENCH_HTTP2 must be 1 or 0, got '$BENCH_HTTP2'" >&2; exit 64 ;;
esac
sed -e "s/@BENCH_PORT@/$BENCH_PORT/g" -e "s/@BENCH_LISTEN@/$listen/g" -e "s|@BENCH_TLS_CONF@|$tls_conf|g" \
    -e "s|@BENCH_HTTP2_CONF@|$http2_conf|g" /etc/apache2/bench.conf.template > /run/benchctl/apache.conf
# A stale pid file from a previous start of the same container would make httpd refuse to start
# (a tmpfs starts empty, but without one the directory outlives a restart).
rm -f /run/benchctl/apache/httpd.pid
# -DFOREGROUND: the parent process stays in the foreground (PID 1) and gets docker's signals.
exec apache2 -f /run/benchctl/apache.conf -DFOREGROUND
