#!/bin/sh
# Smoke test of one server image against the contract in docker/README.md, by hand:
#
#   docker/smoke.sh SERVER PORT [BACKEND_PORT]
#
# Builds benchctl/SERVER:dev (unless SMOKE_NO_BUILD=1), starts it the way benchctl does (host
# networking, a throw-away docroot mounted read-only at /srv/www, and the least-privilege settings
# of docker/README.md: the image's non-root user, no capabilities, no-new-privileges, read-only
# root filesystem with tmpfs mounts, the pids limit of its manifest, log limits), measures `docker
# run -d` to the first 200, checks that nothing runs as root, the root filesystem cannot be written
# and the server listens on 127.0.0.1 only (BENCH_ADDR unset), checks every
# document's status, Content-Length, encoding and bytes over HTTP/1.0 and over one HTTP/1.1
# keep-alive connection, then runs ab with and without -k, counting the tasks (processes and
# threads) at idle and after the load. For varnish, BACKEND_PORT gets a benchctl/nginx:dev
# container as its backend first. Every container is removed on exit.
# Only 127.0.0.1 is ever contacted.
#
# Environment:
#   SMOKE_NO_BUILD=1     use the images as they are
#   SMOKE_REPO, SMOKE_TAG  image names REPO/SERVER:TAG (default benchctl/SERVER:dev); containers
#                        are named REPO-dev-SERVER (with / as -)
#   SMOKE_LABEL          label of the containers (default benchctl.dev=images)
#   SMOKE_BIG=1          also a 100 MB document, fetched twice (through varnish: miss, then hit)
#   SMOKE_AB_N, SMOKE_AB_C  ab's -n and -c (default 2000 and 50)
set -eu

[ $# -ge 2 ] || { echo "usage: $0 SERVER PORT [BACKEND_PORT]" >&2; exit 2; }
server=$1 port=$2 backend_port=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
repo=${SMOKE_REPO:-benchctl} tag=${SMOKE_TAG:-dev}
label=${SMOKE_LABEL:-benchctl.dev=images}
prefix=$(echo "$repo" | tr / -)-dev
ab_n=${SMOKE_AB_N:-2000} ab_c=${SMOKE_AB_C:-50}

docroot=$(mktemp -d /tmp/benchctl-smoke.XXXXXX)
containers=""
cleanup() {
    for c in $containers; do docker rm -f "$c" >/dev/null 2>&1 || true; done
    rm -rf "$docroot"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail=0
bad() { echo "FAIL: $*"; fail=1; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# Never through a proxy, whatever the environment says: only 127.0.0.1 is contacted.
hcurl() { curl --noproxy '*' "$@"; }

# Documents: the 13-byte hello world (also served for "/"), a 23,619-byte binary, a robots.txt,
# an extension-less file, and a directory without an index (must not be listed).
printf 'Hello, World!' > "$docroot/index.html"
head -c 23619 /dev/urandom > "$docroot/image.png"
printf 'User-agent: *\nDisallow:\n' > "$docroot/robots.txt"
printf 'Hello, World!' > "$docroot/hello"
mkdir "$docroot/sub" && printf 'x' > "$docroot/sub/file.txt"
[ "${SMOKE_BIG:-0}" = 1 ] && head -c 104857600 /dev/urandom > "$docroot/big.bin"
chmod -R a+rX "$docroot"

build() {
    [ "${SMOKE_NO_BUILD:-0}" = 1 ] && return 0
    t0=$(now_ms)
    log=/tmp/$(echo "$repo" | tr / -)-build-$1.log
    if ! docker build --force-rm -t "$repo/$1:$tag" "$here/$1" > "$log" 2>&1; then
        echo "build of $1 failed; last lines of $log:"; tail -n 15 "$log"
        exit 1
    fi
    echo "build $1: $(( $(now_ms) - t0 )) ms"
}

# The least-privilege settings benchctl creates every container with (docker/README.md): the
# image's user (its USER, which benchctl passes as --user), no capabilities, no new privileges,
# a read-only root filesystem with tmpfs mounts at /tmp and /run, limits on pids (the manifest's
# pids_limit) and logs; and a server's own extra tmpfs mounts.
hardening="--cap-drop ALL --security-opt no-new-privileges --read-only
    --tmpfs /tmp:rw,nosuid,nodev,noexec,size=64m --tmpfs /run:rw,nosuid,nodev,noexec,size=16m
    --log-opt max-size=10m --log-opt max-file=2"
# pids_limit SERVER: the manifest's pids_limit, 4096 (benchctl's default) when it sets none.
pids_limit() {
    awk -F= '$1 ~ /^pids_limit[ \t]*$/ { gsub(/[ \t]/, "", $2); sub(/#.*/, "", $2); print $2; exit }' \
        "$here/$1/server.toml" 2>/dev/null | grep -x '[0-9][0-9]*' || echo 4096
}
extra_tmpfs() {
    case $1 in
        # The working directory: the shared memory log (81 MB) and the compiled VCL it loads.
        varnish) echo "--tmpfs /var/lib/varnish:rw,nosuid,nodev,exec,size=128m" ;;
    esac
}

# start NAME PORT [extra docker args]: runs the container, prints ms until the first 200 for /.
start() {
    srv=$1 name=$prefix-$1 p=$2; shift 2
    docker rm -f "$name" >/dev/null 2>&1 || true
    containers="$containers $name"
    user=$(docker image inspect -f '{{.Config.User}}' "$repo/$srv:$tag")
    [ -n "$user" ] || bad "$repo/$srv:$tag declares no USER"
    t0=$(now_ms)
    # $hardening and extra_tmpfs are lists of words without spaces or wildcards: split on purpose.
    # shellcheck disable=SC2046,SC2086
    docker run -d --name "$name" --label "$label" --network host \
        --user "${user:-65534:65534}" $hardening --pids-limit "$(pids_limit "$srv")" $(extra_tmpfs "$srv") \
        -v "$docroot:/srv/www:ro" -e "BENCH_PORT=$p" "$@" "$repo/$srv:$tag" >/dev/null
    i=0
    while [ "$(hcurl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$p/" || true)" != 200 ]; do
        i=$((i + 1))
        if [ $i -gt 1000 ] || [ "$(docker inspect -f '{{.State.Running}}' "$name")" != true ]; then
            echo "FAIL: $name never answered 200; its log:"; docker logs --tail 20 "$name" 2>&1; exit 1
        fi
        sleep 0.01
    done
    echo "start $name: $(( $(now_ms) - t0 )) ms to first 200; $(docker stats --no-stream --format '{{.PIDs}}' "$name") tasks at idle (limit $(pids_limit "$srv"))"
    privileges "$name"
    listening "$name" "$p"
}

# listening NAME PORT: with BENCH_ADDR unset the server listens on 127.0.0.1 only (host networking:
# the host's sockets), never on 0.0.0.0, :: or another address. gatling binds an IPv6 socket to
# the IPv4-mapped form of the address, [::ffff:127.0.0.1], which is 127.0.0.1 all the same.
listening() {
    addrs=$(ss -ltnH "sport = :$2" | awk '{ print $4 }' | sort -u | tr '\n' ' ')
    case $addrs in
        "127.0.0.1:$2 "|"[::ffff:127.0.0.1]:$2 ") echo "listening $1: ${addrs% } only" ;;
        *) bad "$1 listens on: ${addrs:-nothing}, not 127.0.0.1:$2 alone" ;;
    esac
}

