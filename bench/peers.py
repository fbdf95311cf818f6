#!/usr/bin/env python3
"""Peer benchmark: `benchctl load` against wrk, ab and oha on the same native nginx.

Starts the Debian nginx binary with its own temporary configuration (one worker, no access log,
a 13-byte page) pinned to one CPU, then drives it from the other CPU with each load generator in
turn, round by round, in two modes:

  keep-alive   -c 100, each tool for --seconds
  close        -c 300, a new connection per request (ab's default, HTTP/1.0)
  pipeline     -c 100, HTTP/1.1 keep-alive with 16 requests written back to back on each
               connection (benchctl --pipeline 16; wrk with a script that sends 16 requests per
               write, as wrk's pipeline example and TFB's plaintext test do); ab and oha cannot
               pipeline and sit this mode out

With --h2 (or --modes h2), the one mode is HTTP/2 (nginx's http2 listener): benchctl (`--h2 --streams`) against
h2load (Debian's nghttp2-client) at the same connections and streams, -c 10 -m 10 (--streams N
for another -m), each for --seconds; in cleartext by prior knowledge (h2c), or with --tls over
HTTPS chosen by ALPN; benchctl-epoll and benchctl-uring run benchctl on each engine. The
report then goes to bench/results/peers-h2c-latest.* or peers-h2-tls-latest.* (with
-streamsN before -latest for another --streams).

With --h3 (or --modes h3), the one mode is HTTP/3 over QUIC: benchctl (`--h3 -k --streams`) against oha built
with its HTTP/3 support (`oha-h3`: `cargo install oha --features http3 --root target/oha-h3`,
which `./x bench-deps` does) at the same connections and streams, -c 10 x 10, each for
--seconds, HTTPS with a self-signed ECDSA P-256 certificate made for the run. The server
(--h3-server) is nginx 1.26 with its HTTP/3 module (default: this Debian release's nginx has
none, so it is benchctl's nginx-trixie image, built by `benchctl images build`, run by Docker
on the host's network pinned to the server CPU, serving QUIC on UDP and HTTPS on TCP at one
port), or Caddy (Debian's package, unpacked into target/caddy by ./x bench-deps, native). The
report then goes to bench/results/peers-h3-latest.* (nginx) or peers-h3-caddy-latest.*.

With --client-quota F every client runs in a CPU-bandwidth cgroup of the script's own that lets
it use at most F of a CPU (root only). Where one client reaches the server's ceiling with CPU to
spare and another does not, the uncapped rates compare the server more than the clients; capped,
each client sends what its share of a CPU lets it, which is the generators' own throughput. The
report's name then ends in -capped (peers-h3-capped-latest.*).

With --tls, nginx serves the page over HTTPS with a self-signed ECDSA P-256 certificate made
for the run (openssl), and every tool fetches https:// without verifying it (ab and benchctl
never verify unless asked; oha gets --insecure): keep-alive then measures encryption, close
mode a full TLS handshake per request (no session is resumed: ab does not, benchctl not
without --tls-resume, wrk and oha reconnect without tickets). The report then goes to
bench/results/peers-tls-latest.{md,json}.

benchctl runs twice: as it is, and as `benchctl-woken` (--user-timestamps: responses timed when
read and the client woken by every one, as ab and wrk are), which shows what its receive stamps
and coalesced wake-ups change.

The modes run one after the other, each mode's rounds back to back, every tool once per round
in an order rotated from round to round; in keep-alive, pipelined and HTTP/2 modes benchctl also runs before each other
tool, so that every run can be compared with the benchctl runs right before and after it.

Per run it records the tool's own requests/s and the client's CPU time (user + sys from the
child's rusage), and prints per mode the median over rounds with ratios to benchctl: of the
medians, and paired (each run against its neighbouring benchctl runs). A Markdown
and a JSON copy go to bench/results/peers-latest.{md,json} (with --modes naming only some modes,
peers-MODE-...-latest, so that a partial run does not replace the whole report), and the
Markdown is kept as well under bench/results/history/ with its date and commit.

Usage:  python3 bench/peers.py [--rounds 3] [--seconds 5] [--tools benchctl,wrk,ab,oha] [--tls] [--h2] [--h3]
        (build first: cargo build --release -p benchctl; `just bench` does both)
        A change to the generator against the build before it: --tools benchctl,benchctl-base
        --base OLD/benchctl (both run the same commands, paired as the peers are; with --h2 and
        --h3 too).
        Per run, "user µs/req" is the client's user-space CPU per request: the generator's own
        code, beside the kernel's work it asks for.

Only 127.0.0.1 is ever contacted; every run is bounded in requests or time and has a timeout.
Python 3 standard library only.
"""


