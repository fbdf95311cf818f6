#!/usr/bin/env python3
"""Large-file benchmark: what receiving big bodies costs `benchctl load`, wrk, ab and oha.

Serves a 100 MB file (--size-mb) from the same native nginx as bench/peers.py (one worker,
sendfile, access log off, pinned to one CPU) and fetches it over kept-alive connections,
-c 20 (the concurrency of scenarios/large-file.toml), from the other CPU with each client in
turn. The figure that matters is the client's CPU time per GB received (user + system, from
the child's rusage): a client that copies every body byte to user space only to count it
pays for that copy on every byte.

Rounds are interleaved as in peers.py's keep-alive mode: benchctl runs before each other
tool and once more at the end, so every other run has a benchctl run right before and right
after it, and the paired ratio (benchctl's CPU per GB over the tool's, the benchctl side the
geometric mean of those two neighbours) cancels the machine's drift.

Bytes received are exact for every tool: benchctl, ab and oha run a fixed number of requests
(--requests) and report their totals; wrk, which only runs for a time, reports the bytes it
read through a Lua `done` hook, partial responses included.

Usage:  python3 bench/large_file.py [--rounds 3] [--requests 40] [--seconds 5]
        (build first: cargo build --release -p benchctl; `just bench-large` does both)

Writes bench/results/large-file-latest.{md,json} and a copy of the Markdown under
bench/results/history/. Only 127.0.0.1 is ever contacted; every run is bounded in requests
or time and has a timeout. Python 3 standard library only.
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402  (the shared nginx, child-running and bookkeeping helpers)
from peers import Fatal  # noqa: E402

TOOLS = ("benchctl", "wrk", "ab", "oha")
DOC = "big.bin"
GB = 1e9

# wrk reports what it read, partial responses included, in exact bytes.
WRK_DONE = """\
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("LARGEFILE bytes=%d duration_us=%d requests=%d errors=%d timeouts=%d status=%d\\n",
    summary.bytes, summary.duration, summary.requests,
    e.connect + e.read + e.write, e.timeout, e.status))
end
"""


def log(msg: str) -> None:
    print(f"[large-file] {msg}", file=sys.stderr, flush=True)


class BigNginx(peers.Nginx):
    """peers.py's nginx, also serving a file of `size` bytes as /big.bin."""

    def __init__(self, cpu: int | None, size: int):
        super().__init__(cpu)
        self.size = size

    def start(self) -> None:
        super().start()
        path = self.dir / "html" / DOC
        block = bytes(range(256)) * 4096  # 1 MiB, not all zeros
        with open(path, "wb") as f:
            left = self.size
            while left > 0:
                n = min(left, len(block))
                f.write(block[:n])
                left -= n
        os.chmod(path, 0o644)
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10.0)
        conn.request("HEAD", "/" + DOC)
        resp = conn.getresponse()
        length = resp.getheader("Content-Length")
        conn.close()
        if resp.status != 200 or length != str(self.size):
            raise Fatal(f"nginx answered HEAD /{DOC} with {resp.status}, Content-Length {length}; expected 200, {self.size}")

    def big_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{DOC}"


@dataclass
class Run:
    tool: str
    round: int
    ok: bool
    bytes_received: int | None = None
    elapsed_s: float | None = None  # the tool's own measured time
    cpu_s: float | None = None  # client user + sys, from the child's rusage
    wall_s: float | None = None
    failed: int | None = None
    error: str | None = None
    command: list[str] = field(default_factory=list)

    @property
    def cpu_per_gb(self) -> float | None:
        if self.cpu_s is None or not self.bytes_received:
            return None
        return self.cpu_s / (self.bytes_received / GB)

    @property
    def gb_per_s(self) -> float | None:
        if not self.bytes_received or not self.elapsed_s:
            return None
        return self.bytes_received / GB / self.elapsed_s


@dataclass
class Config:
    rounds: int
    requests: int
    seconds: int
    concurrency: int
    size: int
    client_cpu: int | None
    server_cpu: int | None
    wrk_script: str = ""

    def timeout(self) -> float:
        # Generous: at 0.2 GB/s, the slowest client seen, with a margin.
        return 60.0 + self.requests * self.size / GB / 0.2