# privileges NAME: nothing in the container runs as root or holds a capability, and the root
# filesystem cannot be written.
privileges() {
    uid=$(docker exec "$1" id -u)
    [ "$uid" != 0 ] || bad "$1: docker exec runs as root"
    # docker top runs ps on the host: real uids of every process of the container.
    root_procs=$(docker top "$1" -eo uid,pid,comm | awk 'NR > 1 && $1 == 0')
    [ -z "$root_procs" ] || bad "$1: processes running as root: $root_procs"
    caps=$(docker exec "$1" awk '/^Cap(Prm|Eff|Bnd|Amb):/ && $2 != "0000000000000000"' /proc/1/status)
    [ -z "$caps" ] || bad "$1: PID 1 holds capabilities: $caps"
    if docker exec "$1" sh -c ': > /etc/benchctl-smoke' 2>/dev/null; then bad "$1: the root filesystem is writable"; fi
    echo "privileges $1: uid $uid ($(docker exec "$1" id -un)), $(docker top "$1" -eo pid | awk 'NR > 1' | wc -l) processes, none as root, no capabilities, root filesystem read-only"
}

if [ "$server" = varnish ]; then
    [ -n "$backend_port" ] || { echo "varnish needs BACKEND_PORT" >&2; exit 2; }
    build nginx
    start nginx "$backend_port"
    build varnish
    start varnish "$port" -e "BENCH_BACKEND=127.0.0.1:$backend_port"
else
    build "$server"
    start "$server" "$port"
fi

base=http://127.0.0.1:$port
h=$docroot.h b=$docroot.b

