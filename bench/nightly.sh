#!/usr/bin/env bash
# The nightly regression run (`just nightly`): every seed scenario measured A/B against the
# images of its last good run, in one sitting, one Markdown summary for the night.
#
#   bench/nightly.sh [options] [SCENARIO...]
#
# SCENARIO is a file (scenarios/robots.toml) or a name (robots); by default every
# scenarios/*.toml except quick.toml (the CI smoke run, too short to mean anything).
#
# For each scenario with a baseline (results/baseline/<name>.json, a run known to be good):
#   target/release/benchctl run SCENARIO --against results/baseline/<name>.json \
#       --runs MAX --budget B --threshold T -o results/nightly/<date>/<name>.json
#   benchctl compare results/nightly/<date>/<name>.json --format markdown
# The run measures the baseline's images (kept by tag, see --promote) beside today's, their
# loads sent by the last good night's benchctl (--baseline-generator, when one was kept) and
# today's by today's, round by round in ABBA order, until every gated metric is judged or the budget is spent; the paired
# comparison, with each ratio's interval and minimum detectable effect, goes into
# results/nightly/<date>/summary.md. results/nightly/latest points at the night's folder;
# results/nightly/trend.html and trend.md show every night kept so far (benchctl history).
# A scenario without a baseline is measured with --runs-alone repetitions and noted in the
# summary, not a failure. One scenario failing does not stop the others.
#
# Options:
#   --max-rounds N     most A/B rounds per scenario (default 40; at least 4)
#   --budget D         time the rounds of one scenario may take (default 20m)
#   --runs-alone N     repetitions of a scenario that has no baseline yet (default 3)
#   --threshold T      the change that counts (default 5%)
#   --results DIR      where nightly/ and baseline/ live (default results)
#   --promote          after the night, make its complete records the baselines (and keep
#                      their images under benchctl-baseline/<kind>:<scenario> tags, and the
#                      night's benchctl binary as results/baseline/.generator/benchctl)
#   --promote-from D   run nothing: promote the complete records of the night folder D
#   -h, --help         this text
#
# Exit status: 0 no regression; 1 a regression (a gated metric significantly worse beyond the
# threshold, or a server the baseline had that no longer runs); 3 no regression, but a run or
# a comparison failed (a server that would not start, a baseline image that is gone); 2 bad
# arguments. A metric the budget could not judge is reported as not judged, never a failure.
#
# Environment: X_SKIP_SETUP=1 skips ./x's machine checks (Debian packages, Docker engine).
set -euo pipefail

ROOT="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
cd "$ROOT"

say() { printf '[nightly] %s\n' "$*" >&2; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; }
bad_usage() {
    say "error: $* (see bench/nightly.sh --help)"
    exit 2
}