def command(tool: str, path: str, url: str, cfg: Config) -> list[str]:
    c, n = str(cfg.concurrency), str(cfg.requests)
    if tool == "benchctl":
        cmd = [path, "load", url, "-k", "-c", c, "-n", n, "-s", "120"]
        if cfg.client_cpu is not None:
            cmd += ["--cpus", str(cfg.client_cpu)]
        return cmd + ["--json"]
    if tool == "wrk":
        return [path, "-t1", f"-c{c}", f"-d{cfg.seconds}s", "--timeout", "120s", "-s", cfg.wrk_script, url]
    if tool == "ab":
        return [path, "-q", "-k", "-c", c, "-n", n, "-s", "120", url]
    if tool == "oha":
        return [path, "--no-tui", "--output-format", "json", "--worker-threads", "1", "-c", c, "-n", n, url]
    raise ValueError(tool)


def parse(tool: str, out: str, r: Run) -> None:
    if tool == "benchctl":
        d = json.loads(out)
        r.bytes_received = int(d["total_bytes"])
        r.elapsed_s = float(d["elapsed_s"])
        r.failed = int(d["failed"]) + int(d.get("non_2xx", 0))
    elif tool == "wrk":
        m = re.search(r"LARGEFILE bytes=(\d+) duration_us=(\d+) requests=(\d+) errors=(\d+) timeouts=(\d+) status=(\d+)", out)
        if not m:
            raise ValueError("no LARGEFILE line from the done hook in wrk's output")
        b, us, _, errors, timeouts, status = (int(x) for x in m.groups())
        r.bytes_received, r.elapsed_s, r.failed = b, us / 1e6, errors + timeouts + status
    elif tool == "ab":
        total = peers.number(r"^Total transferred:\s+(\d+) bytes", out, int)
        taken = peers.number(r"^Time taken for tests:\s+([\d.]+) seconds", out)
        if total is None or taken is None:
            raise ValueError("no 'Total transferred' / 'Time taken' lines in ab's output")
        failed = peers.number(r"^Failed requests:\s+(\d+)", out, int) or 0
        non2xx = peers.number(r"^Non-2xx responses:\s+(\d+)", out, int) or 0
        r.bytes_received, r.elapsed_s, r.failed = total, taken, failed + non2xx
    elif tool == "oha":
        d = json.loads(out)
        s = d["summary"]
        r.bytes_received = int(s["totalData"])
        r.elapsed_s = float(s["total"])
        statuses = {int(k): int(v) for k, v in d.get("statusCodeDistribution", {}).items()}
        errors = sum(int(v) for v in d.get("errorDistribution", {}).values())
        r.failed = errors + sum(v for k, v in statuses.items() if not 200 <= k < 300)
    else:
        raise ValueError(tool)


def run_one(tool: str, path: str, url: str, cfg: Config, rnd: int) -> Run:
    cmd = command(tool, path, url, cfg)
    r = Run(tool=tool, round=rnd, ok=False, command=cmd)
    status, out, err, cpu, wall, timed_out = peers.run_child(peers.pin(cfg.client_cpu) + cmd, cfg.timeout())
    (r.cpu_s, _), r.wall_s = cpu, wall
    if timed_out:
        r.error = f"killed after the {cfg.timeout():.0f}s timeout"
        return r
    if status != 0:
        last = (err.strip() or out.strip()).splitlines()[-3:]
        r.error = f"exit {status}: " + " | ".join(last)
        return r
    try:
        parse(tool, out, r)
    except (ValueError, KeyError, TypeError) as e:
        r.error = str(e)
        return r
    r.ok = bool(r.bytes_received)
    if not r.ok:
        r.error = "nothing received"
    return r


def plan(order: list[str], rounds: int) -> list[tuple[int, str]]:
    """benchctl before every other run and once more at the end; the others rotated per round."""
    others = [t for t in order if t != "benchctl"]
    runs: list[tuple[int, str]] = []
    for rnd in range(rounds):
        rot = peers.rotated(others, rnd)
        if "benchctl" not in order:
            runs += [(rnd, t) for t in rot]
        else:
            runs += [(rnd, x) for t in rot for x in ("benchctl", t)] or [(rnd, "benchctl")]
    if "benchctl" in order and others:
        runs.append((rounds - 1, "benchctl"))
    return runs


