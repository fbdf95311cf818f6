#!/usr/bin/env python3
"""The load generator's peak memory with 10,000 keep-alive connections, on each engine.

Starts nginx natively (3 workers, so that it holds 10,000 connections), then runs the release
binary `benchctl load -k -c 10000 -n 40000` against it on each engine, interleaved, --rounds
times, and prints each run's peak resident set size and the median per engine. The peak is the
child's VmHWM, read from /proc every 10 ms while it runs (its ru_maxrss would not do: Linux
carries the spawning process's own high-water mark into it at exec). Every request goes to 127.0.0.1; every run is bounded in requests and time.

    python3 bench/memory.py [--rounds 3] [--benchctl target/release/benchctl]
"""

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import REPO, Fatal, Nginx  # noqa: E402

CONNECTIONS = 10_000
REQUESTS = 40_000
ENGINES = ("epoll", "uring")
LIMIT_S = 120


def vm_hwm_kib(pid: int) -> int:
    """The process's peak resident set size so far, KiB (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def peak_rss_kib(cmd: list[str]) -> tuple[int, int, str]:
    """Runs `cmd`; its exit status, its peak RSS in KiB and its standard error."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + LIMIT_S
    peak = 0
    while proc.poll() is None:
        peak = max(peak, vm_hwm_kib(proc.pid))
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            break
        time.sleep(0.01)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    return proc.returncode, peak, err


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--benchctl", default=str(REPO / "target" / "release" / "benchctl"))
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < CONNECTIONS + 200:
        print(f"the open-files limit is {hard}; {CONNECTIONS} connections need more", file=sys.stderr)
        return 2
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    nginx = Nginx(cpu=None, workers=3)
    try:
        nginx.start()
        peaks: dict[str, list[int]] = {e: [] for e in ENGINES}
        for rnd in range(args.rounds):
            for engine in ENGINES if rnd % 2 == 0 else reversed(ENGINES):
                cmd = [args.benchctl, "load", "--engine", engine, "-k", "-c", str(CONNECTIONS),
                       "-n", str(REQUESTS), "-q", nginx.url()]
                code, kib, err = peak_rss_kib(cmd)
                if code != 0:
                    print(f"{engine}: exit {code}: {err.strip()[-400:]}", file=sys.stderr)
                    return 1
                peaks[engine].append(kib)
                print(f"round {rnd + 1} {engine:6} peak RSS {kib / 1024:.1f} MiB ({kib} KiB)")
        for engine in ENGINES:
            print(f"{engine:6} median peak RSS {statistics.median(peaks[engine]) / 1024:.1f} MiB "
                  f"with {CONNECTIONS} keep-alive connections")
    except Fatal as e:
        print(f"memory: {e}", file=sys.stderr)
        return 1
    finally:
        nginx.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
