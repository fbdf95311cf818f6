/* The floor of an io_uring client: one thread, a single issuer with deferred task running,
 * sends that post no completion when they succeed, and waiting for a batch of completions (8,
 * or whatever came within 100 µs) instead of waking for each. See common.h. */
#include "common.h"
#include <liburing.h>

#define BATCH 8
#define WAIT_NS 100000
#define SEND_FLAG (1ULL << 32)

struct conn {
    int fd;
    size_t have;
    char buf[BUF];
};

static char req[1024];
static int req_len;

static void queue(struct io_uring *ring, struct conn *conns, unsigned i, int send_too) {
    struct conn *c = &conns[i];
    if (send_too) {
        struct io_uring_sqe *s = io_uring_get_sqe(ring);
        io_uring_prep_send(s, c->fd, req, (size_t)req_len, MSG_NOSIGNAL);
        s->flags |= IOSQE_CQE_SKIP_SUCCESS | IOSQE_IO_LINK;
        io_uring_sqe_set_data64(s, SEND_FLAG | i);
    }
    struct io_uring_sqe *r = io_uring_get_sqe(ring);
    io_uring_prep_recv(r, c->fd, c->buf + c->have, BUF - c->have, 0);
    io_uring_sqe_set_data64(r, i);
}

int main(int argc, char **argv) {
    struct args a = parse_args(argc, argv);
    req_len = request(&a, req, sizeof req);
    struct io_uring ring;
    struct io_uring_params p = {.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN};
    unsigned entries = 2 * (unsigned)a.conns + 16;
    int e = io_uring_queue_init_params(entries, &ring, &p);
    if (e == -EINVAL) {
        struct io_uring_params plain = {0};
        e = io_uring_queue_init_params(entries, &ring, &plain);
    }
    if (e < 0) {
        fprintf(stderr, "floor-uring: io_uring_setup: %s\n", strerror(-e));
        return 1;
    }
    struct conn *conns = calloc((size_t)a.conns, sizeof *conns);
    for (int i = 0; i < a.conns; i++) {
        conns[i].fd = connect_to(&a);
        queue(&ring, conns, (unsigned)i, 1);
    }
    unsigned long long done = 0, failed = 0;
    double start = now_s(), deadline = start + a.seconds;
    struct __kernel_timespec wait = {.tv_sec = 0, .tv_nsec = WAIT_NS};
    unsigned batch = a.conns < BATCH ? (unsigned)a.conns : BATCH;
    while (now_s() < deadline) {
        struct io_uring_cqe *cqe;
        int r = io_uring_submit_and_wait_timeout(&ring, &cqe, batch, &wait, NULL);
        if (r < 0 && r != -ETIME && r != -EINTR) {
            fprintf(stderr, "floor-uring: wait: %s\n", strerror(-r));
            return 1;
        }
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&ring, head, cqe) {
            seen++;
            unsigned long long data = io_uring_cqe_get_data64(cqe);
            unsigned i = (unsigned)(data & 0xffffffffu);
            if (data & SEND_FLAG) {
                fprintf(stderr, "floor-uring: send: %s\n", strerror(-cqe->res));
                return 1;
            }
            if (cqe->res <= 0) {
                fprintf(stderr, "floor-uring: receive: %s\n", cqe->res ? strerror(-cqe->res) : "closed");
                return 1;
            }
            struct conn *c = &conns[i];
            c->have += (size_t)cqe->res;
            int ok = 0;
            long end = response_end(c->buf, c->have, &ok);
            if (end < 0) {
                fprintf(stderr, "floor-uring: not a response with a Content-Length\n");
                return 1;
            }
            if (end > 0) {
                ok ? done++ : failed++;
                memmove(c->buf, c->buf + end, c->have - (size_t)end);
                c->have -= (size_t)end;
            }
            queue(&ring, conns, i, end > 0);
        }
        io_uring_cq_advance(&ring, seen);
    }
    printf("requests %llu seconds %.6f failed %llu\n", done, now_s() - start, failed);
    return 0;
}