def summarise(runs: list[Run], tools: list[str], skipped: dict[str, str]) -> list[dict]:
    rows = []
    for name in tools:
        mine = [r for r in runs if r.tool == name]
        good = [r for r in mine if r.ok]
        rates = [r.gb_per_s for r in good if r.gb_per_s]
        cpus = [r.cpu_per_gb for r in good if r.cpu_per_gb]
        busy = [100 * r.cpu_s / r.wall_s for r in good if r.cpu_s is not None and r.wall_s]
        # Paired: benchctl's CPU per GB (the runs right before and after, geometric mean) over
        # this run's.
        share = []
        for i, r in enumerate(runs):
            if r.tool != name or not r.ok or name == "benchctl" or not r.cpu_per_gb:
                continue
            near = [b for b in benchctl_neighbours(runs, i) if b.cpu_per_gb]
            if near:
                share.append(peers.geomean([b.cpu_per_gb for b in near]) / r.cpu_per_gb)
        rows.append(
            {
                "tool": name,
                "skipped": skipped.get(name),
                "runs": len(mine),
                "ok_runs": len(good),
                "gb_per_s_median": peers.median_or_none(rates),
                "gb_per_s_min": min(rates) if rates else None,
                "gb_per_s_max": max(rates) if rates else None,
                "cpu_s_per_gb_median": peers.median_or_none(cpus),
                "client_busy_pct_median": peers.median_or_none(busy),
                "benchctl_cpu_share_paired": 1.0 if name == "benchctl" and good else peers.median_or_none(share),
                "benchctl_cpu_share_paired_all": sorted(share),
                "gb_received": sum(r.bytes_received or 0 for r in good) / GB,
                "failed_requests": sum(r.failed or 0 for r in good),
                "errors": sorted({r.error for r in mine if r.error}),
            }
        )
    base = next((row for row in rows if row["tool"] == "benchctl" and row["cpu_s_per_gb_median"]), None)
    for row in rows:
        row["benchctl_cpu_share"] = (
            base["cpu_s_per_gb_median"] / row["cpu_s_per_gb_median"]
            if base and row["cpu_s_per_gb_median"]
            else None
        )
    return rows


def benchctl_neighbours(runs: list[Run], i: int) -> list[Run]:
    before = next((r for r in reversed(runs[:i]) if r.tool == "benchctl" and r.ok), None)
    after = next((r for r in runs[i + 1 :] if r.tool == "benchctl" and r.ok), None)
    return [r for r in (before, after) if r is not None]


HEADERS = [
    "tool",
    "GB/s (median)",
    "min-max",
    "CPU-s/GB",
    "client CPU busy",
    "benchctl CPU/GB share",
    "paired share",
    "GB received",
    "notes",
]


def table_rows(rows: list[dict]) -> list[list[str]]:
    f = peers.fmt_f
    out = []
    for row in rows:
        notes = []
        if row["skipped"]:
            notes.append(f"skipped: {row['skipped']}")
        elif row["ok_runs"] < row["runs"]:
            notes.append(f"{row['runs'] - row['ok_runs']} of {row['runs']} runs failed")
        if row["failed_requests"]:
            notes.append(f"{row['failed_requests']:,} failed requests")
        if row["errors"] and not row["skipped"]:
            notes.append("; ".join(row["errors"])[:160])
        rng = f"{f(row['gb_per_s_min'])}-{f(row['gb_per_s_max'])}" if row["gb_per_s_min"] is not None else "-"
        out.append(
            [
                row["tool"],
                f(row["gb_per_s_median"]),
                rng,
                f(row["cpu_s_per_gb_median"], 3),
                f"{row['client_busy_pct_median']:.0f}%" if row["client_busy_pct_median"] is not None else "-",
                f(row["benchctl_cpu_share"]),
                f(row["benchctl_cpu_share_paired"]),
                f(row["gb_received"], 1),
                "; ".join(notes),
            ]
        )
    return out


def title(cfg: Config) -> str:
    return (
        f"{cfg.size / 1e6:.0f} MB file, keep-alive, -c {cfg.concurrency}: -n {cfg.requests} "
        f"(benchctl, ab, oha) / {cfg.seconds} s (wrk); {cfg.rounds} round(s)"
    )


def render_text(rows: list[dict], cfg: Config) -> str:
    cells = [HEADERS] + table_rows(rows)
    widths = [max(len(r[i]) for r in cells) for i in range(len(HEADERS) - 1)]
    lines = [f"== {title(cfg)}"]
    for r in cells:
        left = "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
        lines.append(f"{left}  {r[-1]}".rstrip())
    return "\n".join(lines) + "\n"


