/* The floor of an epoll client: one thread, every connection non-blocking in one epoll set,
 * woken by every readable connection (as wrk and ab are). Keep-alive: one send and at least
 * one receive per request. Close: socket, connect, send at once (loopback connects at once),
 * epoll_ctl, receive to the server's close, close. See common.h. */
#include "common.h"
#include <fcntl.h>
#include <sys/epoll.h>

struct conn {
    int fd;
    int sent;
    size_t have;
    char buf[BUF];
};

static char req[1024];
static int req_len;
static struct sockaddr_storage addr;
static socklen_t addr_len;

/* Close mode: a new connection for slot i, its request sent when the socket takes it. */
static void open_one(int ep, struct conn *c, uint32_t i) {
    c->have = 0;
    c->fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0 || (connect(c->fd, (struct sockaddr *)&addr, addr_len) < 0 && errno != EINPROGRESS)) {
        perror("floor-epoll: connect");
        exit(1);
    }
    c->sent = send(c->fd, req, (size_t)req_len, MSG_NOSIGNAL) == req_len;
    struct epoll_event ev = {.events = c->sent ? EPOLLIN : EPOLLOUT, .data.u32 = i};
    epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
}

/* Close mode: what happens on slot i's event; counts the request when the server closed. */
static void on_close_event(int ep, struct conn *conns, uint32_t i, unsigned long long *done,
                           unsigned long long *failed) {
    struct conn *c = &conns[i];
    if (!c->sent) {
        c->sent = send(c->fd, req, (size_t)req_len, MSG_NOSIGNAL) == req_len;
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = i};
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        return;
    }
    for (;;) {
        ssize_t got = recv(c->fd, c->buf + c->have, BUF - c->have, 0);
        if (got < 0 && errno == EAGAIN)
            return;
        if (got > 0) {
            c->have += (size_t)got;
            if (c->have < BUF)
                continue;
        }
        int ok = 0;
        long end = got == 0 ? response_end(c->buf, c->have, &ok) : -1;
        (end > 0 && ok) ? (*done)++ : (*failed)++;
        close(c->fd);
        open_one(ep, c, i);
        return;
    }
}

/* Keep-alive: slot i's connection is readable. */
static void on_keepalive_event(struct conn *c, unsigned long long *done, unsigned long long *failed) {
    ssize_t got = recv(c->fd, c->buf + c->have, BUF - c->have, 0);
    if (got <= 0) {
        if (got < 0 && errno == EAGAIN)
            return;
        fprintf(stderr, "floor-epoll: a connection closed\n");
        exit(1);
    }
    c->have += (size_t)got;
    int ok = 0;
    long end = response_end(c->buf, c->have, &ok);
    if (end < 0) {
        fprintf(stderr, "floor-epoll: not a response with a Content-Length\n");
        exit(1);
    }
    if (end == 0)
        return;
    ok ? (*done)++ : (*failed)++;
    memmove(c->buf, c->buf + end, c->have - (size_t)end);
    c->have -= (size_t)end;
    send(c->fd, req, (size_t)req_len, MSG_NOSIGNAL);
}

int main(int argc, char **argv) {
    struct args a = parse_args(argc, argv);
    req_len = request(&a, req, sizeof req);
    addr_len = address(&a, &addr);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct conn *conns = calloc((size_t)a.conns, sizeof *conns);
    if (ep < 0 || !conns) {
        perror("floor-epoll");
        return 1;
    }
    for (int i = 0; i < a.conns; i++) {
        if (a.close) {
            open_one(ep, &conns[i], (uint32_t)i);
            continue;
        }
        conns[i].fd = connect_to(&a);
        fcntl(conns[i].fd, F_SETFL, O_NONBLOCK);
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev);
        send(conns[i].fd, req, (size_t)req_len, MSG_NOSIGNAL);
    }
    unsigned long long done = 0, failed = 0;
    double start = now_s(), deadline = start + a.seconds;
    struct epoll_event events[256];
    while (now_s() < deadline) {
        int n = epoll_wait(ep, events, 256, 100);
        for (int e = 0; e < n; e++) {
            uint32_t i = events[e].data.u32;
            if (a.close)
                on_close_event(ep, conns, i, &done, &failed);
            else
                on_keepalive_event(&conns[i], &done, &failed);
        }
    }
    printf("requests %llu seconds %.6f failed %llu\n", done, now_s() - start, failed);
    return 0;
}
