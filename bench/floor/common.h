/* What both floor clients share: their arguments, the request, connecting, and finding where a
 * response ends. A floor client does the least a keep-alive HTTP/1.1 load generator can do per
 * request (send the request, read the response to its last byte, count it): no timing, no
 * histogram, no checks beyond the status line. It is the reference benchctl's per-request
 * cost is measured against (bench/peers.py --tools ...,floor-epoll,floor-uring).
 *
 * Usage: CLIENT HOST PORT PATH CONNECTIONS SECONDS [close]
 * With "close", a new connection per request: an HTTP/1.0 request, the response read to the
 * server's close (as ab without -k), then the client's close. Prints one line: "requests N
 * seconds S failed F". Only for 127.0.0.1 or ::1 by the caller's choice; it runs for SECONDS
 * and stops. */
#ifndef FLOOR_COMMON_H
#define FLOOR_COMMON_H

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF 16384

struct args {
    const char *host;
    int port;
    const char *path;
    int conns;
    double seconds;
    int close;
};

static struct args parse_args(int argc, char **argv) {
    if (argc != 6 && !(argc == 7 && strcmp(argv[6], "close") == 0)) {
        fprintf(stderr, "usage: %s HOST PORT PATH CONNECTIONS SECONDS [close]\n", argv[0]);
        exit(2);
    }
    struct args a = {argv[1], atoi(argv[2]), argv[3], atoi(argv[4]), atof(argv[5]), argc == 7};
    if (a.port <= 0 || a.port > 65535 || a.conns <= 0 || a.conns > 4096 || a.seconds <= 0 || a.seconds > 600) {
        fprintf(stderr, "%s: bad arguments (port 1-65535, 1-4096 connections, 0-600 s)\n", argv[0]);
        exit(2);
    }
    return a;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int request(const struct args *a, char *out, size_t cap) {
    return snprintf(out, cap, "GET %s HTTP/1.%d\r\nHost: %s:%d\r\n\r\n", a->path, a->close ? 0 : 1, a->host,
                    a->port);
}

/* HOST:PORT as a socket address (IPv4 or IPv6 literal); exits when it is not one. */
static socklen_t address(const struct args *a, struct sockaddr_storage *out) {
    struct sockaddr_storage ss;
    socklen_t len;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, a->host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(a->port);
        len = sizeof *v4;
    } else if (inet_pton(AF_INET6, a->host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(a->port);
        len = sizeof *v6;
    } else {
        fprintf(stderr, "floor: %s is not an address\n", a->host);
        exit(2);
    }
    *out = ss;
    return len;
}

/* A connected TCP socket to HOST:PORT, blocking; exits on failure. */
static int connect_to(const struct args *a) {
    struct sockaddr_storage ss;
    socklen_t len = address(a, &ss);
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&ss, len) < 0) {
        perror("floor: connect");
        exit(1);
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* Where the first response in buf[0..have) ends: its length when it is all there, 0 when more
 * is to come, -1 when it is not a response with a Content-Length (chunked bodies are not read:
 * the floor clients are for static pages). *ok says whether its status was 2xx. */
static long response_end(const char *buf, size_t have, int *ok) {
    const char *end = memmem(buf, have, "\r\n\r\n", 4);
    if (!end)
        return have >= BUF ? -1 : 0;
    size_t head = (size_t)(end - buf) + 4;
    if (have < 12 || memcmp(buf, "HTTP/1.", 7) != 0)
        return -1;
    *ok = buf[9] == '2';
    long body = -1;
    for (const char *p = buf; p < end;) {
        const char *eol = memmem(p, (size_t)(end - p) + 2, "\r\n", 2);
        if (!eol)
            break;
        if ((size_t)(eol - p) > 15 && strncasecmp(p, "content-length:", 15) == 0)
            body = strtol(p + 15, NULL, 10);
        p = eol + 2;
    }
    if (body < 0)
        return -1;
    return have >= head + (size_t)body ? (long)(head + (size_t)body) : 0;
}

#endif