from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from peers_common import (
    BRACKETED_MODES,
    CONCURRENCY,
    DEFAULT_BENCHCTL,
    DEFAULT_OUT_DIR,
    DEFAULT_TOOLS,
    Fatal,
    H2_TOOLS,
    H3_TOOLS,
    log,
    MODES,
    OHA_H3,
    pin,
    PORT_EXHAUSTION_PATTERNS,
    STREAMS,
    TIME_WAIT_LIMIT,
    TIME_WAIT_MAX_WAIT_S,
    TOOLS,
)
from peers_report import (
    git_describe,
    host_facts,
    rel,
    render_markdown,
    render_text,
    shell_quote,
    summarise,
    write_atomic,
)
from peers_servers import (
    Caddy,
    Nginx,
    NginxQuic,
)
from peers_tools import (
    Benchctl,
    CpuQuota,
    run_child,
    RunResult,
    Tool,
    TOOL_CLASSES,
    Wrk,
)

# The other scripts in bench/ take these from here (`import peers`).
from peers_common import REPO  # noqa: E402,F401
from peers_report import BUILD_INPUTS, fmt_f, geomean, median_or_none  # noqa: E402,F401
from peers_tools import number  # noqa: E402,F401

# ---------------------------------------------------------------------------------------------
# the benchmark


@dataclass
class Config:
    rounds: int
    seconds: int
    close_requests: int
    client_cpu: int | None
    server_cpu: int | None
    quota: CpuQuota | None = None
    streams: int = STREAMS
    ab_default_rate: float = 60_000.0
    rates_seen: dict[str, list[float]] = field(default_factory=dict)

    def ab_keepalive_requests(self, concurrency: int) -> int:
        """ab -n for ~--seconds of keep-alive: from ab's own earlier rate, else any tool's."""
        rates = self.rates_seen.get("ab") or [x for t, v in self.rates_seen.items() for x in v]
        rate = statistics.median(rates) if rates else self.ab_default_rate
        n = int(rate * self.seconds)
        return max(concurrency * 10, min(n, 2_000_000))

    def timeout_for(self, tool: str, mode: str) -> float:
        # Generous: duration-based runs take --seconds; -n runs depend on the tool's speed.
        return 60.0 + 10.0 * self.seconds


def time_wait_count(port: int) -> int:
    """Sockets in TIME_WAIT (state 06) to or from `port`, read from /proc as ss does.

    Only connections to the benchmark's nginx can collide with the next run's (the 4-tuple
    includes the server's port), so other work on the machine is not waited for.
    """
    suffix = f":{port:04X}"
    n = 0
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                next(f, None)
                for line in f:
                    parts = line.split(None, 4)
                    if len(parts) > 3 and parts[3] == "06" and (
                        parts[1].endswith(suffix) or parts[2].endswith(suffix)
                    ):
                        n += 1
        except OSError:
            pass
    return n


def wait_for_time_wait(port: int, limit: int, max_wait: float = TIME_WAIT_MAX_WAIT_S) -> tuple[int, float]:
    start = time.monotonic()
    n = time_wait_count(port)
    if n >= limit:
        log(f"{n} sockets to port {port} in TIME_WAIT; waiting for fewer than {limit} (at most {max_wait:.0f}s)")
    while n >= limit and time.monotonic() - start < max_wait:
        time.sleep(1.0)
        n = time_wait_count(port)
    waited = time.monotonic() - start
    if waited >= 1.0:
        log(f"  after {waited:.0f}s: {n} in TIME_WAIT" + ("" if n < limit else " (going on anyway)"))
    return n, waited


def round_order(order: list[str], mode: str, rnd: int) -> list[str]:
    """The runs of one round: every tool once, their order rotated from round to round. In
    keep-alive mode, where the server is the bottleneck and the machine's drift from one run to
    the next is as large as the differences measured, benchctl also runs before each other tool,
    so that every other run has a benchctl run right before and right after it."""
    if mode not in BRACKETED_MODES or "benchctl" not in order:
        return rotated(order, rnd)
    others = rotated([t for t in order if t != "benchctl"], rnd)
    return [x for t in others for x in ("benchctl", t)] or ["benchctl"]