# check PATH FILE [curl options]: one request, status 200, exact length and bytes, no encoding.
check() {
    path=$1 file=$2; shift 2
    code=$(hcurl -s -D "$h" -o "$b" -w '%{http_code}' --max-time "${max_time:-5}" "$@" "$base$path" || echo 000)
    [ "$code" = 200 ] || { bad "$path ($*): status $code"; return; }
    len=$(tr -d '\r' < "$h" | awk 'tolower($1)=="content-length:" {print $2}')
    [ "$len" = "$(wc -c < "$file")" ] || bad "$path ($*): Content-Length '$len', file has $(wc -c < "$file")"
    if tr -d '\r' < "$h" | grep -qi '^content-encoding:'; then bad "$path ($*): has a Content-Encoding"; fi
    cmp -s "$b" "$file" || bad "$path ($*): body differs from the file"
}

for v in --http1.0 --http1.1; do
    check /index.html "$docroot/index.html" $v -H 'Accept-Encoding: gzip, deflate'
    check / "$docroot/index.html" $v
    check /image.png "$docroot/image.png" $v -H 'Accept-Encoding: gzip, deflate'
    check /robots.txt "$docroot/robots.txt" $v
    check /hello "$docroot/hello" $v
done
status_line=$(hcurl -s -D - -o /dev/null --http1.0 "$base/index.html" | head -n 1 | tr -d '\r')
server_hdr=$(tr -d '\r' < "$h" | awk 'tolower($1)=="server:" {$1=""; print substr($0,2)}')
echo "status line: $status_line; Server: $server_hdr"

# Two requests on one HTTP/1.1 connection: curl must reuse it (one connect in all).
conns=$(hcurl -s -o /dev/null -o /dev/null -w '%{num_connects}\n' "$base/index.html" "$base/image.png" | paste -sd+ | bc)
[ "$conns" = 1 ] || bad "HTTP/1.1 keep-alive: $conns connections for 2 requests"

head_code=$(hcurl -s -I -o /dev/null -w '%{http_code}' "$base/index.html" || true)
[ "$head_code" = 200 ] || bad "HEAD /index.html: status $head_code"
dir_code=$(hcurl -s -o /dev/null -w '%{http_code}' "$base/sub/" || true)
[ "$dir_code" != 200 ] || bad "/sub/ (no index) answered 200: directory listing?"
miss_code=$(hcurl -s -o /dev/null -w '%{http_code}' "$base/missing.html" || true)
[ "$miss_code" = 404 ] || bad "/missing.html: status $miss_code, not 404"

if [ "${SMOKE_BIG:-0}" = 1 ]; then
    max_time=120
    for round in 1 2; do
        t0=$(now_ms)
        check /big.bin "$docroot/big.bin"
        xv=$(tr -d '\r' < "$h" | awk 'tolower($1)=="x-varnish:" {$1=""; print substr($0,2)}')
        echo "100 MB /big.bin, round $round: $(( $(now_ms) - t0 )) ms${xv:+, X-Varnish: $xv}"
    done
    max_time=5
fi

for k in "" -k; do
    out=$(ab $k -n "$ab_n" -c "$ab_c" "$base/index.html" 2>&1) || { bad "ab $k exited non-zero: $(echo "$out" | tail -n 2)"; continue; }
    complete=$(echo "$out" | awk '/^Complete requests:/ {print $3}')
    failed=$(echo "$out" | awk '/^Failed requests:/ {print $3}')
    non2xx=$(echo "$out" | awk '/^Non-2xx responses:/ {print $3}')
    rps=$(echo "$out" | awk '/^Requests per second:/ {print $4}')
    kar=$(echo "$out" | awk '/^Keep-Alive requests:/ {print $3}')
    echo "ab $k -n $ab_n -c $ab_c: complete ${complete:-?}, failed ${failed:-?}, non-2xx ${non2xx:-0}, keep-alive ${kar:--}, ${rps:-?} req/s"
    [ "$complete" = "$ab_n" ] && [ "$failed" = 0 ] && [ -z "$non2xx" ] || bad "ab $k: failures"
done
# Tasks (processes and threads) the pids limit counts, after the load.
echo "pids after ab: $(docker stats --no-stream --format '{{.PIDs}}' "$prefix-$server") (limit $(pids_limit "$server"))"

if [ "$(docker inspect -f '{{.State.Running}}' "$prefix-$server")" != true ]; then bad "container exited"; fi
t0=$(now_ms); docker stop -t 10 "$prefix-$server" >/dev/null
echo "docker stop: $(( $(now_ms) - t0 )) ms, exit code $(docker inspect -f '{{.State.ExitCode}}' "$prefix-$server")"
logs=$(docker logs "$prefix-$server" 2>&1 | tail -n 5)
[ -z "$logs" ] || { echo "last log lines:"; echo "$logs"; }
rm -f "$h" "$b"
[ $fail = 0 ] && echo "OK: $server" || echo "FAILED: $server"
exit $fail
