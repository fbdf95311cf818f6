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

# client CPU per GB received on a 100 MB file: benchctl load vs wrk, ab and oha (writes bench/results/)
bench-large *ARGS:
    ./x bench-deps
    cargo build --release -p benchctl
    python3 bench/large_file.py "$@"

# measure the seed posts again into results/reproductions/ (long; on a quiet machine)
reproduce *ARGS:
    bench/reproduce.sh "$@"

# render docs/reproductions.md from results/reproductions/ (the published figures and the records)
reproductions:
    cargo run --quiet --release -p benchctl -- reproductions results/reproductions -o docs/reproductions.md

# build every server image under docker/
images *ARGS:
    ./x images build "$@"

# every seed scenario A/B against its baseline's images, in one sitting (exit 1 on a regression; --help)
nightly *ARGS:
    bench/nightly.sh "$@"

# A/A and A/B checks of the regression run on quick.toml (long: --aa 20 --ab 10 by default)
ab-check *ARGS:
    cargo build --release -p benchctl
    python3 bench/ab_check.py "$@"

# format the code
fmt:
    cargo fmt --all

# the two static checks CI fails on
lint:
    cargo fmt --all --check
    cargo clippy --workspace --all-targets -- -D warnings

# the load generator's peak memory with 10,000 keep-alive connections, on each engine
bench-memory *ARGS:
    ./x bench-deps
    cargo build --release -p benchctl
    python3 bench/memory.py "$@"

# user-space instructions per request under callgrind: benchctl against wrk and ab, without noise
bench-instructions *ARGS:
    ./x bench-deps
    cargo build --release -p benchctl
    python3 bench/instructions.py "$@"