def rotated(seq: list[str], k: int) -> list[str]:
    if not seq:
        return seq
    k %= len(seq)
    return seq[k:] + seq[:k]


def run_one(
    tool: Tool, mode: str, url: str, cfg: Config, round_no: int, server: "Nginx | None" = None
) -> RunResult:
    """One run of `tool`; `server`, when its CPU time can be read, is measured around it."""
    cmd = tool.command(mode, url, cfg, round_no)
    full = pin(cfg.client_cpu) + cmd
    r = RunResult(tool=tool.name, mode=mode, round=round_no, ok=False, command=cmd)
    timeout = cfg.timeout_for(tool.name, mode) + tool.linger_s
    server_before = server.cpu_s() if server else None
    status, out, err, cpu, wall, timed_out = run_child(full, timeout, cfg.quota)
    server_after = server.cpu_s() if server else None
    if server_before is not None and server_after is not None:
        r.server_cpu_s = server_after - server_before
    (r.cpu_s, r.user_s), r.wall_s = cpu, wall
    text = out + err
    if any(p in text for p in PORT_EXHAUSTION_PATTERNS):
        r.port_exhaustion = True
    if timed_out:
        r.error = f"killed after the {timeout:.0f}s timeout"
        return r
    if status != 0:
        last = (err.strip() or out.strip()).splitlines()[-3:]
        r.error = f"exit {status}: " + " | ".join(last) if last else f"exit {status}"
        return r
    try:
        tool.parse(out, err, r)
    except (ValueError, KeyError, TypeError) as e:
        r.error = str(e)
        return r
    r.ok = r.requests_per_second is not None and r.requests_per_second > 0
    if not r.ok and not r.error:
        r.error = "no requests completed"
    return r


def smoke(tool: Tool, url: str, cfg: Config) -> str | None:
    """A tiny run before the real ones; returns why the tool cannot take part, or None."""
    try:
        limit = 30.0 + tool.linger_s
        status, out, err, _, _, timed_out = run_child(tool.smoke_command(url), limit)
    except OSError as e:
        return str(e)
    if timed_out:
        return f"a 100-request smoke run did not finish within {limit:.0f}s"
    if status != 0:
        last = (err.strip() or out.strip()).splitlines()[-2:]
        return f"exit {status}: " + " | ".join(last)
    probe = RunResult(tool=tool.name, mode="smoke", round=0, ok=False)
    try:
        tool.parse(out, err, probe)
    except (ValueError, KeyError, TypeError) as e:
        return str(e)
    return None


