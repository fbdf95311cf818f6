#!/usr/bin/env python3
"""What the peer benchmark (bench/peers.py) makes of its runs: medians and paired ratios per
tool, the tables in text and Markdown, the host's facts, and the files they are written to.
"""

from __future__ import annotations

import math
import os
import platform
import re
import statistics
import subprocess
from pathlib import Path

from typing import TYPE_CHECKING

from peers_common import (
    CONCURRENCY,
    PIPELINE_DEPTH,
    REPO,
)
from peers_tools import RunResult

if TYPE_CHECKING:
    from peers import Config

# ---------------------------------------------------------------------------------------------
# summarising


def median_or_none(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def summarise(
    results: list[RunResult],
    tools: list[str],
    skipped: dict[str, str],
    modes: list[str],
    mode_skips: dict[tuple[str, str], str] | None = None,
) -> dict:
    """Per mode, a row per tool. `skipped` names tools that ran in no mode; `mode_skips`, keyed
    by (mode, tool), those that sat one mode out and why."""
    out: dict = {}
    mode_skips = mode_skips or {}
    for mode in modes:
        rows = []
        for name in tools:
            runs = [r for r in results if r.tool == name and r.mode == mode]
            good = [r for r in runs if r.ok]
            rates = [r.requests_per_second for r in good]
            cpus = [r.cpu_per_100k for r in good if r.cpu_per_100k is not None]
            users = [r.user_us_per_request for r in good if r.user_us_per_request is not None]
            servers = [r.server_us_per_request for r in good if r.server_us_per_request is not None]
            busy = [100 * r.cpu_s / r.wall_s for r in good if r.cpu_s is not None and r.wall_s]
            rows.append(
                {
                    "tool": name,
                    "skipped": skipped.get(name) or mode_skips.get((mode, name)),
                    "runs": len(runs),
                    "ok_runs": len(good),
                    "rps_median": median_or_none(rates),
                    "rps_min": min(rates) if rates else None,
                    "rps_max": max(rates) if rates else None,
                    "cpu_per_100k_median": median_or_none(cpus),
                    "user_us_per_request_median": median_or_none(users),
                    "server_us_per_request_median": median_or_none(servers),
                    "client_busy_pct_median": median_or_none(busy),
                    "failed_requests": sum(r.failed or 0 for r in good),
                    "completed_requests": sum(r.completed or 0 for r in good),
                    "port_exhaustion_runs": sum(1 for r in runs if r.port_exhaustion),
                    "errors": sorted({r.error for r in runs if r.error}),
                }
            )
        base = next((row for row in rows if row["tool"] == "benchctl" and row["rps_median"]), None)
        # Paired ratios: each run against the benchctl runs right before and after it (their
        # geometric mean), so the machine's drift cancels to first order; the median over runs
        # is reported.
        in_mode = [r for r in results if r.mode == mode]
        for row in rows:
            rps, cpu = [], []
            for i, r in enumerate(in_mode):
                if r.tool != row["tool"] or not r.ok:
                    continue
                if r.tool == "benchctl":
                    rps.append(1.0)
                    cpu.append(1.0)
                    continue
                near = bracketing(in_mode, i)
                if near:
                    rps.append(r.requests_per_second / geomean([b.requests_per_second for b in near]))
                    if r.cpu_per_100k and all(b.cpu_per_100k for b in near):
                        cpu.append(r.cpu_per_100k / geomean([b.cpu_per_100k for b in near]))
            row["rps_ratio_paired"] = median_or_none(rps)
            row["cpu_ratio_paired"] = median_or_none(cpu)
        for row in rows:
            row["rps_ratio"] = row["rps_median"] / base["rps_median"] if base and row["rps_median"] else None
            row["cpu_ratio"] = (
                row["cpu_per_100k_median"] / base["cpu_per_100k_median"]
                if base and row["cpu_per_100k_median"] and base["cpu_per_100k_median"]
                else None
            )
        out[mode] = rows
    return out


def bracketing(runs: list[RunResult], i: int) -> list[RunResult]:
    """The good benchctl runs nearest before and after runs[i] (one or two)."""
    before = next((r for r in reversed(runs[:i]) if r.tool == "benchctl" and r.ok), None)
    after = next((r for r in runs[i + 1 :] if r.tool == "benchctl" and r.ok), None)
    return [r for r in (before, after) if r is not None]


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def fmt_int(x: float | None) -> str:
    return f"{x:,.0f}" if x is not None else "-"


def fmt_f(x: float | None, digits: int = 2) -> str:
    return f"{x:.{digits}f}" if x is not None else "-"


def note_for(row: dict) -> str:
    notes = []
    if row["skipped"]:
        notes.append(f"skipped: {row['skipped']}")
    elif row["ok_runs"] < row["runs"]:
        notes.append(f"{row['runs'] - row['ok_runs']} of {row['runs']} runs failed")
    if row["failed_requests"]:
        notes.append(f"{row['failed_requests']:,} failed requests")
    if row["port_exhaustion_runs"]:
        notes.append(f"port exhaustion in {row['port_exhaustion_runs']} run(s)")
    if row["errors"] and not row["skipped"]:
        notes.append("; ".join(row["errors"])[:160])
    return "; ".join(notes)


HEADERS = [
    "tool",
    "req/s (median)",
    "min-max",
    "CPU-s/100k req",
    "user µs/req",
    "server µs/req",
    "client CPU busy",
    "req/s vs benchctl",
    "CPU vs benchctl",
    "paired req/s ratio",
    "paired CPU ratio",
    "notes",
]


def table_rows(rows: list[dict]) -> list[list[str]]:
    out = []
    for row in rows:
        rng = f"{fmt_int(row['rps_min'])}-{fmt_int(row['rps_max'])}" if row["rps_min"] is not None else "-"
        out.append(
            [
                row["tool"],
                fmt_int(row["rps_median"]),
                rng,
                fmt_f(row["cpu_per_100k_median"]),
                fmt_f(row["user_us_per_request_median"]),
                fmt_f(row.get("server_us_per_request_median")),
                f"{row['client_busy_pct_median']:.0f}%" if row["client_busy_pct_median"] is not None else "-",
                fmt_f(row["rps_ratio"]),
                fmt_f(row["cpu_ratio"]),
                fmt_f(row["rps_ratio_paired"]),
                fmt_f(row["cpu_ratio_paired"]),
                note_for(row),
            ]
        )
    return out


def mode_title(mode: str, cfg: Config) -> str:
    c = CONCURRENCY[mode]
    if mode == "h2":
        return f"HTTP/2, -c {c} connections x {cfg.streams} streams, {cfg.seconds} s per run"
    if mode == "h3":
        return f"HTTP/3, -c {c} connections x {cfg.streams} streams, {cfg.seconds} s per run"
    if mode == "keep-alive":
        return f"keep-alive, -c {c}, {cfg.seconds} s per run (ab: -n sized to ~{cfg.seconds} s)"
    if mode == "pipeline":
        return f"pipelined HTTP/1.1, -c {c} connections x {PIPELINE_DEPTH} requests deep, {cfg.seconds} s per run"
    return (
        f"new connection per request, -c {c}, -n {cfg.close_requests:,} (benchctl, ab) / "
        f"{cfg.seconds} s (wrk with Connection: close, oha --disable-keepalive)"
    )


def render_text(summary: dict, cfg: Config) -> str:
    lines = []
    for mode, rows in summary.items():
        lines.append(f"== {mode_title(mode, cfg)}, {cfg.rounds} round(s)")
        cells = [HEADERS] + table_rows(rows)
        widths = [max(len(r[i]) for r in cells) for i in range(len(HEADERS) - 1)]
        for r in cells:
            left = "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
            lines.append(f"{left}  {r[-1]}".rstrip())
        lines.append("")
    return "\n".join(lines)


def render_markdown(summary: dict, cfg: Config, meta: dict) -> str:
    lines = [
        (
            f"# Peer benchmark: benchctl load against oha over HTTP/3, on {'Caddy' if meta.get('h3_server') == 'caddy' else 'nginx'}"
            if meta.get("h3")
            else "# Peer benchmark: benchctl load against h2load over HTTP/2"
            + (" (TLS, ALPN)" if meta.get("tls") else " (cleartext, prior knowledge)")
            if meta.get("h2")
            else "# Peer benchmark: benchctl load against wrk, ab and oha" + (" over HTTPS" if meta.get("tls") else "")
        ),
        "",
        f"Measured {meta['date']} on source `{meta['source']}` with:",
        "",
        "```",
        meta["reproduce"],
        "```",
        "",
        f"- server: {meta['nginx']} ("
        + (
            "in Docker on the host's network, 1 worker, HTTP/3 on UDP and HTTPS/HTTP/2 on TCP at one port"
            if meta.get("h3_server") == "nginx"
            else "native, GOMAXPROCS=1, HTTP/3 on UDP and HTTPS on TCP at one port"
            if meta.get("h3")
            else "native, 1 worker"
        )
        + ", 13-byte page, access log off"
        + (", http2 listener" if meta.get("h2") else "")
        + (", a self-signed ECDSA P-256 certificate" if meta.get("h3") else "")
        + (", HTTPS with a self-signed ECDSA P-256 certificate, no session cache or tickets" if meta.get("tls") and not meta.get("h3") else "")
        + "), "
        f"CPU {meta['server_cpu']}; clients on CPU {meta['client_cpu']}"
        + (f"; {meta['client_quota']}" if meta.get("client_quota") else ""),
        f"- host: {meta['cpu_model']}, {meta['cores']} cores, Linux {meta['kernel']}, "
        f"load average at start {meta['loadavg_at_start']}",
        "- tools: " + ", ".join(f"{k} `{v}`" for k, v in meta["versions"].items() if v),
        f"- {cfg.rounds} round(s) per mode, the modes one after the other; in each round every tool "
        "runs once, their order rotated from round to round; figures are medians over rounds",
        "- CPU-s/100k req: the client's user + system CPU time (from its rusage) per 100,000 "
        "completed requests; lower is better",
        "- user µs/req: the user-space part of that CPU time, µs per completed request: what the "
        "tool's own code costs beside the kernel's work it asks for",
        "- server µs/req: the CPU time nginx's processes used during the run (the scheduler's "
        "account of their threads, read before and after it), µs per completed request: what the "
        "client costs the server; \"-\" where it cannot be read (a server in a container)",
        "- client CPU busy: that CPU time over the run's wall time. Well below 100% means the client "
        "was waiting on the server: the rate is then the server's ceiling, not the client's, and "
        "CPU-s/100k req is the fairer comparison of the clients",
        "- vs benchctl: ratio of the medians; paired: the median over a tool's runs of each run's "
        "ratio to the benchctl runs right before and after it (in keep-alive, pipelined and HTTP/2 modes benchctl runs "
        "between every two other runs), which cancels the machine's drift from run to run. "
        "Above 1 the tool was faster (req/s) or used more CPU per request (CPU)",
        "",
    ]
    if meta.get("commands"):
        server = "Caddy" if meta.get("h3_server") == "caddy" else "nginx"
        lines += [f"Each tool's command line (URL: {server} on a free 127.0.0.1 port; clients run under `taskset -c "
                  f"{meta['client_cpu']}`):", "", "```"]
        lines += meta["commands"]
        lines += ["```", ""]
    for mode, rows in summary.items():
        lines += [f"## {mode_title(mode, cfg)}", ""]
        lines.append("| " + " | ".join(HEADERS) + " |")
        lines.append("|" + "|".join(["---"] + ["---:"] * (len(HEADERS) - 2) + ["---"]) + "|")
        for r in table_rows(rows):
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
        lines.append("")
    return "\n".join(lines)


def host_facts() -> dict:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu_model": model or platform.processor(),
        "cores": os.cpu_count(),
        "kernel": platform.release(),
        # Other work on the machine skews every figure; say how busy it was when we started.
        "loadavg_at_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


# What the measured binaries and the measurement depend on.
BUILD_INPUTS = [
    "crates",
    "Cargo.toml",
    "Cargo.lock",
    "bench/peers.py",
    "bench/peers_common.py",
    "bench/peers_report.py",
    "bench/peers_servers.py",
    "bench/peers_tools.py",
]


def git_describe(inputs: list[str] = BUILD_INPUTS) -> str:
    """The commit the figures belong to, "-dirty" when the tree had changes to what benchctl is
    built from or to the measuring script (`inputs`; edits to the docs or to earlier results do
    not count)."""
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--", *inputs],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        if not head:
            return "unknown"
        return head + ("-dirty" if changed else "")
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def shell_quote(a: str) -> str:
    return a if re.fullmatch(r"[\w@%+=:,./-]+", a) else "'" + a.replace("'", "'\\''") + "'"


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def rel(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(REPO))
    except ValueError:
        return str(p)