runs=3
max_rounds=40
budget=20m
threshold=5%
results=results
promote=0
promote_from=""
scenarios=()
while [[ $# -gt 0 ]]; do
    case "$1" in
    --runs-alone)
        [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || bad_usage "--runs-alone needs a whole number >= 1"
        runs=$2
        shift 2
        ;;
    --max-rounds)
        [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ && $2 -ge 4 ]] || bad_usage "--max-rounds needs a whole number >= 4"
        max_rounds=$2
        shift 2
        ;;
    --budget)
        [[ $# -ge 2 && $2 =~ ^[0-9]+(\.[0-9]+)?(s|m|h)$ ]] || bad_usage "--budget needs a duration such as 20m"
        budget=$2
        shift 2
        ;;
    --threshold)
        [[ $# -ge 2 ]] || bad_usage "--threshold needs a value such as 5%"
        threshold=$2
        shift 2
        ;;
    --results)
        [[ $# -ge 2 ]] || bad_usage "--results needs a folder"
        results=${2%/}
        shift 2
        ;;
    --promote)
        promote=1
        shift
        ;;
    --promote-from)
        [[ $# -ge 2 && -d $2 ]] || bad_usage "--promote-from needs a night's folder, e.g. $results/nightly/latest"
        promote_from=${2%/}
        shift 2
        ;;
    -h | --help)
        usage
        exit 0
        ;;
    -*) bad_usage "unknown option $1" ;;
    *)
        if [[ -f $1 ]]; then
            scenarios+=("$1")
        elif [[ -f scenarios/$1.toml ]]; then
            scenarios+=("scenarios/$1.toml")
        else
            bad_usage "no scenario $1 (neither a file nor scenarios/$1.toml)"
        fi
        shift
        ;;
    esac
done

# Copies every complete record of night folder $1 to the baseline folder; a record of a run
# that failed or was interrupted is not a baseline anyone should hold later runs to.
promote_night() {
    local night=$1 rec name n=0
    mkdir -p "$results/baseline"
    for rec in "$night"/*.json; do
        [[ -e $rec ]] || continue
        name="$(basename "$rec" .json)"
        if ! grep -q '"state": "complete"' "$rec"; then
            say "not promoting $name: its run did not complete"
            continue
        fi
        cp "$rec" "$results/baseline/$name.json.tmp"
        mv "$results/baseline/$name.json.tmp" "$results/baseline/$name.json"
        say "promoted $rec -> $results/baseline/$name.json"
        keep_images "$rec" "$name"
        n=$((n + 1))
    done
    if [[ $n -gt 0 ]]; then
        keep_generator
    fi
    say "$n baseline(s) promoted; commit them with a message saying why"
}

# Keeps the benchctl binary of a promoted night: later nights send their baseline side's loads
# with it (--baseline-generator), so a change in the load generator is judged A/B as well. It
# stays out of git (.gitignore), beside the baselines it measured.
keep_generator() {
    local dir="$results/baseline/.generator"
    if [[ -z ${benchctl:-} ]]; then
        say "the kept generator stays as it was: --promote-from cannot tell which binary ran that night"
        return
    fi
    mkdir -p "$dir"
    cp "$benchctl" "$dir/benchctl.tmp"
    mv "$dir/benchctl.tmp" "$dir/benchctl"
    say "kept $("$dir/benchctl" --version) as $dir/benchctl"
}

# Tags the images a promoted record measured as benchctl-baseline/<kind>:<scenario>, so that a
# rebuild of docker/<kind> (which moves the benchctl/<kind>:<hash> tag) or an image prune does
# not take away what later nights measure against. A/B runs find the images by id.
keep_images() {
    local rec=$1 name=$2 id kind
    python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
for s in r.get("servers", []):
    if s.get("image_id") and s.get("status", {}).get("state") == "available":
        print(s["image_id"], s["kind"])
' "$rec" | while read -r id kind; do
        if docker tag "$id" "benchctl-baseline/$kind:$name" 2>/dev/null; then
            say "kept $id as benchctl-baseline/$kind:$name"
        else
            say "could not tag $id ($kind): later A/B runs against $name will say it is missing"
        fi
    done
}

if [[ -n $promote_from ]]; then
    [[ ${#scenarios[@]} -eq 0 && $promote -eq 0 ]] || bad_usage "--promote-from runs nothing: give it no scenarios and no --promote"
    promote_night "$promote_from"
    exit 0
fi

if [[ ${#scenarios[@]} -eq 0 ]]; then
    shopt -s nullglob
    for f in scenarios/*.toml; do
        [[ $(basename "$f") == quick.toml ]] || scenarios+=("$f")
    done
    shopt -u nullglob
    [[ ${#scenarios[@]} -gt 0 ]] || bad_usage "no scenarios/*.toml to run"
fi

say "building benchctl (release)"
cargo build --release -p benchctl >&2
benchctl="$ROOT/target/release/benchctl"

# ./x readies the machine (Debian packages, a running Docker engine) and checks every scenario
# before anything is measured; a scenario it rejects still gets its own failed line below.
if ! ./x validate "${scenarios[@]}" >&2; then
    say "some scenarios did not validate (or the machine is not ready); going on, they will fail"
fi

day="$(date -u +%Y-%m-%d)"
night="$results/nightly/$day"
# A second night on the same day must not overwrite the first (benchctl run refuses anyway).
if compgen -G "$night/*.json" >/dev/null; then
    night="$results/nightly/${day}T$(date -u +%H%M%S)Z"
fi
mkdir -p "$night"
ln -sfn "$(basename "$night")" "$results/nightly/latest"
summary="$night/summary.md"
details="$(mktemp)"
trap 'rm -f "$details" "$details".*' EXIT

regressions=0
failures=0
rows=()
for scenario in "${scenarios[@]}"; do
    name="$(basename "$scenario" .toml)"
    current="$night/$name.json"
    baseline="$results/baseline/$name.json"
    {
        printf '\n## %s\n\n' "$name"
        printf 'Scenario `%s`, record `%s`.\n\n' "$scenario" "$current"
    } >>"$details"

    if [[ ! -f $baseline ]]; then
        say "== $name: no baseline at $baseline; $runs run(s) alone"
        set +e
        "$benchctl" run "$scenario" --runs "$runs" -o "$current" 2>&1 | tee "$details.err" >&2
        rc=${PIPESTATUS[0]}
        set -e
        if [[ $rc -ne 0 ]]; then
            failures=$((failures + 1))
            rows+=("| $name | **run failed** (exit $rc), no baseline |")
            {
                printf '**benchctl run failed** (exit %s). Its last lines:\n\n```\n' "$rc"
                tail -n 20 "$details.err"
                printf '```\n'
            } >>"$details"
        else
            rows+=("| $name | no baseline |")
            printf 'No baseline at `%s`: nothing to compare. Promote this record to make one (see %s/baseline/README.md).\n' \
                "$baseline" "$results" >>"$details"
        fi
        continue
    fi

    say "== $name: A/B against $baseline (at most $max_rounds rounds, $budget)"
    # Progress and tables go to the log as they come; the last lines are kept for the summary.
    set +e
    generator=()
    if [[ -x $results/baseline/.generator/benchctl ]]; then
        generator=(--baseline-generator "$results/baseline/.generator/benchctl")
    fi
    "$benchctl" run "$scenario" --against "$baseline" --runs "$max_rounds" --budget "$budget" \
        --threshold "$threshold" "${generator[@]}" -o "$current" 2>&1 | tee "$details.err" >&2
    rc=${PIPESTATUS[0]}
    set -e
    if [[ ! -f $current ]]; then
        # Refused before anything ran: bad input, or a baseline image that is gone.
        failures=$((failures + 1))
        say "$name: benchctl run failed before measuring (exit $rc)"
        rows+=("| $name | **run failed** (exit $rc) |")
        {
            printf '**benchctl run failed** before measuring (exit %s):\n\n```\n' "$rc"
            tail -n 20 "$details.err"
            printf '```\n'
        } >>"$details"
        continue
    fi

    # The verdict comes from the record, judged again: exit 1 only on a regression.
    crc=0
    "$benchctl" compare "$current" --format markdown >"$details.cmp" 2>"$details.cmp.err" || crc=$?
    case $crc in
    0)
        if [[ $rc -ne 0 ]]; then
            failures=$((failures + 1))
            say "$name: the run did not complete (exit $rc)"
            rows+=("| $name | **run failed** (exit $rc); no regression in what it measured |")
            {
                printf '**benchctl run did not complete** (exit %s). Its last lines:\n\n```\n' "$rc"
                tail -n 20 "$details.err"
                printf '```\n\n'
            } >>"$details"
        elif grep -q '^No regression shown' "$details.cmp"; then
            rows+=("| $name | no regression shown; some gated metrics not judged (see below) |")
        else
            rows+=("| $name | no regression |")
        fi
        ;;
    1)
        regressions=$((regressions + 1))
        say "$name: REGRESSION against $baseline"
        rows+=("| $name | **REGRESSION** |")
        ;;
    *)
        failures=$((failures + 1))
        say "$name: benchctl compare failed (exit $crc)"
        rows+=("| $name | **compare failed** (exit $crc) |")
        printf '**benchctl compare failed** (exit %s): `%s`\n' "$crc" "$(tr '\n' ' ' <"$details.cmp.err")" >>"$details"
        ;;
    esac
    # The comparison's own heading goes one level down, under the scenario's.
    sed 's/^## /### /' "$details.cmp" >>"$details"
done

{
    printf '# benchctl nightly %s\n\n' "$(basename "$night")"
    printf 'Commit `%s`, host %s (%s CPUs), threshold %s. Each scenario with a baseline ran A/B in one sitting against the images of its baseline record (at most %s rounds, %s), judged by paired per-round ratios; each table gives the ratio candidate/baseline with its interval and minimum detectable effect (MDE).\n\n' \
        "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo '+changes')" \
        "$(uname -srm)" "$(nproc)" "$threshold" "$max_rounds" "$budget"
    printf '| scenario | result |\n|---|---|\n'
    printf '%s\n' "${rows[@]}"
    printf '\n%s regression(s), %s failure(s).\n' "$regressions" "$failures"
    cat "$details"
} >"$summary"
say "summary: $summary"

# The trend over every night kept so far: each server and document's figures night by night,
# the A/B verdicts, each night's commit and the change points (benchctl history).
for format in markdown html; do
    ext=${format/markdown/md}
    if ! "$benchctl" history "$results/nightly" --threshold "$threshold" -f "$format" \
        -o "$results/nightly/trend.$ext" 2>>"$night/history.log"; then
        say "benchctl history failed (see $night/history.log); the night's records are kept"
    fi
done
echo "$summary"

if [[ $promote -eq 1 ]]; then
    promote_night "$night"
fi

if [[ $regressions -gt 0 ]]; then
    exit 1
elif [[ $failures -gt 0 ]]; then
    exit 3
fi
exit 0
