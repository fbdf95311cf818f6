# Everyday recipes. `just` alone lists them. Install just with: cargo install just --locked
#
# Every recipe goes through ./x (or the same cargo commands ./x uses), so a fresh machine gets its
# Debian packages and Docker engine the same way whether you start from here or from the README.

set shell := ["bash", "-euo", "pipefail", "-c"]
set positional-arguments

# list the recipes
default:
    @just --list --unsorted

# fmt check, clippy -D warnings and every test (what CI runs)
test:
    ./x test

# run one scenario, e.g. `just run scenarios/small-static.toml --runs 3`
run SCENARIO *ARGS:
    ./x run "$@"

# the peer benchmark: benchctl load vs wrk, ab and oha on native nginx (writes bench/results/)
bench *ARGS:
    ./x bench-deps
    cargo build --release -p benchctl
    python3 bench/peers.py "$@"

# build every server image under docker/
images *ARGS:
    ./x images build "$@"

# every scenario, 3 runs each, compared with its baseline in results/baseline/ (exit 1 on a regression)
nightly RUNS="3":
    #!/usr/bin/env bash
    set -euo pipefail
    # Date and time: a run never overwrites a results record, so a second run the same day
    # needs a name of its own.
    stamp="$(date -u +%Y-%m-%dT%H%MZ)"
    status=0
    shopt -s nullglob
    scenarios=(scenarios/*.toml)
    if [[ ${#scenarios[@]} -eq 0 ]]; then
        echo "nightly: no scenarios/*.toml" >&2
        exit 1
    fi
    for scenario in "${scenarios[@]}"; do
        name="$(basename "$scenario" .toml)"
        current="results/nightly-$stamp-$name.json"
        echo "== $name" >&2
        # One scenario failing must not hide the others' results: note it and go on.
        if ! ./x run "$scenario" --runs "{{RUNS}}" --out "$current"; then
            echo "nightly: $name: run failed" >&2
            status=1
            continue
        fi
        baseline="results/baseline/$name.json"
        if [[ ! -f $baseline ]]; then
            echo "nightly: $name: no baseline at $baseline, nothing to compare" >&2
            continue
        fi
        X_SKIP_SETUP=1 ./x compare "$baseline" "$current" --format markdown || status=1
    done
    exit "$status"

# format the code
fmt:
    cargo fmt --all

# the two static checks CI fails on
lint:
    cargo fmt --all --check
    cargo clippy --workspace --all-targets -- -D warnings