# ---------------------------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Compare benchctl load with wrk, ab and oha against a native nginx on 127.0.0.1."
    )
    p.add_argument("--rounds", type=int, default=3, help="rounds per mode (default 3)")
    p.add_argument("--seconds", type=int, default=5, help="seconds per duration-based run (default 5)")
    p.add_argument(
        "--close-requests",
        type=int,
        default=None,
        help="-n for benchctl and ab in close mode (default 20000 per --seconds: 100000 at 5 s)",
    )
    p.add_argument("--tools", default=",".join(DEFAULT_TOOLS), help=f"comma-separated subset of {','.join(TOOLS)}")
    p.add_argument("--modes", default=",".join(MODES), help=f"comma-separated subset of {','.join(MODES)}")
    p.add_argument("--benchctl", default=str(DEFAULT_BENCHCTL), help="benchctl binary (default target/release/benchctl)")
    p.add_argument(
        "--base",
        help="another benchctl binary, run as the tool benchctl-base (e.g. the last commit's build)",
    )
    p.add_argument("--client-cpu", type=int, default=0, help="CPU for the load generators (default 0)")
    p.add_argument("--server-cpu", type=int, default=1, help="CPU for nginx (default 1)")
    p.add_argument(
        "--time-wait-limit",
        type=int,
        default=TIME_WAIT_LIMIT,
        help=f"before each close-mode run wait (up to {TIME_WAIT_MAX_WAIT_S:.0f}s) until fewer sockets "
        f"to nginx's port than this are in TIME_WAIT (default {TIME_WAIT_LIMIT}; 0 disables the wait)",
    )
    p.add_argument(
        "--client-quota",
        type=float,
        default=None,
        metavar="FRACTION",
        help="cap every client at FRACTION of a CPU (a CPU-bandwidth cgroup; needs root): the clients, "
        "not the server, then set the rate; reports go to ...-capped-latest.*",
    )
    p.add_argument("--out-dir", default=str(DEFAULT_OUT_DIR), help="where peers-latest.{md,json} go")
    p.add_argument("--no-write", action="store_true", help="print the tables only, write no files")
    p.add_argument(
        "--h2",
        action="store_true",
        help="HTTP/2 mode only: benchctl --h2 against h2load at the same connections and streams "
        "(cleartext h2c, or with --tls by ALPN); reports go to peers-h2c-latest.* or peers-h2-tls-latest.*",
    )
    p.add_argument(
        "--h3",
        action="store_true",
        help="HTTP/3 mode only: benchctl --h3 against oha's HTTP/3 at the same connections and streams, "
        "on nginx or Caddy (--h3-server); the report goes to peers-h3-latest.* or peers-h3-caddy-latest.*",
    )
    p.add_argument(
        "--h3-server",
        choices=("nginx", "caddy"),
        default="nginx",
        help="with --h3: nginx 1.26 (benchctl's nginx-trixie image, in Docker on the host's network) or "
        "Debian's Caddy (native); the report goes to peers-h3-latest.* or peers-h3-caddy-latest.*",
    )
    p.add_argument(
        "--streams",
        type=int,
        default=STREAMS,
        help=f"with --h2 or --h3: streams open at once on each connection (default {STREAMS}); "
        "other than the default, the report's name ends in -streamsN",
    )
    p.add_argument(
        "--tls",
        action="store_true",
        help="nginx serves HTTPS with a self-signed certificate made for the run; reports go to peers-tls-latest.*",
    )
    a = p.parse_args(argv)
    if a.rounds < 1 or a.seconds < 1:
        p.error("--rounds and --seconds must be at least 1")
    if a.streams < 1:
        p.error("--streams must be at least 1")
    if a.client_quota is not None and not 0 < a.client_quota <= (os.cpu_count() or 1):
        p.error(f"--client-quota must be above 0 and at most the CPUs there are ({os.cpu_count()})")
    if a.close_requests is None:
        a.close_requests = 20_000 * a.seconds
    if a.close_requests < CONCURRENCY["close"]:
        p.error(f"--close-requests must be at least {CONCURRENCY['close']}")
    tools_given = "--tools" in argv or any(x.startswith("--tools=") for x in argv)
    a.tools = [t.strip() for t in a.tools.split(",") if t.strip()]
    a.modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    # `--modes h2` and `--modes h3` are --h2 and --h3: each runs alone, on a server of its own.
    for m in ("h2", "h3"):
        if m in a.modes:
            if a.modes != [m]:
                p.error(f"--modes {m} runs alone (against its own server): give it by itself, or --{m}")
            setattr(a, m, True)
    if a.h3:
        if a.h2:
            p.error("give one of --h2 and --h3")
        if not tools_given:
            a.tools = ["benchctl", "oha-h3"]
        bad = [t for t in a.tools if t not in H3_TOOLS]
        if bad:
            p.error(f"--h3 compares {', '.join(H3_TOOLS)} only, not {', '.join(bad)}")
        a.modes = ["h3"]
        a.tls = True
        return a
    if "oha-h3" in a.tools:
        p.error("oha-h3 speaks HTTP/3: give --h3")
    if a.h2:
        if not tools_given:
            a.tools = ["benchctl", "h2load"]
        bad = [t for t in a.tools if t not in H2_TOOLS]
        if bad:
            p.error(f"--h2 compares {', '.join(H2_TOOLS)} only, not {', '.join(bad)}")
        a.modes = ["h2"]
        return a
    if "h2load" in a.tools:
        p.error("h2load speaks HTTP/2: give --h2")
    for t in a.tools:
        if t not in TOOLS:
            p.error(f"unknown tool {t!r} (known: {', '.join(TOOLS)})")
    for m in a.modes:
        if m not in MODES:
            p.error(f"unknown mode {m!r} (known: {', '.join(MODES)})")
    return a


