#!/usr/bin/env python3
"""The servers the peer benchmark (bench/peers.py) drives: native nginx with a throw-away
prefix, Debian's Caddy, and nginx 1.26 with HTTP/3 in benchctl's image.
"""

from __future__ import annotations

import http.client
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from peers_common import (
    BODY,
    CADDY,
    DEFAULT_BENCHCTL,
    Fatal,
    free_port,
    NGINX,
    pin,
    REPO,
)

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
