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
import http.client
import json
import math
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_BENCHCTL = REPO / "target" / "release" / "benchctl"
DEFAULT_OUT_DIR = REPO / "bench" / "results"
NGINX = "/usr/sbin/nginx"
# Debian's Caddy package, unpacked (not installed: that would start a service) by ./x bench-deps.
CADDY = str(REPO / "target" / "caddy" / "usr" / "bin" / "caddy")
# oha with its HTTP/3 support, installed apart from the plain one (./x bench-deps).
OHA_H3 = REPO / "target" / "oha-h3" / "bin" / "oha"
BODY = b"Hello, World!"  # 13 bytes, as in the posts being reproduced

TOOLS = (
    "benchctl",
    "benchctl-woken",
    "benchctl-epoll",
    "benchctl-uring",
    "benchctl-base",
    "wrk",
    "ab",
    "oha",
    "oha-h3",
    "h2load",
    "floor-epoll",
    "floor-uring",
)
# What runs when --tools is not given (h2load only with --h2).
DEFAULT_TOOLS = ("benchctl", "benchctl-woken", "wrk", "ab", "oha", "floor-epoll", "floor-uring")
# The floor references' C sources (bench/floor/) and where they are compiled to.
FLOOR_DIR = REPO / "bench" / "floor"
FLOOR_BUILD = REPO / "target" / "floor"
MODES = ("keep-alive", "close", "pipeline")
CONCURRENCY = {"keep-alive": 100, "close": 300, "pipeline": 100, "h2": 10, "h3": 10}
# Pipelined mode: requests written back to back on each connection (benchctl --pipeline, the
# argument of wrk's script).
PIPELINE_DEPTH = 16
# Modes where the server is the bottleneck and benchctl runs between every two other runs.
BRACKETED_MODES = ("keep-alive", "pipeline", "h2", "h3")
# wrk's pipelining is a Lua script: `init` builds DEPTH copies of wrk's own request (method,
# path, headers as wrk sends them) and `request` hands wrk the whole batch for every write;
# wrk counts the responses, one per request.
WRK_PIPELINE_LUA = """local depth = 16
local batch = nil

function init(args)
  depth = tonumber(args[1]) or depth
  batch = string.rep(wrk.format(), depth)
end

function request()
  return batch
end
"""
# HTTP/2 and HTTP/3: streams open at once on each connection (benchctl --streams, h2load -m,
# oha -p) unless --streams says otherwise.
STREAMS = 10
H2_TOOLS = ("benchctl", "benchctl-epoll", "benchctl-uring", "benchctl-base", "h2load")
H3_TOOLS = ("benchctl", "benchctl-base", "oha-h3")

# Close mode fills the TIME_WAIT table; the local port range is 32768-60999 (28k ports).
TIME_WAIT_LIMIT = 5000
TIME_WAIT_MAX_WAIT_S = 90.0
PORT_EXHAUSTION_PATTERNS = (
    "Cannot assign requested address",
    "EADDRNOTAVAIL",
    "os error 99",
    "AddrNotAvailable",
)


def log(msg: str) -> None:
    print(f"[peers] {msg}", file=sys.stderr, flush=True)


class Fatal(Exception):
    """A problem that ends the benchmark with a clear message and exit status 2."""


# ---------------------------------------------------------------------------------------------
# nginx


