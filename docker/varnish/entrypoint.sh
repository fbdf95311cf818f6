#!/bin/sh
# Writes the VCL from the environment and runs varnishd in the foreground as PID 1.
# Runs as the image's non-root user (varnish, 100:101) with no capabilities and a read-only root
# filesystem: everything it writes goes to tmpfs mounts (/run, /tmp, and its working directory).
#   BENCH_PORT        (required) listen on BENCH_ADDR:BENCH_PORT
#   BENCH_ADDR        (default 127.0.0.1) the address to listen on: IPv4 or IPv6
#   BENCH_BACKEND     (required) HOST:PORT or [IPV6]:PORT of the server Varnish caches
#   BENCH_CACHE_SIZE  (default 256m) malloc storage; must exceed the largest document
#   BENCH_TLS         (default 0) 1: hitch serves HTTPS on BENCH_ADDR:BENCH_PORT with the run's
#                     certificate (/etc/benchctl/tls) and hands each connection to varnishd over
#                     a unix socket with the PROXY protocol; varnishd itself listens nowhere else
set -eu

die() { echo "benchctl/varnish: $*" >&2; exit 64; }

[ -n "${BENCH_PORT:-}" ] || die "BENCH_PORT is not set; run with -e BENCH_PORT=<port> (Varnish listens on \$BENCH_ADDR:<port>, 127.0.0.1 by default)"
case $BENCH_PORT in *[!0-9]*) die "BENCH_PORT must be a port number, got '$BENCH_PORT'" ;; esac
{ [ "$BENCH_PORT" -ge 1 ] && [ "$BENCH_PORT" -le 65535 ]; } || die "BENCH_PORT out of range: $BENCH_PORT"
# Without capabilities a port below net.ipv4.ip_unprivileged_port_start (1024 unless changed; with
# --network host it is the host's setting) cannot be bound.
unprivileged=$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start 2>/dev/null || echo 1024)
if [ "$(id -u)" != 0 ] && [ "$BENCH_PORT" -lt "$unprivileged" ]; then
    die "BENCH_PORT $BENCH_PORT is a privileged port (below $unprivileged) and varnishd runs as uid $(id -u) without capabilities; use a port >= $unprivileged"
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
elif ipv6_ok "$addr"; then listen="[$addr]:$BENCH_PORT"   # -a takes an IPv6 address in brackets
else die "BENCH_ADDR must be an IPv4 or IPv6 address (e.g. 127.0.0.1 or ::1), got '$BENCH_ADDR'"
fi

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

# The root filesystem is read-only. The VCL goes to /run/benchctl (a tmpfs). varnishd's working
# directory (-n) holds its shared memory log (vsl_space, 80 MB by default) and counters, which it
# maps, and the VCL compiled to a shared object, which it loads: it goes to its own tmpfs mounted
# at /var/lib/varnish without noexec (dlopen of a file on a noexec mount fails). A fixed path, not
# the default /var/lib/varnish/<hostname>, which with --network host is the host's name.
workdir=/var/lib/varnish/bench
cant_write() {
    echo "benchctl/varnish: cannot write to $1 as uid $(id -u); run with $2 (the root filesystem is read-only)" >&2
    exit 73
}
mkdir -p /run/benchctl "$workdir" 2>/dev/null || true
[ -d /run/benchctl ] && [ -w /run/benchctl ] || cant_write /run/benchctl "--tmpfs /run"
[ -d "$workdir" ] && [ -w "$workdir" ] || cant_write "$workdir" "--tmpfs /var/lib/varnish:rw,nosuid,nodev,exec,size=128m"
if awk '$2 == "/var/lib/varnish" { print $4 }' /proc/self/mounts | tr , '\n' | grep -qx noexec; then
    echo "benchctl/varnish: /var/lib/varnish is mounted noexec, so the compiled VCL cannot be loaded; mount its tmpfs with exec (--tmpfs /var/lib/varnish:rw,nosuid,nodev,exec,size=128m)" >&2
    exit 73
fi
# The shared memory log and counters take 81 MB of it at start; with less room the child dies at
# launch with no useful message ("Child failed on launch").
avail_kb=$(df -Pk "$workdir" | awk 'NR == 2 { print $4 }')
if [ "${avail_kb:-0}" -lt 98304 ]; then
    echo "benchctl/varnish: only ${avail_kb:-0} KiB free in $workdir; varnishd's shared memory log needs about 81 MB there: size its tmpfs 128m (--tmpfs /var/lib/varnish:rw,nosuid,nodev,exec,size=128m)" >&2
    exit 73
