#!/usr/bin/env bash
# What connection tracking costs a load on loopback, the bias `benchctl system check` reports and
# `benchctl system tune` removes: the load generator's CPU per request and its requests/s
# against native nginx, with loopback tracked (as Docker's netfilter leaves it) and exempt
# (raw-table NOTRACK rules, as `system tune` adds them), in interleaved rounds.
#
#   sudo bench/conntrack.sh [ROUNDS]      (default 4; root: it adds and removes the rules)
#
# The client runs on CPU 0 and nginx (one worker) on CPU 1, on 127.0.0.1:18080, serving a
# 468-byte page: keep-alive with 50 connections (200,000 requests), and a new connection per
# request with 20 at once (30,000). Prints one line per round and side, then the medians and
# their ratio (exempt / tracked). The rules are removed on exit, however it exits.
set -euo pipefail

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
ROUNDS=${1:-4}
BENCHCTL=${BENCHCTL:-target/release/benchctl}
[[ $EUID -eq 0 ]] || { echo "bench/conntrack.sh: run it as root (it adds raw-table rules)" >&2; exit 2; }
[[ -x $BENCHCTL ]] || { echo "bench/conntrack.sh: build $BENCHCTL first (cargo build --release -p benchctl)" >&2; exit 2; }
[[ -e /proc/sys/net/netfilter/nf_conntrack_max ]] || { echo "bench/conntrack.sh: connection tracking is not loaded here: nothing to measure" >&2; exit 2; }
command -v nginx >/dev/null || { echo "bench/conntrack.sh: needs nginx (./x installs it)" >&2; exit 2; }

work=$(mktemp -d)
exempt=0
rules() { # -I or -D
    iptables -t raw "$1" PREROUTING -i lo -j NOTRACK
    iptables -t raw "$1" OUTPUT -o lo -j NOTRACK
}
cleanup() {
    [[ $exempt == 1 ]] && rules -D
    [[ -f $work/nginx.pid ]] && kill "$(cat "$work/nginx.pid")" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/html" "$work/logs"
head -c 468 /dev/zero | tr '\0' 'x' >"$work/html/page.html"
cat >"$work/nginx.conf" <<CONF
worker_processes 1;
worker_cpu_affinity 10;
pid $work/nginx.pid;
error_log $work/logs/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:18080 backlog=4096; root $work/html; }
}
CONF
nginx -c "$work/nginx.conf" -p "$work/"
sleep 0.5

# µs of client CPU per request and requests/s of one load.
one() {
    "$BENCHCTL" load --cpus 0 --threads 1 --json "$@" http://127.0.0.1:18080/page.html 2>/dev/null |
        python3 -c 'import json,sys; r=json.load(sys.stdin); print("%.2f %.0f" % (r["client_cpu_s"]/r["complete"]*1e6, r["requests_per_second"]))'
}

: >"$work/rows"
for round in $(seq "$ROUNDS"); do
    for side in tracked exempt; do
        if [[ $side == exempt ]]; then rules -I; exempt=1; fi
        read -r ka_cpu ka_rps < <(one -k -c 50 -n 200000)
        read -r cl_cpu cl_rps < <(one -c 20 -n 30000)
        if [[ $side == exempt ]]; then rules -D; exempt=0; fi
        echo "$round $side $ka_cpu $ka_rps $cl_cpu $cl_rps" | tee -a "$work/rows"
    done
done

python3 - "$work/rows" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
def med(side, col):
    return statistics.median(float(r[col]) for r in rows if r[1] == side)
print("\n| mode | figure | tracked | exempt | exempt / tracked |\n|---|---|---|---|---|")
for mode, cpu, rps in (("keep-alive, 50 connections", 2, 3), ("new connection per request, 20 at once", 4, 5)):
    for name, col in (("client CPU per request (µs)", cpu), ("requests/s", rps)):
        t, e = med("tracked", col), med("exempt", col)
        fmt = "{:.2f}" if col == cpu else "{:.0f}"
        print(f"| {mode} | {name} | {fmt.format(t)} | {fmt.format(e)} | {e / t:.2f} |")
PY
