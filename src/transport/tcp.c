/* TCP transport: nonblocking sockets, several per peer; large messages are striped.
 *
 * Every socket of a peer walks the same transfer queue with its own cursor. A message
 * shorter than the stripe threshold travels whole on socket 0 behind its header; a longer
 * one sends its header on socket 0 and splits its payload into one contiguous part per
 * socket (64-byte aligned boundaries, so reductions always see whole elements). A
 * transfer completes when every socket has finished its part, in queue order. */
#include "transport/tcp.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bootstrap/fork_guard.h"
#include "bootstrap/socket.h"
#include "core/comm_internal.h"
#include "core/error.h"
#include "core/log.h"
#include "core/own_waits.h"
#include "core/params.h"

#define HELLO_MAGIC 0x434c5443u /* "CLTC" */
#define BOUNCE_BYTES (256 * 1024)
#define HDR_BYTES ((uint64_t)sizeof(collie_wire_hdr_t))

typedef struct {
  uint32_t magic, version;
  uint64_t comm_hash;
  int32_t rank, sock_idx, nsocks, pad;
  uint64_t stripe_min;
} hello_t;

typedef struct {
  int fd;
  uint64_t s_seq, s_off; /* send cursor: queue position and bytes of (header+part) sent */
  uint64_t r_seq, r_off; /* receive cursor */
  collie_wire_hdr_t rhdr;
  char *bounce;          /* receive-reduce staging */
  size_t carry;          /* bytes of a partial element at the start of bounce */
} tcp_sock_t;

typedef struct {
  int nsocks;
  uint64_t stripe_min;
  tcp_sock_t s[];
} tcp_peer_t;

/* A message is striped from the stripe threshold, and only when every socket's part gets
 * 64 bytes or more: the boundaries are rounded down to 64 bytes (whole elements for the
 * reductions), so that no part is empty (a message of 64 bytes on 8 sockets once hung,
 * waiting for 7 parts that the sockets skipped). */
static bool striped(const tcp_peer_t *tp, uint64_t nbytes) {
  return tp->nsocks > 1 && nbytes >= tp->stripe_min && nbytes >= 64u * (uint64_t)tp->nsocks;
}

/* Part k of a message: [*b, *e). */
static void part_range(const tcp_peer_t *tp, uint64_t nbytes, int k, uint64_t *b, uint64_t *e) {
  if (!striped(tp, nbytes)) {
    *b = 0;
    *e = k == 0 ? nbytes : 0;
    return;
  }
  uint64_t n = (uint64_t)tp->nsocks;
  *b = k == 0 ? 0 : ((nbytes / n) * (uint64_t)k) & ~63ull;
  *e = k == tp->nsocks - 1 ? nbytes : ((nbytes / n) * (uint64_t)(k + 1)) & ~63ull;
}

static void init_parts(const tcp_peer_t *tp, collie_xfer_t *x) {
  if (x->tp_init) return;
  x->tp_init = 1;
  x->parts_left = striped(tp, x->nbytes) ? (uint32_t)tp->nsocks : 1;
}

static collie_xfer_t *find(collie_xfer_t *q, uint64_t seq) {
  for (; q; q = q->next)
    if (q->pseq == seq) return q;
  return NULL;
}

/* Reads the rest of a peer's last words (their header is in h) and fails the communicator
 * with them. The sentence came in one write with its header: a short wait at most. */
static int peer_said(collie_comm_t *comm, tcp_sock_t *so, const collie_wire_hdr_t *h) {
  char text[1024];
  size_t want = h->nbytes < sizeof(text) ? (size_t)h->nbytes : sizeof(text) - 1, got = 0;
  const int64_t deadline = collie_now_ns() + 200 * 1000000LL;
  while (got < want && collie_now_ns() < deadline) {
    ssize_t r = recv(so->fd, text + got, want - got, MSG_DONTWAIT);
    if (r > 0) got += (size_t)r;
    else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) break;
    else poll(&(struct pollfd){so->fd, POLLIN, 0}, 1, 10);
  }
  text[got] = 0;
  const collie_result_t res = h->seq > 0 && h->seq <= COLLIE_ERR_INTERNAL ? (collie_result_t)h->seq : COLLIE_ERR_REMOTE;
  collie_comm_fail(comm, res, true, "%s", got ? text : "a peer failed and closed its connection");
  return -1;
}

