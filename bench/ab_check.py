#!/usr/bin/env python3
"""Checks the A/B regression run on this machine: that it never cries wolf, and that it
catches a real slowdown of every server it slows.

1. Measures the scenario once (`benchctl run SCENARIO --runs 1 --headroom auto`): the baseline
   record, which names the images to measure again and the CPU share each server gets on both
   sides. Headroom caps a server whose load left the generator without headroom, so that every
   row's gated metric is the server's requests/s at a share it fully uses, and a slowed
   candidate's smaller share is a real slowdown.
2. A/A: `--aa N` runs of `benchctl run SCENARIO --against BASELINE`, the same images on both
   sides. Expected: no run reports a regression on any server.
3. A/B: `--ab N` runs of the same with every `--slow SERVER=FACTOR` given (default: each of
   nginx, apache and varnish at 0.95, all in the same runs: each candidate server capped at 0.95
   of the CPU its baseline loads used, about 5% slower where it is CPU-bound). Expected: each
   slowed server's slowdown caught (a gated metric of that server "worse") in at least 9 of 10
   runs, each run within its budget.

The default scenario is scenarios/ab-check.toml (nginx, Apache and Varnish in front of nginx, a
hello page and a 468-byte page, a new connection per request) and the default threshold 2%: a
run calls a metric worse only when its estimate is beyond the threshold, so a true 5% slowdown
judged against a 5% threshold would be called worse in about half the runs, whichever the
method (its estimate falls on either side of 0.95).

The A/B runs are spread evenly among the A/A runs rather than run after them, so that both
kinds see the same stretch of the machine's day.

Every load of a new connection per request keeps an entry in the kernel's connection tracking
table (nf_conntrack, loaded wherever Docker manages iptables) for two minutes after it closes.
At 262,144 entries, a common default, that caps a machine at about 2,000 new connections a
second, and benchctl then waits before each load for room. Run `benchctl system tune` first (it
exempts loopback from tracking); failing that, the check raises `net.netfilter.nf_conntrack_max`
to `--conntrack-max` (default 1,048,576; 0 leaves it alone) when run as root, and says so.

Each fresh container's memory layout is drawn anew where the kernel randomizes it
(kernel.randomize_va_space 1 or 2, the default), and some draws are slower than others: Apache's
rounds more than 8% off fell from about 1 in 6 to 1 in 12 with the layout fixed
(`benchctl system tune --fixed-layout`, which sets it to 0). The summary says which; a folder's
runs are all of one kind.

The check may be spread over several sittings: given an `--out` folder that holds runs of an
earlier invocation, it keeps them (their rows are in runs.jsonl there) and runs only the ones
still missing, provided the binary is built from the same commit and the options are the same;
it refuses otherwise, and refuses a binary built from uncommitted code unless `--allow-dirty`.

Each run's verdict is read back with `benchctl compare RECORD -f json`. A Markdown summary
(per server: alarms in the A/A runs and catches in the A/B runs; per run: rounds, why it
stopped, each gated metric's ratio, interval, MDE and verdict) goes to
bench/results/ab-check-latest.md and to standard output; the records stay in the output folder
(default: a new folder under $TMPDIR).

Usage:  python3 bench/ab_check.py [--aa 20] [--ab 10] [--scenario scenarios/ab-check.toml]
            [--slow nginx=0.95 --slow apache=0.95 ...] [--max-rounds 60] [--budget 5m]
            [--threshold 2%] [--out DIR] [--allow-dirty]
        (build first: cargo build --release -p benchctl)

Too long for CI: each run takes up to its budget. Every request goes to the servers' containers
on 127.0.0.1; every run is bounded by its rounds and budget. Python 3 standard library only.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import re
import statistics as st
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_BENCHCTL = REPO / "target" / "release" / "benchctl"
RESULTS = REPO / "bench" / "results"
DEFAULT_SLOW = ["nginx=0.95", "apache=0.95", "varnish=0.95"]


def run(cmd: list[str], log) -> int:
    """Runs a command with its output to `log`; returns its exit status."""
    print("$ " + " ".join(cmd), file=log, flush=True)
    return subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=REPO).returncode


def verdict(benchctl: str, record: Path) -> tuple[int, dict]:
    """`benchctl compare RECORD -f json`: its exit status and the paired comparison."""
    p = subprocess.run(
        [benchctl, "compare", str(record), "-f", "json"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    try:
        return p.returncode, json.loads(p.stdout)
    except json.JSONDecodeError:
        return p.returncode, {"error": (p.stderr or p.stdout).strip()}


def binary_commit(benchctl: str) -> str:
    """The commit `benchctl --version` says the binary was built from ("" when it names none)."""
    out = subprocess.run([benchctl, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"\(commit ([^)]+)\)", out)
    return m.group(1) if m else ""


def gated_cells(cmp: dict) -> str:
    """Each gated metric as `server/doc metric xRATIO [LOW-HIGH] MDE ±M% verdict`."""
    cells = []
    for g in cmp.get("groups", []):
        for m in g["metrics"]:
            if not m["gated"]:
                continue
            e = m.get("estimate")
            if e:
                cells.append(
                    f"{g['server']}/{g['document']} {m['metric']} x{e['ratio']:.3f} "
                    f"[{e['low']:.3f}-{e['high']:.3f}] MDE ±{e['mde'] * 100:.1f}% {m['verdict']}"
                )
            else:
                cells.append(f"{g['server']}/{g['document']} {m['metric']} {m['verdict']}")
    return "; ".join(cells)


def noise(records: list[Path]) -> list[str]:
    """Markdown rows: per server and document, how much the A/A runs' paired rounds differed
    (the log ratio candidate/baseline of requests/s and of server CPU per request), as the
    median over runs of each run's standard deviation and of its robust one (1.4826 times the
    median absolute deviation, which a few wild rounds barely move), and how many rounds were
    more than 8% off their run's median."""
    per: dict[tuple[str, str, str], list[tuple[float, float, int, int]]] = {}
    for path in records:
        try:
            r = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        if r.get("status", {}).get("state") != "complete" or not r.get("against"):
            continue
        base = {(l["server"], l["document"], l["round"]): l for l in r["against"]["loads"]}
        ratios: dict[tuple[str, str, str], list[float]] = {}
        for l in r["loads"]:
            b = base.get((l["server"], l["document"], l["round"]))
            if not b or not l["load"]["requests_per_second"] or not b["load"]["requests_per_second"]:
                continue
            key = (l["server"], l["document"])
            ratios.setdefault((*key, "requests/s"), []).append(
                math.log(l["load"]["requests_per_second"] / b["load"]["requests_per_second"]))
            cpu = [(x.get("server_usage") or {}).get("cpu_s") for x in (l, b)]
            if all(cpu) and l["load"]["complete"] and b["load"]["complete"]:
                ratios.setdefault((*key, "CPU per request"), []).append(math.log(
                    (cpu[0] / l["load"]["complete"]) / (cpu[1] / b["load"]["complete"])))
        for key, v in ratios.items():
            if len(v) < 4:
                continue
            m = st.median(v)
            robust = 1.4826 * st.median(abs(x - m) for x in v)
            wild = sum(1 for x in v if abs(x - m) > 0.08)
            per.setdefault(key, []).append((st.stdev(v), robust, wild, len(v)))
    rows = []
    for (server, doc, metric), runs in sorted(per.items()):
        rows.append(
            f"| {server} | {doc} | {metric} | {len(runs)} | "
            f"{100 * st.median(x[0] for x in runs):.1f}% | {100 * st.median(x[1] for x in runs):.1f}% | "
            f"{sum(x[2] for x in runs)} of {sum(x[3] for x in runs)} |"
        )
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--aa", type=int, default=20, help="A/A runs (default 20)")
    ap.add_argument("--ab", type=int, default=10, help="A/B runs with slowed servers (default 10)")
    ap.add_argument("--scenario", default="scenarios/ab-check.toml")
    ap.add_argument(
        "--slow", action="append", metavar="SERVER=FACTOR",
        help="a server the A/B runs slow, and by what (repeat for several; default "
        f"{' '.join(DEFAULT_SLOW)})",
    )
    ap.add_argument("--max-rounds", default="60")
    ap.add_argument("--budget", default="5m")
    ap.add_argument("--threshold", default="2%")
    ap.add_argument("--benchctl", default=str(DEFAULT_BENCHCTL))
    ap.add_argument(
        "--conntrack-max", type=int, default=1 << 20,
        help="raise net.netfilter.nf_conntrack_max to this when lower (root; 0: leave it)",
    )
    ap.add_argument(
        "--out",
        help="folder for the records (default: a new one in $TMPDIR); one that holds runs of an "
        "earlier invocation is continued",
    )
    ap.add_argument(
        "--allow-dirty", action="store_true",
        help="measure a binary built from uncommitted code",
    )
    a = ap.parse_args()
    if a.aa < 0 or a.ab < 0 or a.aa + a.ab == 0:
        ap.error("--aa and --ab must be >= 0, and not both 0")
    slow = a.slow or DEFAULT_SLOW
    slowed = []
    for s in slow:
        name, sep, factor = s.partition("=")
        if not sep or not name:
            ap.error(f"--slow {s}: expected SERVER=FACTOR, e.g. apache=0.95")
        slowed.append(name)
    if len(set(slowed)) != len(slowed):
        ap.error("--slow names a server more than once")
    if not Path(a.benchctl).is_file():
        ap.error(f"{a.benchctl} not found: cargo build --release -p benchctl")
    # The commit the runs measure: the binary's own, not the checkout's, which may differ.
    commit = binary_commit(a.benchctl)
    if not commit:
        ap.error(f"{a.benchctl} names no commit (benchctl --version): build it in a git checkout")
    if commit.endswith("-dirty") and not a.allow_dirty:
        ap.error(f"{a.benchctl} is built from uncommitted code ({commit}): commit, rebuild, "
                 "or pass --allow-dirty")
    # The machine's layout randomization changes the noise (a fresh container's speed depends
    # on where its memory landed): runs with it and without it are not pooled.
    layout = Path("/proc/sys/kernel/randomize_va_space")
    randomize = layout.read_text().strip() if layout.exists() else "absent"
    options = {
        "scenario": a.scenario, "threshold": a.threshold, "budget": a.budget,
        "max_rounds": a.max_rounds, "slow": slow, "randomize_va_space": randomize,
    }
    out = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix="benchctl-ab-check-"))
    out.mkdir(parents=True, exist_ok=True)
    # Runs of an earlier invocation into the same folder: kept when they measured the same
    # binary with the same options.
    runs_path = out / "runs.jsonl"
    kept = []
    if runs_path.exists():
        for n, line in enumerate(runs_path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if row.get("commit") != commit or row.get("options") != options:
                ap.error(
                    f"{runs_path}:{n}: run {row.get('kind')} {row.get('run')} measured commit "
                    f"{row.get('commit')} with {row.get('options')}, not {commit} with {options}: "
                    "give another --out"
                )
            kept.append(row)
    log_path = out / "ab-check.log"
    log = open(log_path, "a", encoding="utf-8")
    print(f"records and log in {out}" + (f"; {len(kept)} runs kept from before" if kept else ""),
          file=sys.stderr)
    conntrack = Path("/proc/sys/net/netfilter/nf_conntrack_max")
    if a.conntrack_max > 0 and conntrack.exists():
        now = int(conntrack.read_text().strip())
        if now < a.conntrack_max:
            try:
                conntrack.write_text(f"{a.conntrack_max}\n")
                print(f"raised net.netfilter.nf_conntrack_max from {now} to {a.conntrack_max} "
                      "(for the whole machine, until reboot)", file=sys.stderr)
            except OSError as e:
                print(f"net.netfilter.nf_conntrack_max stays {now} ({e}): loads will wait for "
                      "room in the table, and rounds take longer", file=sys.stderr)
    conntrack_max = int(conntrack.read_text().strip()) if conntrack.exists() else None

    baseline = out / "baseline.json"
    if not baseline.exists():
        rc = run(
            [a.benchctl, "run", a.scenario, "--runs", "1", "--headroom", "auto",
             "-o", str(baseline)],
            log,
        )
        if rc != 0:
            print(f"the baseline run failed (exit {rc}); see {log_path}", file=sys.stderr)
            return 2

    # A/B runs spread evenly among the A/A runs: run k of the A/B kind goes after the
    # A/A run whose share of the sequence it reaches.
    order: list[tuple[str, int]] = []
    done_ab = 0
    for i in range(1, a.aa + 1):
        order.append(("A/A", i))
        while done_ab < a.ab and (done_ab + 1) * a.aa <= i * a.ab:
            done_ab += 1
            order.append(("A/B", done_ab))
    order += [("A/B", j) for j in range(done_ab + 1, a.ab + 1)]

    done = {(r["kind"], r["run"]): r for r in kept}
    rows = []
    counts = {"A/A": a.aa, "A/B": a.ab}
    for kind, i in order:
        if (kind, i) in done:
            rows.append(done[(kind, i)])
            continue
        n = counts[kind]
        record = out / f"{'aa' if kind == 'A/A' else 'ab'}-{i:02d}.json"
        # A record without its row is what an interrupted invocation left: measured again.
        record.unlink(missing_ok=True)
        cmd = [
            a.benchctl, "run", a.scenario, "--against", str(baseline),
            "--runs", a.max_rounds, "--budget", a.budget, "--threshold", a.threshold,
            "-o", str(record),
        ]
        if kind == "A/B":
            for s in slow:
                cmd += ["--slow-candidate", s]
        started = time.monotonic()
        rc = run(cmd, log)
        seconds = time.monotonic() - started
        crc, cmp = verdict(a.benchctl, record) if record.exists() else (None, {})
        regressed = [
            f"{g['server']}/{g['document']}"
            for g in cmp.get("groups", [])
            for m in g["metrics"]
            if m["gated"] and m["verdict"] == "worse"
        ]
        servers = sorted({r.split("/", 1)[0] for r in regressed})
        caught = [s for s in slowed if s in servers]
        row = {
            "kind": kind,
            "run": i,
            "exit": rc,
            "compare_exit": crc,
            "seconds": round(seconds),
            "rounds": cmp.get("rounds"),
            "stop": cmp.get("stop"),
            "regressed": regressed,
            "servers": servers,
            "caught": caught,
            "gated": gated_cells(cmp),
            "error": cmp.get("error"),
            "finished": f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M}",
            "commit": commit,
            "options": options,
        }
        rows.append(row)
        with open(runs_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
        print(
            f"{kind} {i}/{n}: exit {rc}, {row['rounds']} rounds ({row['stop']}), "
            f"{seconds:.0f} s, regressions: {', '.join(regressed) or 'none'}"
            + (f"; caught {', '.join(caught) or 'none'} of {', '.join(slowed)}"
               if kind == "A/B" else ""),
            file=sys.stderr,
        )

    aa = [r for r in rows if r["kind"] == "A/A"]
    ab = [r for r in rows if r["kind"] == "A/B"]
    need = -(-9 * len(ab) // 10)  # at least 9 of 10
    lines = [
        f"# A/B regression check, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        "",
        f"Commit `{commit}`, runs finished {min(r['finished'] for r in rows)} to "
        f"{max(r['finished'] for r in rows)} UTC, scenario `{a.scenario}`, threshold {a.threshold}, at most "
        f"{a.max_rounds} rounds and {a.budget} per run; A/B runs slowed `{' '.join(slow)}`; "
        f"nf_conntrack_max {conntrack_max if conntrack_max is not None else 'absent'}; "
        f"kernel.randomize_va_space {options['randomize_va_space']}"
        + (" (memory layout fixed: `benchctl system tune --fixed-layout`)" if options["randomize_va_space"] == "0" else "")
        + ".",
        "",
        f"- A/A (same images both sides): {sum(1 for r in aa if r['regressed'])} of {len(aa)} "
        "runs reported a regression.",
        f"- A/B: every slowed server caught in {sum(1 for r in ab if len(r['caught']) == len(slowed))} "
        f"of {len(ab)} runs; longest run {max((r['seconds'] for r in rows), default=0)} s.",
        "",
        "| server | slowed to | A/A runs with an alarm | A/B runs caught |",
        "|---|--:|--:|--:|",
    ]
    factors = dict(s.split("=", 1) for s in slow)
    for server in sorted({*slowed, *(x for r in rows for x in r["servers"])}):
        alarms = sum(1 for r in aa if server in r["servers"])
        caught = (f"{sum(1 for r in ab if server in r['caught'])} of {len(ab)}"
                  if server in factors else "-")
        lines.append(f"| {server} | {factors.get(server, '-')} | {alarms} of {len(aa)} | {caught} |")
    rows_noise = noise([out / f"aa-{r['run']:02d}.json" for r in aa])
    if rows_noise:
        lines += [
            "",
            "Round-to-round noise of the A/A runs (log ratio candidate/baseline; per run, then "
            "the median over runs):",
            "",
            "| server | document | metric | runs | sd | robust sd | rounds > 8% off |",
            "|---|---|---|--:|--:|--:|--:|",
            *rows_noise,
        ]
    lines += [
        "",
        "| run | exit | rounds | stopped | time s | gated metrics |",
        "|---|--:|--:|---|--:|---|",
    ]
    for r in rows:
        what = r["gated"] or (r["error"] or "-")
        lines.append(
            f"| {r['kind']} {r['run']} | {r['exit']} | {r['rounds']} | {r['stop']} | "
            f"{r['seconds']} | {what} |"
        )
    text = "\n".join(lines) + "\n"
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "ab-check-latest.md").write_text(text, encoding="utf-8")
    (out / "ab-check.md").write_text(text, encoding="utf-8")
    print(text)
    bad = any(r["regressed"] for r in aa) or any(
        sum(1 for r in ab if server in r["caught"]) < need for server in slowed
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
