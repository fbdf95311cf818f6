"""Tornado static file server for benchctl: /srv/www on $BENCH_ADDR:$BENCH_PORT.

One process, one thread, one IOLoop: that is how Tornado runs unless it is told to fork
(HTTPServer.start(n)), and how the hello-world comparison being re-run started it
(`python app.py`). The container is pinned to the benchmark's server CPUs like the others, so a
single-threaded server uses one of them; that is part of what the comparison shows.

No access log (Tornado's per-request log is replaced by one that only reports server errors),
no gzip (compress_response stays off), no directory listings (StaticFileHandler answers 403 for
a directory without an index).
"""

import logging
import os
import signal
import ssl
import sys

import tornado.httpserver
import tornado.ioloop
import tornado.netutil
import tornado.web

DOCROOT = "/srv/www"


class IndexHandler(tornado.web.StaticFileHandler):
    """`/` serves /srv/www/index.html, with the same headers as any other static file."""

    async def get(self, include_body=True):
        await super().get("index.html", include_body=include_body)

    async def head(self):
        # Without this a HEAD / is answered 405 (a handler answers only the methods it defines).
        await self.get(include_body=False)


def log_errors_only(handler):
    # Called once per request; logging every request would cost more than serving a small file.
    if handler.get_status() >= 500:
        logging.getLogger("tornado.access").error(
            "%d %s", handler.get_status(), handler._request_summary()
        )


# Where the run's certificate and key are mounted when BENCH_TLS=1.
TLS_DIR = "/etc/benchctl/tls"


def main():
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    port = int(os.environ["BENCH_PORT"])
    # The address the entrypoint checked, bare (an IPv6 one without brackets); 127.0.0.1 when
    # unset, as when serve.py is started by hand.
    address = (os.environ.get("BENCH_ADDR") or "127.0.0.1").strip("[]")
    app = tornado.web.Application(
        [
            (r"/", IndexHandler, {"path": DOCROOT}),
            # StaticFileHandler defines get() and head(), sets Content-Length, Last-Modified and
            # ETag, and answers 304/206 like a web server's static file module.
            (r"/(.+)", tornado.web.StaticFileHandler,
             {"path": DOCROOT, "default_filename": "index.html"}),
        ],
        log_function=log_errors_only,
        compress_response=False,
        static_hash_cache=True,
    )
    # That address only, never all of them. Tornado's default listen backlog is 128; a burst of
    # ab -c 300 connects would overflow it, so use the same backlog as the other servers.
    sockets = tornado.netutil.bind_sockets(port, address=address, backlog=4096)
    # BENCH_TLS=1 (checked by the entrypoint): HTTPS with the run's certificate and key.
    ssl_options = None
    if os.environ.get("BENCH_TLS") == "1":
        ssl_options = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ssl_options.minimum_version = ssl.TLSVersion.TLSv1_2
        ssl_options.load_cert_chain(TLS_DIR + "/cert.pem", TLS_DIR + "/key.pem")
    server = tornado.httpserver.HTTPServer(app, xheaders=False, ssl_options=ssl_options)
    server.add_sockets(sockets)

    loop = tornado.ioloop.IOLoop.current()

    def stop(signum, frame):
        # As PID 1 a process gets no default SIGTERM handling: stop explicitly so that
        # `docker stop` ends the container at once instead of after its timeout.
        loop.add_callback_from_signal(loop.stop)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    loop.start()


if __name__ == "__main__":
    main()
