#!/usr/bin/env python3
"""User-space instructions per request: what the load generator's own code costs, without noise.

CPU time on a shared VM varies by tens of percent from run to run; the count of instructions a
program executes does not. This runs `benchctl load` (and, where installed, wrk and ab) under
valgrind's callgrind against a native nginx, twice per tool and mode, with N and 6N requests,
and prints the difference of the two counts over the difference of the requests: the user-space
instructions per request, the program's start-up and end cancelled. Under valgrind a client
runs some fifty times slower than it does natively, so nginx always has its responses ready;
the figure counts the client's code per request, not its wake-ups (those are the kernel's).
For benchctl it also says how many of them its load loop executed (its worker threads): the
rest is its start and its report (a bounded run sorts every request's times for ab's exact
percentiles, which grows a little faster than the requests).

    python3 bench/instructions.py [--modes keep-alive,close] [--tools benchctl,wrk,ab]
                                  [--benchctl target/release/benchctl] [--base OLD/benchctl]

`--base` adds another build of benchctl (e.g. the last commit's) as `benchctl-base`: what a
change did to the generator's own code, exactly. wrk runs for a duration, not a count: its
requests are read from its output. Every request goes to 127.0.0.1; every run is bounded.
"""

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import REPO, Fatal, Nginx  # noqa: E402

MODES = ("keep-alive", "close")
TOOLS = ("benchctl", "benchctl-base", "wrk", "ab")
CONCURRENCY = {"keep-alive": 100, "close": 50}
# Requests of the short run; the long one makes LONG_FACTOR times as many.
SHORT = 2_000
LONG_FACTOR = 6
# wrk's durations under valgrind, seconds (it makes what it can in them).
WRK_SECONDS = (2, 8)
LIMIT_S = 600


# benchctl's load loop: everything its worker threads do between their start and their end.
WORKER_FUNCTION = "loadgen::engine::worker_thread"


def collected(cmd: list[str]) -> tuple[int, int | None, str]:
    """Runs `cmd` under callgrind; the user-space instructions it executed, those of them in
    benchctl's worker threads (None for another program), and its stdout."""
    with tempfile.TemporaryDirectory(prefix="benchctl-callgrind-") as d:
        out = f"{d}/out"
        full = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"] + cmd
        p = subprocess.run(full, capture_output=True, text=True, timeout=LIMIT_S)
        m = re.search(r"Collected\s*:\s*(\d+)", p.stderr)
        if p.returncode != 0 or not m:
            raise Fatal(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
        ann = subprocess.run(
            ["callgrind_annotate", "--inclusive=yes", "--auto=no", "--threshold=100", out],
            capture_output=True, text=True, timeout=LIMIT_S,
        ).stdout
    workers = None
    for line in ann.splitlines():
        w = re.match(r"\s*([\d,]+) \(.*\)\s+\S*" + re.escape(WORKER_FUNCTION) + r"\b", line)
        if w:
            workers = int(w.group(1).replace(",", ""))
            break
    return int(m.group(1)), workers, p.stdout


def wrk_requests(out: str) -> int:
    m = re.search(r"(\d+) requests in", out)
    if not m:
        raise Fatal(f"wrk's output has no request count: {out[-300:]!r}")
    return int(m.group(1))


def per_request(tool: str, path: str, mode: str, url: str) -> tuple[float, float | None]:
    """The tool's user-space instructions per request, and (benchctl) those in its workers."""
    c = str(CONCURRENCY[mode])
    keep = mode == "keep-alive"
    if tool == "wrk":
        runs = []
        for seconds in WRK_SECONDS:
            header = [] if keep else ["-H", "Connection: close"]
            ir, _, out = collected([path, "-t1", "-c", c, "-d", f"{seconds}s", *header, url])
            runs.append((ir, wrk_requests(out)))
        (i1, n1), (i2, n2) = runs
        if n2 <= n1:
            raise Fatal(f"wrk made {n1} then {n2} requests: no difference to divide by")
        return (i2 - i1) / (n2 - n1), None
    counts = []
    for n in (SHORT, SHORT * LONG_FACTOR):
        if tool == "ab":
            cmd = [path, "-q", "-n", str(n), "-c", c, *(["-k"] if keep else []), url]
        else:
            cmd = [path, "load", "-q", "-n", str(n), "-c", c, *(["-k"] if keep else []), url]
        counts.append(collected(cmd)[:2])
    (a, wa), (b, wb) = counts
    n = SHORT * (LONG_FACTOR - 1)
    return (b - a) / n, (wb - wa) / n if wa is not None and wb is not None else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--tools", default="benchctl,wrk,ab")
    ap.add_argument("--benchctl", default=str(REPO / "target" / "release" / "benchctl"))
    ap.add_argument("--base", help="another benchctl binary, measured as benchctl-base")
    args = ap.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    tools = [t for t in args.tools.split(",") if t]
    if args.base and "benchctl-base" not in tools:
        tools.insert(1, "benchctl-base")
    for m in modes:
        if m not in MODES:
            ap.error(f"unknown mode {m!r} (known: {', '.join(MODES)})")
    paths = {}
    for t in tools:
        if t not in TOOLS:
            ap.error(f"unknown tool {t!r} (known: {', '.join(TOOLS)})")
        path = {"benchctl": args.benchctl, "benchctl-base": args.base}.get(t) or shutil.which(t)
        if not path or not Path(path).exists():
            print(f"{t}: not found, skipped", file=sys.stderr)
            continue
        paths[t] = path
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    nginx = Nginx(cpu=None)
    try:
        nginx.start()
        print(f"{'mode':11} {'tool':14} {'instructions/request':>21} {'in its load loop':>17}")
        for mode in modes:
            for tool, path in paths.items():
                ir, loop = per_request(tool, path, mode, nginx.url())
                in_loop = f"{loop:,.0f}" if loop is not None else "-"
                print(f"{mode:11} {tool:14} {ir:21,.0f} {in_loop:>17}", flush=True)
    except Fatal as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    finally:
        nginx.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