/* After the peer closed a connection: its last words, if socket 0 holds them where this
 * rank would read the next message's header (tcp_close sends them there). */
static bool peer_left_words(collie_comm_t *comm, tcp_peer_t *tp) {
  tcp_sock_t *so = &tp->s[0];
  collie_wire_hdr_t h;
  if (so->fd < 0 || so->r_off != 0) return false;
  if (recv(so->fd, &h, sizeof(h), MSG_PEEK | MSG_DONTWAIT) != (ssize_t)sizeof(h) || h.magic != COLLIE_WIRE_FAIL_MAGIC)
    return false;
  if (recv(so->fd, &h, sizeof(h), MSG_DONTWAIT) != (ssize_t)sizeof(h)) return false;
  peer_said(comm, so, &h);
  return true;
}

static int peer_failed(collie_comm_t *comm, collie_peer_t *peer, const char *during, int err) {
  char pd[160];
  if (peer_left_words(comm, peer->tp_state)) return -1; /* it said why */
  if (collie_comm_await_failure(comm)) return -1; /* the peer left because another rank failed */
  collie_peer_desc(comm, peer->rank, pd, sizeof(pd));
  /* Failure notices pass through rank 0: when its process is stopped, the peer may have
   * closed the connection after a failure (its own timeout, an abort) that nobody relayed. */
  char relay[256] = "", rd[160];
  const char *how = comm->rank && peer->rank ? collie_rank_stopped(comm, 0) : NULL;
  if (how)
    snprintf(relay, sizeof(relay), " (or failed, with no word of it through %s, which passes failures on and is %s: "
             "resume it with kill -CONT %d)", collie_peer_desc(comm, 0, rd, sizeof(rd)), how, comm->cards[0].pid);
  if (err == 0 || err == ECONNRESET || err == EPIPE)
    collie_comm_fail(comm, COLLIE_ERR_REMOTE, false,
                     "%s closed its connection during %s on rank %d: that rank died or destroyed its "
                     "communicator early%s; check its log and exit status",
                     pd, during, comm->rank, relay);
  else
    collie_comm_fail(comm, COLLIE_ERR_REMOTE, false, "rank %d lost its TCP connection to %s during %s: %s",
                     comm->rank, pd, during, strerror(err));
  return -1;
}

static int send_side(collie_comm_t *comm, collie_peer_t *peer, tcp_peer_t *tp, int k) {
  tcp_sock_t *so = &tp->s[k];
  int moved = 0;
  collie_xfer_t *x;
  while ((x = find(peer->sendq, so->s_seq)) && x->ready) {
    init_parts(tp, x);
    uint64_t b, e;
    part_range(tp, x->nbytes, k, &b, &e);
    uint64_t hdr = k == 0 ? HDR_BYTES : 0, total = hdr + (e - b);
    if (total == 0) { /* nothing of this message on this socket */
      so->s_seq++;
      continue;
    }
    while (so->s_off < total) {
      struct iovec iov[2];
      int n = 0;
      if (so->s_off < hdr) {
        iov[n].iov_base = (char *)&x->hdr + so->s_off;
        iov[n++].iov_len = hdr - so->s_off;
        if (e > b) {
          iov[n].iov_base = (char *)x->sbuf + b;
          iov[n++].iov_len = e - b;
        }
      } else {
        iov[n].iov_base = (char *)x->sbuf + b + (so->s_off - hdr);
        iov[n++].iov_len = total - so->s_off;
      }
      struct msghdr mh = {0};
      mh.msg_iov = iov;
      mh.msg_iovlen = (size_t)n;
      ssize_t w = sendmsg(so->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return moved;
        return peer_failed(comm, peer, "a send", errno);
      }
      so->s_off += (uint64_t)w;
      moved = 1;
    }
    so->s_off = 0;
    so->s_seq++;
    x->parts_left--;
  }
  return moved;
}