class Nginx:
    """The Debian nginx binary with a throw-away prefix; never the system service."""

    def __init__(self, cpu: int | None, tls: bool = False, h2: bool = False, workers: int = 1):
        self.cpu = cpu
        self.tls = tls
        self.h2 = h2
        # More than one worker holds more than 4,096 connections (bench/memory.py).
        self.workers = workers
        self.dir = Path(tempfile.mkdtemp(prefix=f"benchctl-peers-{self.NAME}-"))
        self.proc: subprocess.Popen | None = None
        self.port = 0

    NAME = "nginx"

    def _write_page(self) -> Path:
        """The page, in a folder of the run's own; returns the folder."""
        html = self.dir / "html"
        html.mkdir()
        (html / "index.html").write_bytes(BODY)
        # As root nginx's worker runs as nobody, which must be able to read the page.
        for p in (self.dir, html):
            os.chmod(p, 0o755)
        os.chmod(html / "index.html", 0o644)
        return html

    def _launch(self, conf_name: str, html: Path, argv, env=None) -> None:
        """Writes the config for a free port and starts the server on it, up to five ports
        when another process takes the port between the probe and the server's bind."""
        for attempt in range(5):
            self.port = free_port()
            conf = self.dir / conf_name
            conf.write_text(self._config(html))
            cmd = pin(self.cpu) + argv(conf)
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
            if self._wait_ready(10.0):
                return
            err = self._stop_and_collect()
            if "address already in use" in err.lower() and attempt < 4:
                continue
            raise Fatal(f"{self.NAME} did not start on 127.0.0.1:{self.port}: {err.strip()[-400:] or 'no output'}")

    def start(self) -> None:
        if not os.access(NGINX, os.X_OK):
            raise Fatal(f"{NGINX} not found: apt-get install nginx (./x bench-deps does it)")
        html = self._write_page()
        if self.tls:
            self._make_certificate()
        self._launch("nginx.conf", html, lambda conf: [NGINX, "-p", str(self.dir), "-c", str(conf), "-e", str(self.dir / "error.log")])

    def _make_certificate(self) -> None:
        """A self-signed ECDSA P-256 certificate for 127.0.0.1, made for this run."""
        if shutil.which("openssl") is None:
            raise Fatal("--tls needs openssl to make the certificate: apt-get install openssl")
        cmd = [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
            "-keyout", str(self.dir / "key.pem"), "-out", str(self.dir / "cert.pem"),
        ]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise Fatal(f"openssl could not make a certificate: {out.stderr.strip()}")
        for name in ("key.pem", "cert.pem"):
            os.chmod(self.dir / name, 0o644)

    def _config(self, html: Path) -> str:
        d = self.dir
        listen = f"listen 127.0.0.1:{self.port} backlog=4096"
        if self.h2:
            # Over TLS, HTTP/2 by ALPN (HTTP/1.1 for clients that do not ask for it); in
            # cleartext, HTTP/2 by prior knowledge only.
            listen += " http2"
        if self.tls:
            # No session cache and no tickets: every new connection is a full handshake.
            listen += f""" ssl;
        ssl_certificate {d}/cert.pem;
        ssl_certificate_key {d}/key.pem;
        ssl_session_cache off;
        ssl_session_tickets off"""
        return f"""# written by bench/peers.py for one benchmark run
worker_processes {self.workers};
worker_rlimit_nofile {4200 * self.workers};
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    keepalive_timeout 65;
    default_type text/html;
    client_body_temp_path {d}/client_body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    server {{
        {listen};
        root {html};
        index index.html;
    }}
}}
"""

    def _wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                return False
            try:
                if self.h2 and not self.tls:
                    if self._h2c_ready():
                        return True
                    raise OSError("no HTTP/2 SETTINGS yet")
                if self.tls:
                    import ssl

                    ctx = ssl.create_default_context()
                    ctx.check_hostname = False
                    ctx.verify_mode = ssl.CERT_NONE
                    conn = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=1.0, context=ctx)
                else:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1.0)
                conn.request("GET", "/")
                resp = conn.getresponse()
                body = resp.read()
                conn.close()
                if resp.status == 200 and body == BODY:
                    return True
                raise Fatal(f"nginx answered {resp.status} with {len(body)} bytes, expected 200 and {BODY!r}")
            except (OSError, http.client.HTTPException):
                time.sleep(0.05)
        return False

    def _h2c_ready(self) -> bool:
        """The cleartext HTTP/2 listener answers a client preface with its SETTINGS."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=1.0) as s:
            s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0]))
            head = s.recv(9)
            return len(head) >= 4 and head[3] == 4

    def _stop_and_collect(self) -> str:
        err = ""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()  # SIGTERM: nginx's fast shutdown
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(5)
            if self.proc.stderr is not None:
                err = self.proc.stderr.read().decode(errors="replace")
                self.proc.stderr.close()
            self.proc = None
        errlog = self.dir / "error.log"
        if errlog.exists():
            err += errlog.read_text(errors="replace")
        return err

    def url(self) -> str:
        scheme = "https" if self.tls else "http"
        return f"{scheme}://127.0.0.1:{self.port}/"

    def version(self) -> str:
        out = subprocess.run([NGINX, "-v"], capture_output=True, text=True, timeout=10)
        return (out.stderr or out.stdout).strip().removeprefix("nginx version: ")

    def stop(self) -> None:
        self._stop_and_collect()
        shutil.rmtree(self.dir, ignore_errors=True)

    def cpu_s(self) -> float | None:
        """CPU time the server's processes (its master and workers) have used so far, from the
        scheduler's own account of each thread (/proc/PID/task/TID/schedstat, nanoseconds, not
        clock ticks); None when it cannot be read."""
        if self.proc is None:
            return None
        total, pids = 0, [self.proc.pid]
        try:
            while pids:
                pid = pids.pop()
                for task in Path(f"/proc/{pid}/task").iterdir():
                    total += int((task / "schedstat").read_text().split()[0])
                    pids += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError, IndexError):
            return None
        return total / 1e9


class Caddy(Nginx):
    """Debian's Caddy binary (quic-go inside) with a throw-away configuration: HTTPS on TCP and
    HTTP/3 on UDP at the same port, one site serving the page, no admin endpoint, no logs,
    Go's scheduler on one thread (GOMAXPROCS=1) as nginx has one worker."""

    NAME = "caddy"

    def __init__(self, cpu: int | None):
        super().__init__(cpu, tls=True)

    def start(self) -> None:
        if not os.access(CADDY, os.X_OK):
            raise Fatal(f"{CADDY} not found: ./x bench-deps unpacks Debian's caddy package there")
        html = self._write_page()
        self._make_certificate()
        env = dict(os.environ, GOMAXPROCS="1", XDG_CONFIG_HOME=str(self.dir / "config"), XDG_DATA_HOME=str(self.dir / "data"))
        self._launch("Caddyfile", html, lambda conf: [CADDY, "run", "--config", str(conf), "--adapter", "caddyfile"], env)

    def _config(self, html: Path) -> str:
        d = self.dir
        return f"""# written by bench/peers.py for one benchmark run
{{
	admin off
	auto_https off
	log {{
		output stderr
		level ERROR
	}}
	servers {{
		protocols h1 h2 h3
	}}
}}
https://:{self.port} {{
	bind 127.0.0.1
	tls {d}/cert.pem {d}/key.pem
	root * {html}
	file_server
}}
"""

    def version(self) -> str:
        out = subprocess.run([CADDY, "version"], capture_output=True, text=True, timeout=10)
        return "Caddy " + (out.stdout.strip().split() or [""])[0]