def find_tools(args: argparse.Namespace) -> tuple[dict[str, Tool], dict[str, str]]:
    tools: dict[str, Tool] = {}
    skipped: dict[str, str] = {}
    for name in args.tools:
        if name.startswith("floor-"):
            try:
                path = TOOL_CLASSES[name].build()
            except (Fatal, OSError, subprocess.TimeoutExpired) as e:
                hint = " (liburing-dev: ./x bench-deps)" if name == "floor-uring" else ""
                skipped[name] = f"could not be compiled: {e}{hint}"
                log(f"{name}: could not be compiled, skipped: {e}")
                continue
        elif name == "benchctl-base":
            path = args.base or ""
            if not os.access(path, os.X_OK):
                raise Fatal("benchctl-base needs --base PATH: another benchctl binary to compare with")
        elif name.startswith("benchctl"):
            path = args.benchctl
            if not os.access(path, os.X_OK):
                raise Fatal(f"{path} is missing: build it first with `cargo build --release -p benchctl`")
        elif name == "oha-h3":
            path = str(OHA_H3) if os.access(OHA_H3, os.X_OK) else ""
            if not path:
                skipped[name] = "not installed (cargo install oha --features http3 --root target/oha-h3; ./x bench-deps does it)"
                log(f"{name}: not installed, skipped")
                continue
        else:
            path = shutil.which(name) or ""
            if not path and name == "oha":
                cargo_bin = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo")) / "bin" / "oha"
                path = str(cargo_bin) if os.access(cargo_bin, os.X_OK) else ""
            if not path:
                hint = {"oha": "cargo install oha --locked", "h2load": "apt-get install nghttp2-client (./x bench-deps does it)"}.get(name, "./x bench-deps")
                skipped[name] = f"not installed ({hint})"
                log(f"{name}: not installed, skipped")
                continue
        tools[name] = TOOL_CLASSES[name](path)
    return tools, skipped


