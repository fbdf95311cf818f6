#!/usr/bin/env python3
"""The peer benchmark's shared ground (bench/peers.py): where things are, the modes and their
settings, and the small helpers every part uses.
"""

from __future__ import annotations

import socket
import sys
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


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pin(cpu: int | None) -> list[str]:
    return ["taskset", "-c", str(cpu)] if cpu is not None else []