fi

sed -e "s/@BACKEND_HOST@/$backend_host/g" -e "s/@BACKEND_PORT@/$backend_port/g" \
    /etc/varnish/bench.vcl.template > /run/benchctl/varnish.vcl

# -F: stay in the foreground (the manager process is PID 1 and stops the child on SIGTERM).
# -j none: no jail. The unix jail, the default when varnishd starts as root, switches the manager
#   to the `varnish` user and the child to `vcache`, which needs root. The container starts
#   varnishd as `varnish` already, with no capabilities, so manager and child both run as it.
#   (Started as any user but root, varnishd 7.1 picks none by itself; said here explicitly.)
# -n DIR: the working directory on its exec tmpfs (above); varnishlog/varnishstat need the same
#   -n (docker exec CONTAINER varnishstat -n /var/lib/varnish/bench).
# -T none: no management console listening on a port; nothing needs to talk to it.
# -s malloc,SIZE: objects in memory, sized above the largest document (a 100 MB file needs
#   256m) or the response to it is cut short.
# thread_pool_min=200 (x 2 pools): 400 worker threads exist before the first request, more than
#   ab -c 300 needs, so none are created while a measurement runs.
# http_gzip_support=off: Varnish neither asks the backend for gzip nor compresses; the exact
#   bytes of each file are stored and sent.
# BENCH_HTTP2=1: feature=+http2: HTTP/2 beside HTTP/1.x on the same port, in cleartext (h2c) by
#   prior knowledge or by Upgrade, and over TLS by ALPN, which hitch then offers (h2, http/1.1)
#   and passes on in its PROXY v2 header. Varnish still fetches from its backend in HTTP/1.1.
case ${BENCH_HTTP2:-} in
    ''|0) set -- ; alpn="" ;;
    1) set -- -p feature=+http2 ; alpn="h2,http/1.1" ;;
    *) die "BENCH_HTTP2 must be 1 or 0, got '$BENCH_HTTP2'" ;;
esac
case ${BENCH_TLS:-} in
    ''|0)
        exec varnishd -F \
            -j none \
            -n "$workdir" \
            -a "$listen" \
            -T none \
            -f /run/benchctl/varnish.vcl \
            -s "malloc,$cache_size" \
            -p thread_pool_min=200 \
            -p http_gzip_support=off \
            "$@"
        ;;
    1) ;;
    *) die "BENCH_TLS must be 1 or 0, got '$BENCH_TLS'" ;;
esac

# BENCH_TLS=1: hitch terminates TLS on the benchmark's address and port and passes each
# connection, with the client's address in a PROXY v2 header, to varnishd on a unix socket in
# /run/benchctl (no TCP hop, no second port). hitch wants the certificate and its key in one
# file, written to the tmpfs readable by this user alone.
for f in cert.pem key.pem; do
    [ -r "/etc/benchctl/tls/$f" ] || { echo "benchctl/varnish: BENCH_TLS=1 but /etc/benchctl/tls/$f is missing or unreadable; mount the run's certificate folder there (read-only)" >&2; exit 66; }
done
(umask 077 && cat /etc/benchctl/tls/cert.pem /etc/benchctl/tls/key.pem > /run/benchctl/hitch.pem)
case $listen in \[*) frontend=$listen ;; *) frontend="[${listen%:*}]:$BENCH_PORT" ;; esac
sock=/run/benchctl/varnish.sock
# varnishd without -F starts its child and returns once it runs (non-zero if the VCL does not
# compile or the child fails to launch); hitch then runs in the foreground as PID 1.
varnishd \
    -j none \
    -n "$workdir" \
    -a "$sock,PROXY" \
    -T none \
    -P /run/benchctl/varnishd.pid \
    -f /run/benchctl/varnish.vcl \
    -s "malloc,$cache_size" \
    -p thread_pool_min=200 \
    -p http_gzip_support=off \
    "$@"
# --workers: one event loop per CPU the container may use. --ocsp-dir: the default is under the
# read-only /var/lib. TLS 1.2 and 1.3 as every other server here. With BENCH_HTTP2=1 ALPN offers
# h2 and http/1.1.
exec hitch \
    --daemon=off \
    --frontend="$frontend" \
    --backend="$sock" \
    --write-proxy-v2=on \
    --workers="$(nproc)" \
    --tls-protos="TLSv1.2 TLSv1.3" \
    ${alpn:+"--alpn-protos=$alpn"} \
    --ocsp-dir=/tmp \
    /run/benchctl/hitch.pem