class NginxQuic(Nginx):
    """nginx 1.26 with its HTTP/3 module, which the host's Debian does not ship: benchctl's
    nginx-trixie image (built here with `benchctl images build nginx-trixie`), run by Docker in
    the host's network namespace, pinned to the server CPU, with the kind's own configuration
    (one worker on one CPU; HTTPS and HTTP/2 on TCP, HTTP/3 on UDP at one port) and a
    certificate made for the run. Only the clients' CPU is measured, so the container costs the
    comparison nothing."""

    NAME = "nginx-quic"

    def __init__(self, cpu: int | None):
        super().__init__(cpu, tls=True)
        self.image = ""
        self.container = f"benchctl-peers-nginx-quic-{os.getpid()}"

    def start(self) -> None:
        if shutil.which("docker") is None:
            raise Fatal("--h3 on nginx runs its image with Docker, and there is no docker CLI (./x bench-deps starts the engine)")
        self.image = self._build_image()
        html = self._write_page()
        self._make_certificate()
        cpus = ["--cpuset-cpus", str(self.cpu)] if self.cpu is not None else []
        self._launch(
            "nginx.env",
            html,
            lambda _conf: ["docker", "run", "--rm", "--name", self.container, "--network", "host", *cpus,
                           "--read-only", "--tmpfs", "/run", "--tmpfs", "/tmp", "--cap-drop", "ALL",
                           "--security-opt", "no-new-privileges", "--ulimit", "nofile=20000:20000",
                           "-e", f"BENCH_PORT={self.port}", "-e", "BENCH_TLS=1", "-e", "BENCH_HTTP2=1",
                           "-e", "BENCH_HTTP3=1", "-v", f"{html}:/srv/www:ro", "-v", f"{self.dir}:/etc/benchctl/tls:ro",
                           self.image],
        )

    def cpu_s(self) -> float | None:
        # In a container, its processes are not this script's children.
        return None

    def _build_image(self) -> str:
        """The nginx-trixie image's tag, built from docker/nginx-trixie unless it exists."""
        benchctl = Path(os.environ.get("BENCHCTL", DEFAULT_BENCHCTL))
        out = subprocess.run([str(benchctl), "images", "--docker-dir", str(REPO / "docker"), "build", "nginx-trixie"], capture_output=True, text=True, timeout=1800)
        m = re.search(r"benchctl/nginx-trixie:[0-9a-f]{12}", out.stdout + out.stderr)
        if out.returncode != 0 or m is None:
            raise Fatal(f"benchctl images build nginx-trixie failed: {(out.stderr or out.stdout).strip()[-400:]}")
        return m.group(0)

    def _config(self, html: Path) -> str:
        # The image writes its own configuration from the environment: this file only records it.
        return f"BENCH_PORT={self.port} BENCH_TLS=1 BENCH_HTTP2=1 BENCH_HTTP3=1 {self.image}\n"

    def _stop_and_collect(self) -> str:
        # The container goes whatever state its docker client is in.
        subprocess.run(["docker", "rm", "-f", self.container], capture_output=True, timeout=60)
        return super()._stop_and_collect()

    def version(self) -> str:
        out = subprocess.run(["docker", "run", "--rm", "--entrypoint", "nginx", self.image, "-v"], capture_output=True, text=True, timeout=60)
        v = (out.stderr or out.stdout).strip().removeprefix("nginx version: ")
        return f"{v} (Debian trixie, image {self.image})"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pin(cpu: int | None) -> list[str]:
    return ["taskset", "-c", str(cpu)] if cpu is not None else []


