#!/usr/bin/env bash
# The nightly regression run (`just nightly`): every seed scenario measured with repetitions,
# each compared with its baseline, one Markdown summary for the night.
#
#   bench/nightly.sh [options] [SCENARIO...]
#
# SCENARIO is a file (scenarios/robots.toml) or a name (robots); by default every
# scenarios/*.toml except quick.toml (the CI smoke run, too short to mean anything).
#
# For each scenario:
#   target/release/benchctl run SCENARIO --runs N -o results/nightly/<date>/<name>.json
#   benchctl compare results/baseline/<name>.json <that record> --format markdown
# and the comparison goes into results/nightly/<date>/summary.md. results/nightly/latest points
# at the night's folder. A scenario without a baseline is noted in the summary, not a failure.
# One scenario failing does not stop the others: every scenario runs and the summary is written.
#
# Options:
#   --runs N           repetitions per scenario (default 3; at least 2 for a significance test)
#   --threshold T      passed to benchctl compare (default 5%)
#   --results DIR      where nightly/ and baseline/ live (default results)
#   --promote          after the night, copy its complete records to DIR/baseline/<name>.json
#   --promote-from D   run nothing: copy the complete records of the night folder D to baseline/
#   -h, --help         this text
#
# Exit status: 0 no regression; 1 a regression (some compare exited 1); 3 no regression, but a
# run or a comparison failed (a server that would not start, a baseline that is not a results
# file); 2 bad arguments.
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
threshold=5%
results=results
promote=0
promote_from=""
scenarios=()
while [[ $# -gt 0 ]]; do
    case "$1" in
    --runs)
        [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || bad_usage "--runs needs a whole number >= 1"
        runs=$2
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
        n=$((n + 1))
    done
    say "$n baseline(s) promoted; commit them with a message saying why"
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
    say "== $name: $runs run(s)"
    {
        printf '\n## %s\n\n' "$name"
        printf 'Scenario `%s`, record `%s`.\n\n' "$scenario" "$current"
    } >>"$details"

    # Progress and tables go to the log as they come; the last lines are kept for the summary.
    set +e
    "$benchctl" run "$scenario" --runs "$runs" -o "$current" 2>&1 | tee "$details.err" >&2
    rc=${PIPESTATUS[0]}
    set -e
    if [[ $rc -ne 0 ]]; then
        failures=$((failures + 1))
        say "$name: benchctl run failed (exit $rc)"
        rows+=("| $name | **run failed** (exit $rc) |")
        {
            printf '**benchctl run failed** (exit %s). Its last lines:\n\n```\n' "$rc"
            tail -n 20 "$details.err"
            printf '```\n'
        } >>"$details"
        continue
    fi

    if [[ ! -f $baseline ]]; then
        say "$name: no baseline at $baseline, nothing to compare"
        rows+=("| $name | no baseline |")
        printf 'No baseline at `%s`: nothing to compare. Promote this record to make one (see %s/baseline/README.md).\n' \
            "$baseline" "$results" >>"$details"
        continue
    fi

    rc=0
    "$benchctl" compare "$baseline" "$current" --threshold "$threshold" --format markdown \
        >"$details.cmp" 2>"$details.err" || rc=$?
    case $rc in
    0)
        # compare exits 0 when a (server, document) of the baseline was not measured at all (a
        # server that no longer builds or starts): no metric got worse, but the night failed.
        if grep -q '^- \*\*Missing:\*\*' "$details.cmp"; then
            failures=$((failures + 1))
            say "$name: measurements in the baseline are missing from this run"
            rows+=("| $name | **missing measurements** (see below) |")
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
        say "$name: benchctl compare failed (exit $rc)"
        rows+=("| $name | **compare failed** (exit $rc) |")
        printf '**benchctl compare failed** (exit %s): `%s`\n' "$rc" "$(tr '\n' ' ' <"$details.err")" >>"$details"
        ;;
    esac
    # The comparison's own heading goes one level down, under the scenario's.
    sed 's/^## /### /' "$details.cmp" >>"$details"
done

{
    printf '# benchctl nightly %s\n\n' "$(basename "$night")"
    printf 'Commit `%s`, host %s (%s CPUs), %s run(s) per scenario, threshold %s.\n\n' \
        "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo '+changes')" \
        "$(uname -srm)" "$(nproc)" "$runs" "$threshold"
    printf '| scenario | result |\n|---|---|\n'
    printf '%s\n' "${rows[@]}"
    printf '\n%s regression(s), %s failure(s).\n' "$regressions" "$failures"
    cat "$details"
} >"$summary"
say "summary: $summary"
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
