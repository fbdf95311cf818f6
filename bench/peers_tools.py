#!/usr/bin/env python3
"""How the peer benchmark (bench/peers.py) runs one client and reads its answer: a run's
result, the child process with its CPU time, the optional CPU quota, and one class per tool.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from typing import TYPE_CHECKING

from peers_common import (
    CONCURRENCY,
    Fatal,
    FLOOR_BUILD,
    FLOOR_DIR,
    PIPELINE_DEPTH,
    PORT_EXHAUSTION_PATTERNS,
    WRK_PIPELINE_LUA,
)

if TYPE_CHECKING:
    from peers import Config

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
