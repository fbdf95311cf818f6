/* The floor of an epoll client: one thread, every connection non-blocking in one epoll set,
 * woken by every readable connection (as wrk and ab are), one send and at least one receive per
 * request. See common.h. */
#include "common.h"
#include <fcntl.h>
#include <sys/epoll.h>

struct conn {
    int fd;
    size_t have;
    char buf[BUF];
};

int main(int argc, char **argv) {
    struct args a = parse_args(argc, argv);
    char req[1024];
    int req_len = request(&a, req, sizeof req);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct conn *conns = calloc((size_t)a.conns, sizeof *conns);
    if (ep < 0 || !conns) {
        perror("floor-epoll");
        return 1;
    }
    for (int i = 0; i < a.conns; i++) {
        conns[i].fd = connect_to(&a);
        fcntl(conns[i].fd, F_SETFL, O_NONBLOCK);
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev);
    }
    unsigned long long done = 0, failed = 0;
    double start = now_s(), deadline = start + a.seconds;
    for (int i = 0; i < a.conns; i++)
        send(conns[i].fd, req, (size_t)req_len, MSG_NOSIGNAL);
    struct epoll_event events[256];
    while (now_s() < deadline) {
        int n = epoll_wait(ep, events, 256, 100);
        for (int e = 0; e < n; e++) {
            struct conn *c = &conns[events[e].data.u32];
            ssize_t got = recv(c->fd, c->buf + c->have, BUF - c->have, 0);
            if (got <= 0) {
                if (got < 0 && errno == EAGAIN)
                    continue;
                fprintf(stderr, "floor-epoll: a connection closed\n");
                return 1;
            }
            c->have += (size_t)got;
            int ok = 0;
            long end = response_end(c->buf, c->have, &ok);
            if (end < 0) {
                fprintf(stderr, "floor-epoll: not a response with a Content-Length\n");
                return 1;
            }
            if (end == 0)
                continue;
            ok ? done++ : failed++;
            memmove(c->buf, c->buf + end, c->have - (size_t)end);
            c->have -= (size_t)end;
            send(c->fd, req, (size_t)req_len, MSG_NOSIGNAL);
        }
    }
    printf("requests %llu seconds %.6f failed %llu\n", done, now_s() - start, failed);
    return 0;
}