def render_markdown(rows: list[dict], cfg: Config, meta: dict) -> str:
    lines = [
        "# Large-file benchmark: client CPU per GB received",
        "",
        f"Measured {meta['date']} on source `{meta['source']}` with:",
        "",
        "```",
        meta["reproduce"],
        "```",
        "",
        f"- server: {meta['nginx']} (native, 1 worker, sendfile, access log off) serving a "
        f"{cfg.size:,}-byte file, CPU {meta['server_cpu']}; clients on CPU {meta['client_cpu']}, one thread each",
        f"- host: {meta['cpu_model']}, {meta['cores']} cores, Linux {meta['kernel']}, "
        f"load average at start {meta['loadavg_at_start']}",
        "- tools: " + ", ".join(f"{k} `{v}`" for k, v in meta["versions"].items() if v),
        f"- {cfg.rounds} round(s); benchctl runs before every other run and once more at the end; "
        "figures are medians over a tool's runs",
        "- CPU-s/GB: the client's user + system CPU time (from its rusage) per 10^9 bytes received "
        "(heads and bodies, partial responses included for wrk); lower is better",
        "- GB/s: bytes received over the tool's own measured time; client CPU busy: CPU time over wall time",
        "- benchctl CPU/GB share: benchctl's median CPU-s/GB over the tool's; paired: the median over "
        "the tool's runs of the benchctl runs right before and after it (geometric mean) over that run, "
        "which cancels the machine's drift. Below 1 benchctl used less CPU per GB",
        "",
        "Each tool's command line (URL: nginx on a free 127.0.0.1 port; clients run under "
        f"`taskset -c {meta['client_cpu']}`):",
        "",
        "```",
        *meta["commands"],
        "```",
        "",
        f"## {title(cfg)}",
        "",
        "| " + " | ".join(HEADERS) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(HEADERS) - 2) + ["---"]) + "|",
    ]
    for r in table_rows(rows):
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
    lines.append("")
    return "\n".join(lines)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Client CPU per GB received: benchctl load against wrk, ab and oha on a large file served by a native nginx on 127.0.0.1.")
    p.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    p.add_argument("--requests", type=int, default=40, help="-n for benchctl, ab and oha (default 40)")
    p.add_argument("--seconds", type=int, default=5, help="wrk's -d (default 5)")
    p.add_argument("--concurrency", type=int, default=20, help="-c for every tool (default 20)")
    p.add_argument("--size-mb", type=int, default=100, help="size of the file, 10^6 bytes (default 100)")
    p.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated subset of {','.join(TOOLS)}")
    p.add_argument("--benchctl", default=str(peers.DEFAULT_BENCHCTL), help="benchctl binary (default target/release/benchctl)")
    p.add_argument("--client-cpu", type=int, default=0, help="CPU for the clients (default 0)")
    p.add_argument("--server-cpu", type=int, default=1, help="CPU for nginx (default 1)")
    p.add_argument("--out-dir", default=str(peers.DEFAULT_OUT_DIR), help="where large-file-latest.{md,json} go")
    p.add_argument("--no-write", action="store_true", help="print the table only, write no files")
    a = p.parse_args(argv)
    if a.rounds < 1 or a.seconds < 1 or a.size_mb < 1 or a.concurrency < 1:
        p.error("--rounds, --seconds, --size-mb and --concurrency must be at least 1")
    if a.requests < a.concurrency:
        p.error(f"--requests ({a.requests}) must be at least --concurrency ({a.concurrency})")
    a.tools = [t.strip() for t in a.tools.split(",") if t.strip()]
    for t in a.tools:
        if t not in TOOLS:
            p.error(f"unknown tool {t!r} (known: {', '.join(TOOLS)})")
    return a


def find_tools(args: argparse.Namespace) -> tuple[dict[str, str], dict[str, str]]:
    paths: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for name in args.tools:
        if name == "benchctl":
            if not os.access(args.benchctl, os.X_OK):
                raise Fatal(f"{args.benchctl} is missing: build it first with `cargo build --release -p benchctl`")
            paths[name] = args.benchctl
            continue
        path = shutil.which(name) or ""
        if not path and name == "oha":
            cargo_bin = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo")) / "bin" / "oha"
            path = str(cargo_bin) if os.access(cargo_bin, os.X_OK) else ""
        if not path:
            skipped[name] = "not installed (" + ("cargo install oha --locked" if name == "oha" else "./x bench-deps") + ")"
            log(f"{name}: not installed, skipped")
            continue
        paths[name] = path
    return paths, skipped