# ---------------------------------------------------------------------------------------------
# running one client


@dataclass
class RunResult:
    tool: str
    mode: str
    round: int
    ok: bool
    requests_per_second: float | None = None
    completed: int | None = None
    failed: int | None = None
    cpu_s: float | None = None  # client user + sys, from the child's rusage
    user_s: float | None = None  # the user-space part of cpu_s
    wall_s: float | None = None
    reported_cpu_s: float | None = None  # what benchctl says it used, for cross-checking
    server_cpu_s: float | None = None  # the server's CPU time over the run, where it can be read
    port_exhaustion: bool = False
    error: str | None = None
    command: list[str] = field(default_factory=list)

    @property
    def cpu_per_100k(self) -> float | None:
        if self.cpu_s is None or not self.completed:
            return None
        return self.cpu_s / self.completed * 100_000

    @property
    def user_us_per_request(self) -> float | None:
        if self.user_s is None or not self.completed:
            return None
        return self.user_s / self.completed * 1e6

    @property
    def server_us_per_request(self) -> float | None:
        if self.server_cpu_s is None or not self.completed:
            return None
        return self.server_cpu_s / self.completed * 1e6


def run_child(
    cmd: list[str], timeout: float, quota: "CpuQuota | None" = None
) -> tuple[int, str, str, tuple[float, float], float, bool]:
    """Run cmd to completion; return (status, stdout, stderr, (cpu seconds, of which user),
    wall seconds, timed out).

    The CPU time is the child's own rusage (os.wait4), so nothing else this script does counts.
    Output goes to files, not pipes, so a chatty child can never block on a full pipe.
    With `quota`, the child joins its cgroup before it runs its first instruction of cmd.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        join = quota.join if quota else None
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, preexec_fn=join)
        timed_out = False
        try:
            while True:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid != 0:
                    break
                if time.monotonic() - start > timeout:
                    timed_out = True
                    proc.kill()
                    pid, status, usage = os.wait4(proc.pid, 0)
                    break
                time.sleep(0.02)
        except BaseException:
            # Ctrl-C or an error here: never leave the client running.
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            raise
        proc.returncode = os.waitstatus_to_exitcode(status)  # keep Popen from waiting again
        wall = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        return (
            proc.returncode,
            out.read().decode(errors="replace"),
            err.read().decode(errors="replace"),
            (usage.ru_utime + usage.ru_stime, usage.ru_utime),
            wall,
            timed_out,
        )


class CpuQuota:
    """A CPU-bandwidth cgroup of the script's own (cgroup v2's cpu.max, or v1's cpu controller):
    every client joins it, so that none uses more than `fraction` of a CPU however busy it
    would be: what each generator can send with the same share of a CPU. Removed when the run
    ends, and at once when it cannot be set up."""

    PERIOD_US = 100_000

    def __init__(self, fraction: float):
        self.fraction = fraction
        self.quota_us = max(1000, int(fraction * self.PERIOD_US))
        name = f"benchctl-peers-{os.getpid()}"
        v2 = Path("/sys/fs/cgroup/cgroup.subtree_control")
        if v2.exists():
            # The children of the root get the cpu controller only where the root enables it.
            if "cpu" not in v2.read_text().split():
                raise Fatal("--client-quota: this cgroup v2 hierarchy gives its children no cpu controller")
            self.path = Path("/sys/fs/cgroup") / name
            limits = {"cpu.max": f"{self.quota_us} {self.PERIOD_US}\n"}
        else:
            root = Path("/sys/fs/cgroup/cpu")
            if not (root / "cpu.cfs_quota_us").exists():
                raise Fatal("--client-quota needs cgroup v2 or v1's cpu controller at /sys/fs/cgroup/cpu")
            self.path = root / name
            limits = {"cpu.cfs_period_us": f"{self.PERIOD_US}\n", "cpu.cfs_quota_us": f"{self.quota_us}\n"}
        try:
            self.path.mkdir()
        except OSError as e:
            raise Fatal(f"--client-quota: cannot make {self.path} (root only): {e}") from None
        try:
            for file, value in limits.items():
                (self.path / file).write_text(value)
        except OSError as e:
            self.remove()
            raise Fatal(f"--client-quota: cannot set {self.path}'s limit: {e}") from None
        self.procs = str(self.path / "cgroup.procs")

    def join(self) -> None:
        """Moves the calling process into the cgroup (run in the child between fork and exec)."""
        fd = os.open(self.procs, os.O_WRONLY)
        try:
            os.write(fd, b"0\n")
        finally:
            os.close(fd)

    def describe(self) -> str:
        return (f"every client capped at {self.fraction:g} of a CPU (a CPU-bandwidth cgroup: "
                f"{self.quota_us / 1000:g} ms per {self.PERIOD_US // 1000} ms); a client busy up to the "
                "cap set its own rate")

    def remove(self) -> None:
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)  # a client still leaving it


def number(pattern: str, text: str, cast=float):
    m = re.search(pattern, text, re.MULTILINE)
    return cast(m.group(1)) if m else None


class Tool:
    """How to call one load generator and read its answer."""

    name = ""
    binary = ""
    # Whether the tool can pipeline HTTP/1.1 requests (the pipeline mode).
    pipelines = False
    # The modes it takes part in (None: every one it can).
    modes: tuple[str, ...] | None = None
    # Seconds the tool may wait after its load before it exits (its runs' time limits grow by
    # as much).
    linger_s = 0.0

    def __init__(self, path: str):
        self.path = path

    def command(self, mode: str, url: str, cfg: "Config", round_no: int) -> list[str]:
        raise NotImplementedError

    def smoke_command(self, url: str) -> list[str]:
        raise NotImplementedError

    def parse(self, stdout: str, stderr: str, r: RunResult) -> None:
        raise NotImplementedError

    def version(self) -> str:
        return ""


class Benchctl(Tool):
    name = "benchctl"
    h2 = False
    h3 = False
    pipelines = True

    def command(self, mode, url, cfg, round_no):
        c = CONCURRENCY[mode]
        cmd = [self.path, "load", url, "-c", str(c)]
        if mode == "h2":
            cmd += ["--h2", "--streams", str(cfg.streams), "--duration", f"{cfg.seconds}s"]
        elif mode == "h3":
            cmd += ["--h3", "-k", "--streams", str(cfg.streams), "--duration", f"{cfg.seconds}s"]
        elif mode == "keep-alive":
            cmd += ["-k", "--duration", f"{cfg.seconds}s"]
        elif mode == "pipeline":
            cmd += ["-k", "--http1.1", "--pipeline", str(PIPELINE_DEPTH), "--duration", f"{cfg.seconds}s"]
        else:
            cmd += ["-n", str(cfg.close_requests)]
        if cfg.client_cpu is not None:
            cmd += ["--cpus", str(cfg.client_cpu)]
        return cmd + ["--json"]

    def smoke_command(self, url):
        h2 = ["--h2", "--streams", "2"] if self.h2 else []
        if self.h3:
            h2 = ["--h3", "-k", "--streams", "2"]
        return [self.path, "load", url, "-n", "100", "-c", "2", *h2, "--json"]

    def parse(self, stdout, stderr, r):
        try:
            data = json.loads(stdout)
        except json.JSONDecodeError as e:
            raise ValueError(f"--json output is not JSON ({e}): {stdout[:200]!r}") from None
        if not isinstance(data, dict) or "requests_per_second" not in data:
            raise ValueError(f"--json output lacks requests_per_second: {stdout[:200]!r}")
        r.requests_per_second = float(data["requests_per_second"])
        r.completed = int(data["complete"]) if "complete" in data else None
        r.failed = int(data["failed"]) if "failed" in data else None
        if data.get("client_cpu_s") is not None:
            r.reported_cpu_s = float(data["client_cpu_s"])

    def version(self):
        try:
            out = subprocess.run([self.path, "--version"], capture_output=True, text=True, timeout=10)
            lines = out.stdout.strip().splitlines() if out.returncode == 0 else []
            return lines[0][:80] if lines else ""
        except (OSError, subprocess.TimeoutExpired):
            return ""


class BenchctlWoken(Benchctl):
    """benchctl timing responses when it reads them and woken by each one, as ab and wrk are
    (--user-timestamps): the row that shows what receive stamps and coalesced wake-ups change."""

    name = "benchctl-woken"

    def command(self, mode, url, cfg, round_no):
        cmd = super().command(mode, url, cfg, round_no)
        return cmd[:-1] + ["--user-timestamps"] + cmd[-1:]


class BenchctlBase(Benchctl):
    """Another build of benchctl (--base PATH, e.g. the last commit's), run exactly as `benchctl`
    is: what a change did to the generator, paired in the same sitting."""

    name = "benchctl-base"


class BenchctlEngine(Benchctl):
    """benchctl on one engine (--engine), where `benchctl` takes whichever its automatic
    choice picks (HTTP/3 runs on epoll only)."""

    engine = "epoll"

    def command(self, mode, url, cfg, round_no):
        cmd = super().command(mode, url, cfg, round_no)
        return cmd[:-1] + ["--engine", self.engine] + cmd[-1:]


class BenchctlEpoll(BenchctlEngine):
    name = "benchctl-epoll"
    engine = "epoll"


class BenchctlUring(BenchctlEngine):
    name = "benchctl-uring"
    engine = "uring"


class Wrk(Tool):
    name = "wrk"
    pipelines = True
    # Where the pipeline script is written for the run (set by main).
    script_dir: Path | None = None

    def pipeline_script(self) -> str:
        assert self.script_dir is not None, "the pipeline script's directory is set before any run"
        path = self.script_dir / "pipeline.lua"
        if not path.exists():
            path.write_text(WRK_PIPELINE_LUA)
        return str(path)

    def command(self, mode, url, cfg, round_no):
        c = CONCURRENCY[mode]
        cmd = [self.path, "-t1", f"-c{c}", f"-d{cfg.seconds}s"]
        if mode == "close":
            cmd += ["-H", "Connection: close"]
        if mode == "pipeline":
            return cmd + ["-s", self.pipeline_script(), url, "--", str(PIPELINE_DEPTH)]
        return cmd + [url]

    def smoke_command(self, url):
        return [self.path, "-t1", "-c1", "-d1s", url]

    def parse(self, stdout, stderr, r):
        rate = number(r"^Requests/sec:\s+([\d.]+)", stdout)
        if rate is None:
            raise ValueError("no 'Requests/sec:' line in wrk's output")
        r.requests_per_second = rate
        r.completed = number(r"^\s*(\d+) requests in", stdout, int)
        m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", stdout)
        errors = sum(int(x) for x in m.groups()) if m else 0
        non2xx = number(r"Non-2xx or 3xx responses: (\d+)", stdout, int) or 0
        r.failed = errors + non2xx
        if m and int(m.group(1)) > 0:
            r.error = f"{m.group(1)} connect errors"

    def version(self):
        out = subprocess.run([self.path, "-v"], capture_output=True, text=True, timeout=10)
        first = (out.stdout or out.stderr).splitlines()
        return first[0].split(" Copyright")[0].strip() if first else ""


class Ab(Tool):
    name = "ab"

    def command(self, mode, url, cfg, round_no):
        c = CONCURRENCY[mode]
        if mode == "keep-alive":
            # ab has no duration flag: size -n from the rates seen so far to take ~--seconds.
            n = cfg.ab_keepalive_requests(c)
            return [self.path, "-q", "-k", "-c", str(c), "-n", str(n), url]
        return [self.path, "-q", "-c", str(c), "-n", str(cfg.close_requests), url]

    def smoke_command(self, url):
        return [self.path, "-q", "-n", "100", "-c", "2", url]

    def parse(self, stdout, stderr, r):
        rate = number(r"^Requests per second:\s+([\d.]+)", stdout)
        if rate is None:
            raise ValueError("no 'Requests per second:' line in ab's output")
        r.requests_per_second = rate
        r.completed = number(r"^Complete requests:\s+(\d+)", stdout, int)
        failed = number(r"^Failed requests:\s+(\d+)", stdout, int) or 0
        non2xx = number(r"^Non-2xx responses:\s+(\d+)", stdout, int) or 0
        r.failed = failed + non2xx

    def version(self):
        out = subprocess.run([self.path, "-V"], capture_output=True, text=True, timeout=10)
        m = re.search(r"Version ([^\s,]+)", out.stdout)
        return f"ApacheBench {m.group(1)}" if m else ""


class Oha(Tool):
    name = "oha"

    def __init__(self, path):
        super().__init__(path)
        self.extra: list[str] = []
        try:
            help_text = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.TimeoutExpired):
            help_text = ""
        # One runtime thread: the client has exactly one CPU, as wrk -t1 has.
        if "--worker-threads" in help_text:
            self.extra += ["--worker-threads", "1"]
        self.json_flags = ["--output-format", "json"] if "--output-format" in help_text else ["-j"]

    def tls_flags(self, url: str) -> list[str]:
        # The run's certificate is self-signed; oha verifies by default, the others do not.
        return ["--insecure"] if url.startswith("https:") else []

    def command(self, mode, url, cfg, round_no):
        c = CONCURRENCY[mode]
        cmd = [self.path, "--no-tui", *self.json_flags, *self.extra, *self.tls_flags(url), "-c", str(c), "-z", f"{cfg.seconds}s"]
        if mode == "close":
            cmd.append("--disable-keepalive")
        return cmd + [url]

    def smoke_command(self, url):
        return [self.path, "--no-tui", *self.json_flags, *self.tls_flags(url), "-n", "100", "-c", "2", url]

    def parse(self, stdout, stderr, r):
        try:
            data = json.loads(stdout)
        except json.JSONDecodeError as e:
            raise ValueError(f"oha's JSON output is not JSON ({e}): {stdout[:200]!r}") from None
        summary = data.get("summary", {})
        statuses = {int(k): int(v) for k, v in data.get("statusCodeDistribution", {}).items()}
        errors = {k: int(v) for k, v in data.get("errorDistribution", {}).items()}
        total_s = float(summary.get("total") or 0)
        responses = sum(statuses.values())
        # oha's own requestsPerSec counts the requests cut off at the deadline as well; count
        # the answered ones, as wrk and ab do.
        if total_s > 0:
            r.requests_per_second = responses / total_s
        else:
            r.requests_per_second = float(summary["requestsPerSec"])
        r.completed = responses
        deadline = sum(v for k, v in errors.items() if "deadline" in k.lower())
        non2xx = sum(v for k, v in statuses.items() if not 200 <= k < 300)
        r.failed = sum(errors.values()) - deadline + non2xx
        if any(any(p in k for p in PORT_EXHAUSTION_PATTERNS) for k in errors):
            r.port_exhaustion = True
        other = {k: v for k, v in errors.items() if "deadline" not in k.lower()}
        if other:
            r.error = "; ".join(f"{k}: {v}" for k, v in list(other.items())[:3])

    def version(self):
        out = subprocess.run([self.path, "--version"], capture_output=True, text=True, timeout=10)
        return out.stdout.strip()


class OhaH3(Oha):
    """oha built with its HTTP/3 support (experimental there): `--http-version 3`, -c
    connections x -p requests at once on each.

    After its last response each connection sends HTTP/3's GOAWAY and waits for the
    connection to close, which neither side does: it ends at QUIC's idle timeout, 30 s (quinn's
    default), and oha prints nothing until then. Its runs get that much longer to finish, and
    its rate is its responses over the -z window it was given, not over its own total (the
    window plus the wait), and so is its client CPU busy: its CPU time (the wait costs next to
    none) over that window."""

    name = "oha-h3"
    linger_s = 35.0

    def __init__(self, path):
        super().__init__(path)
        self.window_s: float | None = None

    def parse(self, stdout, stderr, r):
        super().parse(stdout, stderr, r)
        if self.window_s and r.completed:
            r.requests_per_second = r.completed / self.window_s
            r.wall_s = self.window_s

    def command(self, mode, url, cfg, round_no):
        c = CONCURRENCY[mode]
        self.window_s = float(cfg.seconds)
        return [
            self.path, "--no-tui", *self.json_flags, *self.extra, "--insecure", "--http-version", "3",
            "-c", str(c), "-p", str(cfg.streams), "-z", f"{cfg.seconds}s", url,
        ]

    def smoke_command(self, url):
        self.window_s = None
        return [self.path, "--no-tui", *self.json_flags, "--insecure", "--http-version", "3", "-n", "100", "-c", "2", url]


class H2load(Tool):
    """nghttp2's h2load: HTTP/2 by prior knowledge for http://, by ALPN for https://."""

    name = "h2load"

    def command(self, mode, url, cfg, round_no):
        c = CONCURRENCY[mode]
        return [self.path, "-t", "1", "-c", str(c), "-m", str(cfg.streams), "-D", str(cfg.seconds), url]

    def smoke_command(self, url):
        return [self.path, "-n", "100", "-c", "2", "-m", "2", url]

    def parse(self, stdout, stderr, r):
        rate = number(r"^finished in [\d.]+m?s, ([\d.]+) req/s", stdout)
        if rate is None:
            raise ValueError("no 'finished in ..., N req/s' line in h2load's output")
        m = re.search(
            r"^requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout",
            stdout,
            re.MULTILINE,
        )
        if not m:
            raise ValueError("no 'requests:' line in h2load's output")
        done, succeeded, failed, errored, timeout = (int(x) for x in m.groups())
        if done == 0:
            raise ValueError("h2load completed no request: " + (stdout.strip().splitlines() or [""])[-1][:120])
        r.requests_per_second = rate
        r.completed = done
        r.failed = failed + errored + timeout
        codes = re.search(r"^status codes: (\d+) 2xx", stdout, re.MULTILINE)
        if codes and int(codes.group(1)) < succeeded:
            r.failed += succeeded - int(codes.group(1))

    def version(self):
        out = subprocess.run([self.path, "--version"], capture_output=True, text=True, timeout=10)
        return out.stdout.strip().splitlines()[0] if out.stdout.strip() else ""


