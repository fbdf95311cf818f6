/* The floor of an io_uring client: one thread, a single issuer with deferred task running,
 * waiting for a batch of completions (8, or whatever came within 100 µs) instead of waking for
 * each. Keep-alive: a send that posts no completion on success, linked to its receive. Close:
 * one linked chain per request into a fixed file slot (close the last socket, socket,
 * connect, send, receive), only the receives posting completions, then receives to the
 * server's close. See common.h. */
#include "common.h"
#include <liburing.h>

#define BATCH 8
#define WAIT_NS 100000
/* user_data: the slot in the low 32 bits, the operation above them. */
enum op { OP_RECV = 0, OP_SEND = 1, OP_CLOSE = 2, OP_SOCKET = 3, OP_CONNECT = 4 };

struct conn {
    int fd;
    int has_socket;
    size_t have;
    char buf[BUF];
};

static char req[1024];
static int req_len;
static struct sockaddr_storage addr;
static socklen_t addr_len;
static int close_mode;

static struct io_uring_sqe *next_sqe(struct io_uring *ring) {
    struct io_uring_sqe *s = io_uring_get_sqe(ring);
    if (!s) {
        io_uring_submit(ring);
        s = io_uring_get_sqe(ring);
    }
    return s;
}

/* Names slot i's operation in the entry and sets its flags; after the prep call, which clears
 * them. */
static void mark(struct io_uring_sqe *s, unsigned i, enum op op, int chained) {
    io_uring_sqe_set_data64(s, ((unsigned long long)op << 32) | i);
    if (chained)
        s->flags |= IOSQE_CQE_SKIP_SUCCESS | IOSQE_IO_LINK;
    if (close_mode && op != OP_SOCKET && op != OP_CLOSE)
        s->flags |= IOSQE_FIXED_FILE;
}

static void queue_recv(struct io_uring *ring, struct conn *c, unsigned i) {
    struct io_uring_sqe *r = next_sqe(ring);
    io_uring_prep_recv(r, close_mode ? (int)i : c->fd, c->buf + c->have, BUF - c->have, 0);
    mark(r, i, OP_RECV, 0);
}

static void queue_send(struct io_uring *ring, struct conn *c, unsigned i) {
    struct io_uring_sqe *s = next_sqe(ring);
    io_uring_prep_send(s, close_mode ? (int)i : c->fd, req, (size_t)req_len, MSG_NOSIGNAL);
    mark(s, i, OP_SEND, 1);
}

/* Close mode: the whole next request of slot i, from closing its last socket to receiving. */
static void queue_chain(struct io_uring *ring, struct conn *c, unsigned i) {
    struct io_uring_sqe *s;
    if (c->has_socket) {
        io_uring_prep_close_direct(s = next_sqe(ring), i);
        mark(s, i, OP_CLOSE, 1);
    }
    io_uring_prep_socket_direct(s = next_sqe(ring), addr.ss_family, SOCK_STREAM, 0, i, 0);
    mark(s, i, OP_SOCKET, 1);
    io_uring_prep_connect(s = next_sqe(ring), (int)i, (struct sockaddr *)&addr, addr_len);
    mark(s, i, OP_CONNECT, 1);
    queue_send(ring, c, i);
    c->have = 0;
    c->has_socket = 1;
    queue_recv(ring, c, i);
}

/* One completion of slot i; counts what it ends. */
static void complete(struct io_uring *ring, struct conn *conns, struct io_uring_cqe *cqe,
                     unsigned long long *done, unsigned long long *failed) {
    unsigned long long data = io_uring_cqe_get_data64(cqe);
    unsigned i = (unsigned)(data & 0xffffffffu);
    enum op op = (enum op)(data >> 32);
    struct conn *c = &conns[i];
    if (op != OP_RECV) {
        /* A linked step failed (its receive comes cancelled next): a socket that was never
         * made is not closed. */
        if (op == OP_SOCKET)
            c->has_socket = 0;
        if (!close_mode) {
            fprintf(stderr, "floor-uring: send: %s\n", strerror(-cqe->res));
            exit(1);
        }
        return;
    }
    if (cqe->res > 0) {
        c->have += (size_t)cqe->res;
        int ok = 0;
        long end = close_mode || c->have >= BUF ? 0 : response_end(c->buf, c->have, &ok);
        if (end < 0) {
            fprintf(stderr, "floor-uring: not a response with a Content-Length\n");
            exit(1);
        }
        if (end > 0) {
            ok ? (*done)++ : (*failed)++;
            memmove(c->buf, c->buf + end, c->have - (size_t)end);
            c->have -= (size_t)end;
            queue_send(ring, c, i);
        }
        if (!close_mode || c->have < BUF) {
            queue_recv(ring, c, i);
            return;
        }
    }
    if (!close_mode) {
        fprintf(stderr, "floor-uring: receive: %s\n", cqe->res ? strerror(-cqe->res) : "closed");
        exit(1);
    }
    int ok = 0;
    long end = cqe->res == 0 ? response_end(c->buf, c->have, &ok) : -1;
    (end > 0 && ok) ? (*done)++ : (*failed)++;
    queue_chain(ring, c, i);
}

static void setup(struct io_uring *ring, unsigned entries) {
    struct io_uring_params p = {.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN};
    int e = io_uring_queue_init_params(entries, ring, &p);
    if (e == -EINVAL) {
        struct io_uring_params plain = {0};
        e = io_uring_queue_init_params(entries, ring, &plain);
    }
    if (e < 0) {
        fprintf(stderr, "floor-uring: io_uring_setup: %s\n", strerror(-e));
        exit(1);
    }
}

int main(int argc, char **argv) {
    struct args a = parse_args(argc, argv);
    req_len = request(&a, req, sizeof req);
    addr_len = address(&a, &addr);
    close_mode = a.close;
    struct io_uring ring;
    setup(&ring, 8 * (unsigned)a.conns + 16);
    if (close_mode && io_uring_register_files_sparse(&ring, (unsigned)a.conns) < 0) {
        fprintf(stderr, "floor-uring: cannot register %d file slots\n", a.conns);
        return 1;
    }
    struct conn *conns = calloc((size_t)a.conns, sizeof *conns);
    for (unsigned i = 0; i < (unsigned)a.conns; i++) {
        if (close_mode) {
            queue_chain(&ring, &conns[i], i);
            continue;
        }
        conns[i].fd = connect_to(&a);
        queue_send(&ring, &conns[i], i);
        queue_recv(&ring, &conns[i], i);
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
            complete(&ring, conns, cqe, &done, &failed);
        }
        io_uring_cq_advance(&ring, seen);
    }
    printf("requests %llu seconds %.6f failed %llu\n", done, now_s() - start, failed);
    return 0;
}