def versions(paths: dict[str, str]) -> dict[str, str]:
    out = {}
    for name, path in paths.items():
        try:
            out[name] = peers.TOOL_CLASSES[name](path).version()
        except (OSError, subprocess.SubprocessError):
            out[name] = ""
    return out


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    client_cpu, server_cpu = peers.choose_cpus(args)
    paths, skipped = find_tools(args)
    work = Path(tempfile.mkdtemp(prefix="benchctl-large-file-"))
    script = work / "done.lua"
    script.write_text(WRK_DONE)
    cfg = Config(
        rounds=args.rounds,
        requests=args.requests,
        seconds=args.seconds,
        concurrency=args.concurrency,
        size=args.size_mb * 1_000_000,
        client_cpu=client_cpu,
        server_cpu=server_cpu,
        wrk_script=str(script),
    )

    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    host = peers.host_facts()
    nginx = BigNginx(server_cpu, cfg.size)
    runs: list[Run] = []
    try:
        nginx.start()
        url = nginx.big_url()
        log(f"nginx ({nginx.version()}) serving {cfg.size:,} bytes at {url}, CPU {server_cpu}; clients on CPU {client_cpu}")
        order = [t for t in args.tools if t in paths]
        todo = plan(order, cfg.rounds)
        for k, (rnd, name) in enumerate(todo, 1):
            time.sleep(0.5)
            r = run_one(name, paths[name], url, cfg, rnd + 1)
            runs.append(r)
            if r.ok:
                log(
                    f"[{k}/{len(todo)}] round {rnd + 1} {name:9} {r.bytes_received / GB:6.2f} GB "
                    f"{r.gb_per_s:5.2f} GB/s  cpu {r.cpu_s:5.2f}s  {r.cpu_per_gb:.3f} CPU-s/GB"
                    + (f"  failed {r.failed}" if r.failed else "")
                )
            else:
                log(f"[{k}/{len(todo)}] round {rnd + 1} {name:9} FAILED: {r.error}")
        nginx_version = nginx.version()
    except KeyboardInterrupt:
        log("interrupted; nginx stopped, nothing written")
        return 130
    finally:
        nginx.stop()
        shutil.rmtree(work, ignore_errors=True)

    rows = summarise(runs, args.tools, skipped)
    print(render_text(rows, cfg))
    if args.no_write:
        return 0

    commands, seen = [], set()
    for r in runs:
        if r.tool in seen:
            continue
        seen.add(r.tool)
        cmd = [
            os.path.basename(a) if i == 0 else ("URL" if a == url else ("done.lua" if a == str(script) else a))
            for i, a in enumerate(r.command)
        ]
        commands.append(" ".join(peers.shell_quote(a) for a in cmd))
    meta = {
        "source": peers.git_describe(peers.BUILD_INPUTS + ["bench/large_file.py"]),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "reproduce": ("python3 bench/large_file.py " + " ".join(argv)).strip(),
        "nginx": nginx_version,
        "server_cpu": server_cpu,
        "client_cpu": client_cpu,
        "versions": versions(paths),
        "commands": commands,
        **host,
    }
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    md_text = render_markdown(rows, cfg, meta)
    md = out_dir / "large-file-latest.md"
    js = out_dir / "large-file-latest.json"
    peers.write_atomic(md, md_text)
    payload = {
        "meta": meta,
        "config": {k: v for k, v in asdict(cfg).items() if k != "wrk_script"},
        "wrk_done_hook": WRK_DONE,
        "summary": rows,
        "runs": [{**asdict(r), "cpu_s_per_gb": r.cpu_per_gb, "gb_per_s": r.gb_per_s} for r in runs],
    }
    peers.write_atomic(js, json.dumps(payload, indent=2) + "\n")
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M")
    history = out_dir / "history" / f"large-file-{stamp}-{meta['source']}.md"
    history.parent.mkdir(parents=True, exist_ok=True)
    peers.write_atomic(history, md_text)
    log(f"wrote {peers.rel(md)}, {peers.rel(js)} and {peers.rel(history)}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Fatal as e:
        print(f"large_file: error: {e}", file=sys.stderr)
        sys.exit(2)