class Floor(Tool):
    """A floor reference (bench/floor/): the least a client does per request, with keep-alive
    or a new connection per request, in C, compiled here on first use. Not a load generator: it
    measures nothing but its count, and runs for --seconds in close mode too."""

    name = "floor-epoll"
    source = "epoll.c"
    libs: tuple[str, ...] = ()
    modes = ("keep-alive", "close")

    @classmethod
    def build(cls) -> str:
        """Compiles the client into target/floor/; returns its path, or raises Fatal."""
        FLOOR_BUILD.mkdir(parents=True, exist_ok=True)
        out = FLOOR_BUILD / cls.name
        src = FLOOR_DIR / cls.source
        newest = max(src.stat().st_mtime, (FLOOR_DIR / "common.h").stat().st_mtime)
        if out.exists() and out.stat().st_mtime >= newest:
            return str(out)
        cc = shutil.which("cc") or shutil.which("gcc")
        if not cc:
            raise Fatal("no C compiler (cc)")
        r = subprocess.run([cc, "-O2", "-Wall", "-o", str(out), str(src), *cls.libs], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise Fatal((r.stderr.strip().splitlines() or ["cc failed"])[-1][:160])
        return str(out)

    def command(self, mode, url, cfg, round_no):
        close = ["close"] if mode == "close" else []
        return [self.path, *self.target(url), str(CONCURRENCY[mode]), str(cfg.seconds), *close]

    def smoke_command(self, url):
        return [self.path, *self.target(url), "2", "1"]

    @staticmethod
    def target(url: str) -> list[str]:
        m = re.match(r"^http://(\[[^]]+\]|[^/:]+):(\d+)(/.*)$", url)
        if not m:
            raise ValueError(f"a floor client takes http://HOST:PORT/PATH, not {url}")
        return [m.group(1).strip("[]"), m.group(2), m.group(3)]

    def parse(self, stdout, stderr, r):
        m = re.search(r"^requests (\d+) seconds ([\d.]+) failed (\d+)$", stdout, re.MULTILINE)
        if not m:
            raise ValueError(f"no 'requests N seconds S failed F' line: {(stderr or stdout)[:200]!r}")
        n, secs, failed = int(m.group(1)), float(m.group(2)), int(m.group(3))
        r.requests_per_second = n / secs if secs > 0 else 0.0
        r.completed, r.failed = n, failed

    def version(self):
        return f"bench/floor/{self.source}"


class FloorUring(Floor):
    """The io_uring floor: batched completions, sends without a completion on success."""

    name = "floor-uring"
    source = "uring.c"
    libs = ("-luring",)


TOOL_CLASSES = {
    "benchctl": Benchctl,
    "benchctl-woken": BenchctlWoken,
    "benchctl-epoll": BenchctlEpoll,
    "benchctl-uring": BenchctlUring,
    "benchctl-base": BenchctlBase,
    "wrk": Wrk,
    "ab": Ab,
    "oha": Oha,
    "oha-h3": OhaH3,
    "h2load": H2load,
    "floor-epoll": Floor,
    "floor-uring": FloorUring,
}


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


# What the measured binaries and the measurement depend on.
BUILD_INPUTS = ["crates", "Cargo.toml", "Cargo.lock", "bench/peers.py"]


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


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Fatal as e:
        print(f"peers: error: {e}", file=sys.stderr)
        sys.exit(2)