/* Reduce-receives go through a staging buffer: only whole elements are combined. */
static ssize_t recv_reduce(tcp_sock_t *so, collie_xfer_t *x, uint64_t pos, uint64_t want) {
  size_t room = BOUNCE_BYTES - so->carry;
  if (want - so->carry < room) room = want - so->carry;
  ssize_t r = recv(so->fd, so->bounce + so->carry, room, MSG_DONTWAIT);
  if (r <= 0) return r;
  size_t have = so->carry + (size_t)r;
  size_t whole = have - have % x->elem_size;
  /* pos is where the carried bytes start in the message */
  collie_xfer_deliver(x, pos, so->bounce, whole, true);
  so->carry = have - whole;
  if (so->carry) memmove(so->bounce, so->bounce + whole, so->carry);
  return r;
}

static int recv_side(collie_comm_t *comm, collie_peer_t *peer, tcp_peer_t *tp, int k) {
  tcp_sock_t *so = &tp->s[k];
  int moved = 0;
  collie_xfer_t *x;
  while ((x = find(peer->recvq, so->r_seq)) && x->ready) {
    init_parts(tp, x);
    uint64_t b, e;
    part_range(tp, x->nbytes, k, &b, &e);
    uint64_t hdr = k == 0 ? HDR_BYTES : 0, total = hdr + (e - b);
    if (total == 0) {
      so->r_seq++;
      continue;
    }
    while (so->r_off < total) {
      ssize_t r;
      if (so->r_off < hdr) {
        r = recv(so->fd, (char *)&so->rhdr + so->r_off, hdr - so->r_off, MSG_DONTWAIT);
      } else if (x->reduce) {
        uint64_t done = so->r_off - hdr; /* payload bytes received on this socket, carry included */
        r = recv_reduce(so, x, b + done - so->carry, (e - b) - done + so->carry);
      } else {
        r = recv(so->fd, x->rbuf + b + (so->r_off - hdr), total - so->r_off, MSG_DONTWAIT);
      }
      if (r == 0) return peer_failed(comm, peer, "a receive", 0);
      if (r < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return moved;
        return peer_failed(comm, peer, "a receive", errno);
      }
      so->r_off += (uint64_t)r;
      moved = 1;
      if (k == 0 && so->r_off == hdr && !x->hdr_done) {
        if (so->rhdr.magic == COLLIE_WIRE_FAIL_MAGIC) return peer_said(comm, so, &so->rhdr);
        if (collie_xfer_check_header(comm, peer, x, &so->rhdr) < 0) return -1;
        x->hdr_done = 1;
      }
    }
    so->r_off = 0;
    so->r_seq++;
    x->parts_left--;
  }
  return moved;
}

static int tcp_progress(collie_comm_t *comm, collie_peer_t *peer) {
  tcp_peer_t *tp = peer->tp_state;
  int moved = 0;
  for (int k = 0; k < tp->nsocks; k++) {
    int s = send_side(comm, peer, tp, k);
    if (s < 0) return -1;
    int r = recv_side(comm, peer, tp, k);
    if (r < 0) return -1;
    moved |= s | r;
  }
  collie_xfer_t *x;
  while ((x = peer->sendq) && x->tp_init && x->parts_left == 0) collie_xfer_complete(comm, peer, x);
  while ((x = peer->recvq) && x->tp_init && x->parts_left == 0) collie_xfer_complete(comm, peer, x);
  return moved;
}

/* A rank whose communicator failed tells each TCP peer why before it closes the
 * connection: failure notices pass through rank 0 (bootstrap/control.c), and where rank 0
 * was stopped (a debugger, SIGSTOP), a peer on another host saw only the connection close
 * ("died or destroyed its communicator early") when this rank had timed out on rank 0, or
 * aborted. Sent on socket 0 where no message is half sent, so that the peer reads them
 * where it expects a header (or finds them there when another socket closes: peer_failed).
 * Best effort: a full socket buffer drops them. */