def choose_cpus(args: argparse.Namespace) -> tuple[int | None, int | None]:
    if shutil.which("taskset") is None:
        log("taskset not found (util-linux): running unpinned")
        return None, None
    allowed = os.sched_getaffinity(0)
    if args.client_cpu == args.server_cpu or not {args.client_cpu, args.server_cpu} <= allowed:
        log(f"CPUs {args.client_cpu} and {args.server_cpu} are not two distinct usable CPUs "
            f"(allowed: {sorted(allowed)}): running unpinned, figures are less comparable")
        return None, None
    return args.client_cpu, args.server_cpu


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    client_cpu, server_cpu = choose_cpus(args)
    cfg = Config(
        rounds=args.rounds,
        seconds=args.seconds,
        close_requests=args.close_requests,
        client_cpu=client_cpu,
        server_cpu=server_cpu,
        streams=args.streams,
    )
    tools, skipped = find_tools(args)

    # SIGTERM takes the same path as Ctrl-C, so nginx is always stopped.
    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)

    host = host_facts()
    # Tools that cannot take part in a mode sit it out, with the reason in its table.
    mode_skips = {
        ("pipeline", name): "cannot pipeline HTTP/1.1 requests" for name, tool in tools.items() if not tool.pipelines
    }
    for mode in MODES:
        for name, tool in tools.items():
            if tool.modes is not None and mode not in tool.modes:
                mode_skips[(mode, name)] = f"a floor reference for {', '.join(tool.modes)} only"
    script_dir = Path(tempfile.mkdtemp(prefix="benchctl-peers-scripts-"))
    for tool in tools.values():
        if isinstance(tool, Wrk):
            tool.script_dir = script_dir
    for name, tool in tools.items():
        if isinstance(tool, Benchctl):
            tool.h2 = args.h2
            tool.h3 = args.h3
    if args.h3:
        nginx = Caddy(server_cpu) if args.h3_server == "caddy" else NginxQuic(server_cpu)
    else:
        nginx = Nginx(server_cpu, tls=args.tls, h2=args.h2)
    results: list[RunResult] = []
    try:
        if args.client_quota is not None:
            cfg.quota = CpuQuota(args.client_quota)
        nginx.start()
        url = nginx.url()
        log(f"server ({nginx.version()}) on {url}, CPU {server_cpu}; clients on CPU {client_cpu}")

        for name, tool in list(tools.items()):
            why = smoke(tool, url, cfg)
            if why:
                log(f"{name}: smoke run failed, skipped: {why}")
                skipped[name] = f"smoke run failed: {why}"
                del tools[name]

        order = [t for t in args.tools if t in tools]
        plans = {}
        for mode in args.modes:
            in_mode = [t for t in order if (mode, t) not in mode_skips]
            plan = [(rnd, name) for rnd in range(cfg.rounds) for name in round_order(in_mode, mode, rnd)]
            if not plan:
                continue
            if mode in BRACKETED_MODES and "benchctl" in in_mode and plan[-1][1] != "benchctl":
                # The last run gets a benchctl run after it too.
                plan.append((cfg.rounds - 1, "benchctl"))
            plans[mode] = plan
        total = sum(len(p) for p in plans.values())
        done = 0
        # One mode after the other, its rounds back to back: the runs a paired ratio compares
        # are then seconds apart, not minutes (a close-mode round waits for TIME_WAIT to drain),
        # which on a shared machine is the difference between a ratio and noise.
        for mode in args.modes:
            for rnd, name in plans.get(mode, []):
                if mode == "close" and args.time_wait_limit > 0:
                    wait_for_time_wait(nginx.port, args.time_wait_limit)
                else:
                    time.sleep(0.5)
                done += 1
                r = run_one(tools[name], mode, url, cfg, rnd + 1, nginx)
                results.append(r)
                if r.ok:
                    if mode in ("keep-alive", "h2"):
                        cfg.rates_seen.setdefault(name, []).append(r.requests_per_second)
                    log(
                        f"[{done}/{total}] round {rnd + 1} {mode:10} {name:14} "
                        f"{r.requests_per_second:>10,.0f} req/s  cpu {r.cpu_s:.2f}s"
                        + (f"  failed {r.failed}" if r.failed else "")
                        + ("  PORT EXHAUSTION" if r.port_exhaustion else "")
                    )
                else:
                    log(f"[{done}/{total}] round {rnd + 1} {mode:10} {name:14} FAILED: {r.error}")
        nginx_version = nginx.version()
    except KeyboardInterrupt:
        log("interrupted; nginx stopped, nothing written")
        return 130
    finally:
        nginx.stop()
        shutil.rmtree(script_dir, ignore_errors=True)
        if cfg.quota:
            cfg.quota.remove()

    # Keep the table in the order asked for, skipped tools included.
    summary = summarise(results, args.tools, skipped, args.modes, mode_skips)
    print(render_text(summary, cfg))

    if not args.no_write:
        versions = {name: tool.version() for name, tool in tools.items()}
        reproduce = "python3 bench/peers.py " + " ".join(argv) if argv else "just bench   # or: python3 bench/peers.py"
        # One example command per tool and mode, as run (first round), with the binary's plain name.
        commands = []
        seen = set()
        for r in results:
            if (r.tool, r.mode) in seen or not r.command:
                continue
            seen.add((r.tool, r.mode))
            cmd = [os.path.basename(a) if i == 0 else ("URL" if a == url else a) for i, a in enumerate(r.command)]
            commands.append(f"{r.mode:>10}: " + " ".join(shell_quote(a) for a in cmd))
        meta = {
            "source": git_describe(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "reproduce": reproduce.strip(),
            "nginx": nginx_version,
            "server_cpu": server_cpu,
            "client_cpu": client_cpu,
            "versions": versions,
            "commands": commands,
            "tls": args.tls,
            "h2": args.h2,
            "h3": args.h3,
            "h3_server": args.h3_server if args.h3 else None,
            "client_quota": cfg.quota.describe() if cfg.quota else None,
            **host,
        }
        out_dir = Path(args.out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        if args.h3:
            stem = "peers-h3" if args.h3_server == "nginx" else "peers-h3-caddy"
        elif args.h2:
            stem = "peers-h2-tls" if args.tls else "peers-h2c"
        else:
            stem = "peers-tls" if args.tls else "peers"
            if args.modes != list(MODES):
                # A run of some modes only does not replace the report of them all.
                stem += "-" + "-".join(args.modes)
        if (args.h2 or args.h3) and cfg.streams != STREAMS:
            stem += f"-streams{cfg.streams}"
        if cfg.quota:
            stem += "-capped"
        md = out_dir / f"{stem}-latest.md"
        js = out_dir / f"{stem}-latest.json"
        write_atomic(md, render_markdown(summary, cfg, meta))
        payload = {
            "meta": meta,
            "config": {k: v for k, v in asdict(cfg).items() if k not in ("rates_seen", "quota")},
            "summary": summary,
            "runs": [{**asdict(r), "cpu_per_100k": r.cpu_per_100k} for r in results],
        }
        write_atomic(js, json.dumps(payload, indent=2) + "\n")
        # The history: every run's table kept under its date and commit.
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M")
        history = out_dir / "history" / f"{stem}-{stamp}-{meta['source']}.md"
        history.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(history, render_markdown(summary, cfg, meta))
        log(f"wrote {rel(md)}, {rel(js)} and {rel(history)}")

    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Fatal as e:
        print(f"peers: error: {e}", file=sys.stderr)
        sys.exit(2)
