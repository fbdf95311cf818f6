#!/usr/bin/env bash
# Measures the seed posts again for docs/reproductions.md (`just reproduce`, then
# `just reproductions` renders the page from what this wrote).
#
#   bench/reproduce.sh [--only published|headroom|overload] [SCENARIO...]   default: every seed scenario
#
# For each scenario, two records under results/reproductions/:
#   <name>.json           the post's own parameters, as the scenario says
#   <name>.headroom.json  the same with --headroom auto and --capacity (p99 = 10 ms; 1 s for the
#                         100 MB file, whose single transfer takes longer than 10 ms)
#   <name>.overload.json  one round, then each server past its capacity (--overload, capacity
#                         at p99 = 10 ms): hello-world and small-static only
# --only measures one of the two. An existing record is replaced only once its new run has finished: a failed run leaves the
# previous one in place. Run it on a quiet machine: anything else running is measured too.
#
# Environment: X_SKIP_SETUP=1 skips ./x's machine checks (Debian packages, Docker engine).
set -euo pipefail

ROOT="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
cd "$ROOT"
say() { printf '[reproduce] %s\n' "$*" >&2; }

only=""
if [[ ${1:-} == --only ]]; then
    [[ ${2:-} == published || ${2:-} == headroom || ${2:-} == overload ]] || { say "--only takes published, headroom or overload"; exit 2; }
    only=$2
    shift 2
fi
scenarios=("$@")
[[ ${#scenarios[@]} -gt 0 ]] || scenarios=(hello-world gatling-vs-nginx robots small-static large-file)

# One build, then every run with that binary: nothing compiles while something is measured.
./x --version >/dev/null
bin="$ROOT/target/release/benchctl"
# Server sources kept on this machine (Cherokee's), as ./x hands them to benchctl.
BENCHCTL_SOURCES="${BENCHCTL_SOURCES:-$(X_SKIP_SETUP=1 ./x sources)}"
export BENCHCTL_SOURCES
out=results/reproductions
mkdir -p "$out"
work="$(mktemp -d "$out/.run.XXXXXX")"
trap 'rm -rf "$work"' EXIT

status=0
# measure NAME FILE RECORD [ARGS...]: one run into the work folder, then into place.
measure() {
    local name=$1 file=$2 record=$3
    shift 3
    say "$name: benchctl run $file $*"
    if "$bin" run "$file" "$@" -o "$work/$record" >"$work/$record.txt"; then
        mv "$work/$record" "$out/$record"
    else
        say "$name: the run failed (see above); $out/$record is left as it was"
        status=1
    fi
}
for s in "${scenarios[@]}"; do
    name="$(basename "$s" .toml)"
    file="scenarios/$name.toml"
    [[ -f $file ]] || { say "no scenario $file"; status=2; continue; }
    target="p99=10ms"
    [[ $name == large-file ]] && target="p99=1s"
    [[ -z $only || $only == published ]] && measure "$name" "$file" "$name.json"
    [[ -z $only || $only == headroom ]] && measure "$name" "$file" "$name.headroom.json" \
        --headroom auto --capacity "$target"
    if [[ -z $only || $only == overload ]] && [[ $name == hello-world || $name == small-static ]]; then
        measure "$name" "$file" "$name.overload.json" --runs 1 --overload --capacity "$target"
    fi
done
exit "$status"