static void last_words(collie_comm_t *comm, tcp_peer_t *tp) {
  const int res = atomic_load(&comm->failed);
  tcp_sock_t *so = &tp->s[0];
  if (!res || so->fd < 0 || so->s_off != 0) return;
  char text[1024];
  if (res == COLLIE_ERR_ABORTED) collie_abort_notice(comm, text, sizeof(text));
  else snprintf(text, sizeof(text), "%s", comm->fail_msg); /* written before `failed` */
  collie_wire_hdr_t h;
  memset(&h, 0, sizeof(h));
  h.magic = COLLIE_WIRE_FAIL_MAGIC;
  h.src_rank = comm->rank;
  h.seq = (uint64_t)(res == COLLIE_ERR_ABORTED ? COLLIE_ERR_REMOTE : res);
  h.nbytes = strlen(text) + 1;
  struct iovec iov[2] = {{&h, sizeof(h)}, {text, (size_t)h.nbytes}};
  struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
  (void)sendmsg(so->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
}

static void tcp_close(collie_comm_t *comm, collie_peer_t *peer) {
  tcp_peer_t *tp = peer->tp_state;
  if (!tp) return;
  last_words(comm, tp);
  for (int k = 0; k < tp->nsocks; k++) {
    if (tp->s[k].fd >= 0) collie_socket_close(tp->s[k].fd);
    free(tp->s[k].bounce);
  }
  free(tp);
  peer->tp_state = NULL;
}

const collie_transport_t collie_transport_tcp = {"tcp", tcp_progress, tcp_close};

/* ---- connection setup ---- */

collie_result_t collie_tcp_listen(collie_comm_t *comm, const struct sockaddr_storage *ip) {
  collie_tcp_state_t *st = calloc(1, sizeof(*st));
  if (!st) return collie_init_no_memory(comm, comm->rank, "its TCP state");
  comm->tcp = st;
  st->nsocks = (int)collie_param_int(COLLIE_P_TCP_NSOCKS);
  if (st->nsocks < 1) st->nsocks = 1;
  if (st->nsocks > 16) st->nsocks = 16;
  st->stripe_min = (uint64_t)collie_param_int(COLLIE_P_TCP_STRIPE_MIN);
  st->addr = *ip;
  st->listen_fd = collie_listen(&st->addr);
  int lo, hi, err = errno;
  char a[80];
  collie_addr_str(ip, a, sizeof(a));
  *strrchr(a, ':') = 0; /* the IP: the port is what it looked for */
  if (st->listen_fd < 0 && err == EADDRINUSE && collie_param_port_range(&lo, &hi) > 0) {
    return collie_error(comm, COLLIE_ERR_SYSTEM,
                        "rank %d found no free port in COLLIE_PORT_RANGE=%d-%d on %s for transport connections: "
                        "other ranks or programs of this host use all %d; widen the range (every rank of a host "
                        "needs a port of it per communicator, and the unique id or split being created one more)",
                        comm->rank, lo, hi, a, hi - lo + 1);
  }
  if (st->listen_fd < 0) {
    return collie_error(comm, COLLIE_ERR_SYSTEM,
                        "rank %d could not listen on %s for transport connections: %s; check "
                        "COLLIE_SOCKET_IFNAME and COLLIE_PORT_RANGE",
                        comm->rank, a, strerror(err));
  }
  return COLLIE_SUCCESS;
}

static tcp_peer_t *peer_state(collie_comm_t *comm, int p, int nsocks, uint64_t stripe_min) {
  collie_peer_t *peer = &comm->peers[p];
  if (!peer->tp_state) {
    tcp_peer_t *tp = calloc(1, sizeof(tcp_peer_t) + sizeof(tcp_sock_t) * (size_t)nsocks);
    if (!tp) return NULL;
    tp->nsocks = nsocks;
    tp->stripe_min = stripe_min;
    for (int k = 0; k < nsocks; k++) tp->s[k].fd = -1;
    peer->tp_state = tp;
    peer->tp = &collie_transport_tcp;
  }
  return peer->tp_state;
}

static collie_result_t adopt(collie_comm_t *comm, tcp_peer_t *tp, int k, int fd) {
  collie_socket_tune(fd);
  collie_set_nonblocking(fd, true);
  tp->s[k].fd = fd;
  tp->s[k].bounce = malloc(BOUNCE_BYTES);
  if (!tp->s[k].bounce) return collie_init_no_memory(comm, comm->rank, "the bounce buffer of a TCP socket");
  return COLLIE_SUCCESS;
}

collie_result_t collie_tcp_connect(collie_comm_t *comm, const bool *use_tcp) {
  collie_tcp_state_t *st = comm->tcp;
  int64_t deadline = collie_now_ns() + (int64_t)comm->connect_timeout_ms * 1000000;
  char pd[160], a[80];
  /* Lower ranks accept, higher ranks connect: the kernel finishes each connection in the
   * listen backlog, so connecting first and accepting second cannot deadlock. */
  for (int p = 0; p < comm->rank; p++) {
    if (!use_tcp[p]) continue;
    tcp_peer_t *tp = peer_state(comm, p, st->nsocks, st->stripe_min);
    if (!tp) return collie_init_no_memory(comm, comm->rank, "the state of a TCP peer");
    for (int k = 0; k < st->nsocks; k++) {
      int err = 0;
      int fd = collie_connect_retry(&comm->cards[p].data_addr, deadline, &err);
      if (fd < 0 && collie_errno_is_shortage(err)) {
        char advice[400];
        return collie_error(comm, COLLIE_ERR_SYSTEM, "rank %d could not open socket %d of %d to %s: %s; %s",
                            comm->rank, k + 1, st->nsocks, collie_peer_desc(comm, p, pd, sizeof(pd)), strerror(err),
                            collie_fd_advice(err, advice, sizeof(advice)));
      }
      /* A loopback address from another host: this one's own loopback answers, not the peer. */
      const bool lo = collie_addr_is_loopback(&comm->cards[p].data_addr) &&
                      strcmp(comm->cards[p].host_id, comm->cards[comm->rank].host_id) != 0;
      if (fd < 0)
        return collie_error(comm, fd == -2 ? COLLIE_ERR_TIMEOUT : COLLIE_ERR_SYSTEM,
                            "rank %d could not connect to %s at %s: %s; %s", comm->rank,
                            collie_peer_desc(comm, p, pd, sizeof(pd)),
                            collie_addr_str(&comm->cards[p].data_addr, a, sizeof(a)), strerror(err),
                            lo ? "that is a loopback address on another host: set COLLIE_SOCKET_IFNAME alike on "
                                 "every rank to an interface the hosts share (not lo)"
                               : "check that the address is reachable from this host (COLLIE_SOCKET_IFNAME) "
                                 "and that no firewall blocks it");
      hello_t h = {HELLO_MAGIC, COLLIE_VERSION_CODE, comm->comm_hash, comm->rank, k, st->nsocks, 0, st->stripe_min};
      if (collie_send_all(fd, &h, sizeof(h), deadline) != 0) {
        collie_socket_close(fd);
        return collie_error(comm, COLLIE_ERR_REMOTE, "rank %d could not greet %s over TCP: %s", comm->rank,
                            collie_peer_desc(comm, p, pd, sizeof(pd)), strerror(errno));
      }
      collie_result_t res = adopt(comm, tp, k, fd);
      if (res) return res;
    }
  }
  int expected = 0;
  for (int p = comm->rank + 1; p < comm->nranks; p++) expected += use_tcp[p] ? st->nsocks : 0;
  /* A higher rank that cannot reach this one says why when its connects time out: wait
   * longer than they do, so that its sentence arrives (through rank 0) before this one. */
  deadline += (int64_t)COLLIE_SETUP_GRACE_MS * 1000000;
  while (expected > 0) {
    struct pollfd pfd = {st->listen_fd, POLLIN, 0};
    int64_t left = (deadline - collie_now_ns()) / 1000000;
    if (left <= 0 || collie_socket_abandoned())
      return collie_error(comm, COLLIE_ERR_TIMEOUT,
                          "rank %d timed out after %lld ms waiting for %d TCP connections from higher ranks; "
                          "a peer may have died or cannot reach %s%s",
                          comm->rank, (long long)comm->connect_timeout_ms + COLLIE_SETUP_GRACE_MS, expected,
                          collie_addr_str(&st->addr, a, sizeof(a)),
                          collie_addr_is_loopback(&st->addr) ? " (a loopback address, which ranks on other hosts "
                                                               "cannot reach: check COLLIE_SOCKET_IFNAME)"
                                                             : "");
    if (poll(&pfd, 1, (int)(left > 1000 ? 1000 : left)) <= 0) continue;
    struct sockaddr_storage from;
    int shortage;
    int fd = collie_accept(st->listen_fd, &from, &shortage);
    if (shortage) {
      char advice[400];
      return collie_error(comm, COLLIE_ERR_SYSTEM,
                          "rank %d could not accept a TCP connection from a higher rank (%d still to come): %s; %s",
                          comm->rank, expected, strerror(shortage), collie_fd_advice(shortage, advice, sizeof(advice)));
    }
    if (fd < 0) continue;
    hello_t h;
    int64_t hdl = collie_now_ns() + 2000000000LL;
    if (collie_recv_all(fd, &h, sizeof(h), hdl < deadline ? hdl : deadline) != 0 || h.magic != HELLO_MAGIC ||
        h.comm_hash != comm->comm_hash || h.rank <= comm->rank || h.rank >= comm->nranks || !use_tcp[h.rank] ||
        h.sock_idx < 0 || h.sock_idx >= h.nsocks || h.nsocks != st->nsocks) {
      COLLIE_WARN(COLLIE_SUB_TRANSPORT, comm->rank,
                  "dropped a connection from %s to the transport port: it did not greet as a rank of this "
                  "communicator",
                  collie_addr_str(&from, a, sizeof(a)));
      collie_socket_close(fd);
      continue;
    }
    tcp_peer_t *tp = peer_state(comm, h.rank, st->nsocks, h.stripe_min);
    if (!tp) return collie_init_no_memory(comm, comm->rank, "the state of a TCP peer");
    if (tp->s[h.sock_idx].fd >= 0) {
      collie_socket_close(fd);
      continue;
    }
    collie_result_t res = adopt(comm, tp, h.sock_idx, fd);
    if (res) return res;
    expected--;
  }
  return COLLIE_SUCCESS;
}

int collie_tcp_pollfds(collie_comm_t *comm, struct pollfd *fds, int max) {
  int n = 0;
  for (int p = 0; p < comm->nranks && n < max; p++) {
    collie_peer_t *peer = &comm->peers[p];
    if (peer->tp != &collie_transport_tcp || (!peer->sendq && !peer->recvq)) continue;
    tcp_peer_t *tp = peer->tp_state;
    for (int k = 0; k < tp->nsocks && n < max; k++) {
      fds[n].fd = tp->s[k].fd;
      /* Only ready heads: a socket with nothing to send would report POLLOUT forever. */
      fds[n].events = (short)((peer->recvq && peer->recvq->ready ? POLLIN : 0) |
                              (peer->sendq && peer->sendq->ready ? POLLOUT : 0));
      fds[n].revents = 0;
      n++;
    }
  }
  return n;
}

void collie_tcp_destroy(collie_comm_t *comm) {
  if (!comm->tcp) return;
  if (comm->tcp->listen_fd >= 0) close(comm->tcp->listen_fd);
  free(comm->tcp);
  comm->tcp = NULL;
}
