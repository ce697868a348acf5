/* Running schedules: dependency counting, transfer queues, local steps, completion. */
#include "sched/executor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/copy.h"
#include "core/error.h"
#include "core/log.h"
#include "algo/native/shm_native.h"
#include "reduce/reduce.h"

static bool is_comm_step(uint8_t type) {
  return type == COLLIE_STEP_SEND || type == COLLIE_STEP_RECV || type == COLLIE_STEP_RECV_REDUCE;
}

static char *resolve(collie_op_t *op, collie_bufref_t r) {
  return r.buf < COLLIE_NUM_BUFS ? op->bufs[r.buf] + r.off : NULL;
}

/* Scratch memory is kept for the next operation: a large buffer allocated and freed per
 * call would be mapped and unmapped each time, and its page faults cost more than the
 * collective itself. One buffer (the largest seen) waits in the communicator. */
typedef struct {
  size_t size;
  char pad[56];
} scratch_hdr_t;

char *collie_scratch_take(collie_comm_t *comm, size_t need) {
  scratch_hdr_t *h = atomic_exchange(&comm->scratch_pool, NULL);
  if (h && h->size >= need) return (char *)(h + 1);
  free(h);
  h = malloc(sizeof(scratch_hdr_t) + need);
  if (!h) return NULL;
  h->size = need;
  return (char *)(h + 1);
}

void collie_scratch_give(collie_comm_t *comm, char *p) {
  if (!p) return;
  scratch_hdr_t *h = (scratch_hdr_t *)p - 1;
  scratch_hdr_t *old = atomic_exchange(&comm->scratch_pool, h);
  if (old && old->size > h->size) {
    /* keep the larger one */
    old = atomic_exchange(&comm->scratch_pool, old);
  }
  free(old);
}

void collie_comm_free_scratch(collie_comm_t *comm) { free(atomic_exchange(&comm->scratch_pool, NULL)); }

/* Zeroed memory for what every call allocates and frees (its operation and request):
 * glibc's calloc bypasses the per-thread cache that malloc and free use, and took a
 * fifth of a small collective's time. explicit_bzero, because the compiler turns malloc
 * followed by memset back into calloc. */
static void *zalloc(size_t n) {
  void *p = malloc(n);
  if (p) explicit_bzero(p, n);
  return p;
}

/* Whether op lives in a blocking call's frame rather than on the heap. (An op on the
 * heap may carry a frame too: its request's.) */
static bool in_frame(const collie_op_t *op) { return op->frame && op == &op->frame->op; }

collie_op_t *collie_op_create(collie_comm_t *comm, collie_sched_t *sched, bool owns_sched, const void *sendbuf,
                              void *recvbuf, collie_coll_t coll, uint64_t count, collie_datatype_t dt,
                              collie_redop_t redop, int root, collie_frame_t *frame) {
  uint32_t n = sched->nsteps;
  size_t tail = sizeof(uint32_t) * ((size_t)n * 3 + (n + 1) + sched->ndeps) + sizeof(collie_xfer_t) * n;
  collie_op_t *op;
  if (frame && tail <= sizeof(frame->op_tail)) {
    /* fixed sizes (gcc's `rep stos` for them is off, CMakeLists.txt) */
    frame->op = (collie_op_t){0};
    memset(frame->op_tail, 0, sizeof(frame->op_tail));
    op = &frame->op;
    op->frame = frame;
  } else {
    op = zalloc(sizeof(collie_op_t) + tail + 64);
    if (!op) return NULL;
    op->frame = frame; /* for the request (collie_op_post) */
  }
  op->comm = comm;
  op->coll = coll;
  op->count = count;
  op->dt = dt;
  op->redop = redop;
  op->root = root;
  op->sched = sched;
  op->owns_sched = owns_sched;
  op->bufs[COLLIE_BUF_SEND] = (char *)(uintptr_t)sendbuf;
  op->bufs[COLLIE_BUF_RECV] = recvbuf;
  char *p = (char *)(op + 1);
  op->xfers = (collie_xfer_t *)p;
  p += sizeof(collie_xfer_t) * n;
  op->pending = (uint32_t *)p;
  op->work = op->pending + n;
  op->succ_first = op->work + n;
  op->succ = op->succ_first + n + 1;
  if (sched->scratch_bytes) {
    op->scratch = collie_scratch_take(comm, sched->scratch_bytes);
    if (!op->scratch) {
      if (!in_frame(op)) free(op);
      return NULL;
    }
  }
  op->bufs[COLLIE_BUF_SCRATCH] = op->scratch;
  if (dt < COLLIE_NUM_DATATYPES && redop < COLLIE_NUM_OPS) op->reduce = collie_reduce_kernel(dt, redop);
  return op;
}

void collie_op_discard(collie_op_t *op) {
  if (!op) return;
  if (op->owns_sched) {
    collie_sched_free(op->sched);
    free(op->sched);
  }
  if (op->sched_users) (*op->sched_users)--; /* under comm->lock, like the cache itself */
  if (op->scratch) collie_scratch_give(op->comm, op->scratch);
  collie_scratch_give(op->comm, op->temp);
  if (!in_frame(op)) free(op);
}

/* Successor lists in compressed form: succ[succ_first[i] .. succ_first[i+1]). */
static void build_successors(collie_op_t *op) {
  collie_sched_t *s = op->sched;
  uint32_t n = s->nsteps;
  memset(op->succ_first, 0, sizeof(uint32_t) * (n + 1));
  for (uint32_t i = 0; i < n; i++) {
    op->pending[i] = s->steps[i].ndeps;
    for (uint32_t k = 0; k < s->steps[i].ndeps; k++) op->succ_first[s->deps[s->steps[i].dep_first + k] + 1]++;
  }
  for (uint32_t i = 0; i < n; i++) op->succ_first[i + 1] += op->succ_first[i];
  uint32_t *fill = op->work; /* borrowed as a cursor array while building */
  memcpy(fill, op->succ_first, sizeof(uint32_t) * n);
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t k = 0; k < s->steps[i].ndeps; k++) {
      uint32_t d = s->deps[s->steps[i].dep_first + k];
      op->succ[fill[d]++] = i;
    }
}

static void enqueue(collie_xfer_t **head, collie_xfer_t **tail, collie_xfer_t *x) {
  x->next = NULL;
  if (*tail) (*tail)->next = x;
  else *head = x;
  *tail = x;
}

/* Runs the worklist: communication steps become ready for their transport, local steps
 * run at once and release their successors. */
static void run_ready(collie_op_t *op, uint32_t nwork) {
  collie_sched_t *s = op->sched;
  while (nwork) {
    uint32_t i = op->work[--nwork];
    collie_step_t *st = &s->steps[i];
    if (is_comm_step(st->type)) {
      op->xfers[i].ready = 1;
      continue;
    }
    if (st->type == COLLIE_STEP_COPY) {
      char *src = resolve(op, st->src), *dst = resolve(op, st->dst);
      uint64_t from = 0; /* what a send wrote already (tee) */
      if (op->tee_send && op->tee_copy == i) {
        from = op->tee_send->teed;
        op->tee_send->tee = NULL;
        op->tee_send = NULL;
      }
      if (src != dst && st->nbytes > from) collie_copy(dst + from, src + from, st->nbytes - from, op->stream);
    } else if (st->type == COLLIE_STEP_REDUCE && st->nbytes) {
      op->reduce(resolve(op, st->dst), resolve(op, st->src), resolve(op, st->src2), st->nbytes / s->elem_size);
    }
    op->remaining--;
    for (uint32_t k = op->succ_first[i]; k < op->succ_first[i + 1]; k++)
      if (--op->pending[op->succ[k]] == 0) op->work[nwork++] = op->succ[k];
  }
  if (op->remaining == 0) op->steps_done = true;
}

static void step_done(collie_op_t *op, uint32_t i) {
  op->remaining--;
  uint32_t nwork = 0;
  for (uint32_t k = op->succ_first[i]; k < op->succ_first[i + 1]; k++)
    if (--op->pending[op->succ[k]] == 0) op->work[nwork++] = op->succ[k];
  run_ready(op, nwork);
}

void collie_xfer_complete(collie_comm_t *comm, collie_peer_t *peer, collie_xfer_t *x) {
  (void)comm;
  collie_xfer_t **head = x->is_send ? &peer->sendq : &peer->recvq;
  collie_xfer_t **tail = x->is_send ? &peer->sendq_tail : &peer->recvq_tail;
  /* Transfers finish in queue order, so x is the head. */
  *head = x->next;
  if (!*head) *tail = NULL;
  x->complete = 1;
  step_done(x->op, x->step);
}

/* An out-of-place all-gather or broadcast root copies its own block into its receive
 * buffer and sends the same bytes: a send through the shared-memory ring that is about to
 * move can write them to the copy's destination as it copies them into the ring, reading
 * them once (core/copy.h, collie_copy_twice: 2 ranks, all-gather of 1 MiB out of place,
 * 35.7 against 39.0 us; docs/algorithms.md). Pairs the first such ready copy (in
 * op->work) and ready send; nothing waits on the pairing: the copy runs when it would
 * have, and moves what the send has not. Below TEE_MIN the pair made no difference. */
enum { TEE_MIN = 16 << 10 };
static void pair_tee(collie_comm_t *comm, collie_op_t *op, uint32_t nwork) {
  const collie_sched_t *s = op->sched;
  for (uint32_t w = 0; w < nwork; w++) {
    const collie_step_t *c = &s->steps[op->work[w]];
    if (c->type != COLLIE_STEP_COPY || c->nbytes < TEE_MIN) continue;
    const char *src = resolve(op, c->src);
    char *dst = resolve(op, c->dst);
    if (src < dst + c->nbytes && dst < src + c->nbytes) continue; /* in place, or overlapping */
    for (uint32_t i = 0; i < s->nsteps; i++) {
      const collie_step_t *t = &s->steps[i];
      collie_xfer_t *x = &op->xfers[i];
      if (t->type != COLLIE_STEP_SEND || !x->ready || t->nbytes != c->nbytes || x->sbuf != src) continue;
      if (comm->peers[t->peer].tp != &collie_transport_shm) continue;
      x->tee = dst;
      x->teed = 0;
      x->stream = op->stream;
      op->tee_send = x;
      op->tee_copy = op->work[w];
      return;
    }
  }
}

static void fill_header(collie_op_t *op, collie_xfer_t *x, int src_rank, uint64_t nbytes) {
  x->hdr.magic = COLLIE_WIRE_MAGIC;
  x->hdr.coll = (uint8_t)(op->coll == COLLIE_COLL_RECV ? COLLIE_COLL_SEND : op->coll);
  x->hdr.dtype = (uint8_t)op->dt;
  x->hdr.redop = (uint8_t)op->redop;
  x->hdr.root = op->root;
  x->hdr.src_rank = src_rank;
  x->hdr.seq = op->seq;
  x->hdr.count = op->count;
  x->hdr.counts_hash = op->counts_hash;
  x->hdr.nbytes = nbytes;
}

const char *collie_request_what(const collie_request_t *req, char *buf, size_t len) {
  if (req->coll == COLLIE_COLL_SEND || req->coll == COLLIE_COLL_RECV)
    snprintf(buf, len, "%s", collie_coll_name(req->coll));
  else
    snprintf(buf, len, "%s #%llu", collie_coll_name(req->coll), (unsigned long long)req->seq);
  return buf;
}

static void append_op(collie_comm_t *comm, collie_op_t *op) {
  if (comm->ops_tail) comm->ops_tail->next = op;
  else comm->ops = op;
  comm->ops_tail = op;
  if (!comm->ops->next) comm->progress_count++; /* the idle time starts now */
}

/* Ties a request to op (numbered already) and holds a reference to comm for it: also for a
 * request in a frame, since collie_comm_abort from another thread may drop the last other
 * reference while the caller is still in its wait (comm_destroy.c). */
static void bind_request(collie_comm_t *comm, collie_op_t *op, collie_request_t *req) {
  collie_comm_retain(comm);
  req->magic = COLLIE_REQ_LIVE;
  req->comm = comm;
  req->coll = op->coll;
  req->seq = op->seq;
  op->req = req;
}

static collie_request_t *frame_request(collie_op_t *op) {
  collie_request_t *req = &op->frame->req;
  memset(req, 0, sizeof(*req));
  req->in_frame = true;
  return req;
}

void collie_op_adopt(collie_comm_t *comm, collie_op_t *op, collie_request_t **reqp, uint64_t seq, uint64_t g) {
  op->seq = seq;
  bind_request(comm, op, *reqp = frame_request(op));
  collie_native_adopt(comm, op, g);
  comm->native_ops++;
  append_op(comm, op);
}

collie_result_t collie_op_post(collie_comm_t *comm, collie_op_t *op, collie_request_t **reqp) {
  collie_request_t *req;
  if (op->frame) {
    req = frame_request(op);
  } else {
    req = zalloc(sizeof(*req));
    if (!req) {
      char fn[64];
      snprintf(fn, sizeof(fn), "collie_%s", collie_coll_name(op->coll));
      return collie_comm_fail_no_memory(comm, fn, "its request");
    }
  }
  if (op->coll != COLLIE_COLL_SEND && op->coll != COLLIE_COLL_RECV) op->seq = ++comm->coll_seq;
  bind_request(comm, op, req);
  if (!req->in_frame) comm->posts++; /* nonblocking: see progress_main */

  if (op->native) {
    collie_native_number(comm, op);
    comm->native_ops++;
    append_op(comm, op);
    *reqp = req;
    return COLLIE_SUCCESS;
  }
  collie_sched_t *s = op->sched;
  build_successors(op);
  op->remaining = s->nsteps;
  size_t esz = collie_datatype_size(op->dt);
  const bool p2p = collie_user_p2p(op);
  for (uint32_t i = 0; i < s->nsteps; i++) {
    collie_step_t *st = &s->steps[i];
    if (!is_comm_step(st->type)) continue;
    collie_xfer_t *x = &op->xfers[i];
    collie_peer_t *peer = &comm->peers[st->peer];
    x->op = op;
    x->step = i;
    x->nbytes = st->nbytes;
    x->elem_size = (uint32_t)(esz ? esz : 1);
    if (st->type == COLLIE_STEP_SEND) {
      x->is_send = 1;
      x->sbuf = resolve(op, st->src);
      fill_header(op, x, comm->rank, st->nbytes);
      x->pseq = peer->send_seq++;
      peer->p2p_sends += p2p;
      enqueue(&peer->sendq, &peer->sendq_tail, x);
    } else {
      x->rbuf = resolve(op, st->dst);
      if (st->type == COLLIE_STEP_RECV_REDUCE) {
        x->rsrc = resolve(op, st->src);
        x->reduce = op->reduce;
      }
      x->stream = op->stream && !x->reduce;
      fill_header(op, x, st->peer, st->nbytes);
      x->pseq = peer->recv_seq++;
      peer->p2p_recvs += p2p;
      enqueue(&peer->recvq, &peer->recvq_tail, x);
    }
  }
  append_op(comm, op);

  /* Sends first: what can go out goes out before this rank spends time on local copies
   * (an out-of-place collective's own block), so that the peers work meanwhile (2 ranks,
   * 4 MiB out-of-place broadcast from collie_mem_alloc buffers: 92 against 184 us). The
   * transports' progress may complete steps and run their successors through op->work,
   * so the local steps wait in `held` meanwhile (when there are few: the common case is
   * one own block). A failure the transports meet is left in comm->failed for the next
   * collie_progress (which may retire this op). */
  uint32_t nwork = 0;
  bool sends = false;
  for (uint32_t i = 0; i < s->nsteps; i++) {
    if (op->pending[i] != 0) continue;
    if (!is_comm_step(s->steps[i].type)) {
      op->work[nwork++] = i;
      continue;
    }
    op->xfers[i].ready = 1;
    sends |= s->steps[i].type == COLLIE_STEP_SEND;
  }
  uint32_t held[16];
  if (sends && nwork && nwork <= 16) {
    pair_tee(comm, op, nwork);
    memcpy(held, op->work, sizeof(held[0]) * nwork);
    for (uint32_t i = 0; i < s->nsteps; i++) {
      if (s->steps[i].type != COLLIE_STEP_SEND || !op->xfers[i].ready) continue;
      collie_peer_t *peer = &comm->peers[s->steps[i].peer];
      if (peer->sendq == &op->xfers[i]) peer->tp->progress(comm, peer);
    }
    memcpy(op->work, held, sizeof(held[0]) * nwork);
  }
  run_ready(op, nwork);
  if (s->nsteps == 0) op->steps_done = true;
  *reqp = req;
  return COLLIE_SUCCESS;
}

/* Completes finished operations from the head, so that they complete in issue order. */
static void retire_ops(collie_comm_t *comm) {
  while (comm->ops && comm->ops->steps_done) {
    collie_op_t *op = comm->ops;
    comm->ops = op->next;
    if (!comm->ops) comm->ops_tail = NULL;
    if (op->result == COLLIE_SUCCESS && op->avg_buf && op->avg_count)
      collie_reduce_avg_finalize(op->avg_buf, op->avg_count, op->dt, comm->nranks);
    collie_request_t *req = op->req;
    req->result = op->result;
    collie_op_discard(op);
    atomic_store_explicit(&req->done, 1, memory_order_release);
  }
}

void collie_fail_all_ops(collie_comm_t *comm) {
  collie_result_t res = (collie_result_t)atomic_load(&comm->failed);
  /* Another rank's timeout ends every rank's operations, and its sentence names only the
   * peer that rank waited on, which may itself have been waiting on another: each rank
   * logs what it was waiting on, so that the chain leads to the rank that stopped. */
  if (res == COLLIE_ERR_TIMEOUT && comm->fail_from_remote && comm->ops && !comm->fail_explained) {
    char what[512];
    comm->fail_explained = true;
    collie_describe_wait(comm, what, sizeof(what));
    COLLIE_WARN(COLLIE_SUB_COLL, comm->rank, "rank %d was itself in %s when another rank's timeout ended the "
                "communicator", comm->rank, what);
  }
  for (int p = 0; p < comm->nranks; p++) {
    comm->peers[p].sendq = comm->peers[p].sendq_tail = NULL;
    comm->peers[p].recvq = comm->peers[p].recvq_tail = NULL;
  }
  comm->native_ops = 0;
  collie_native_drop_deferred(comm);
  for (collie_op_t *op = comm->ops; op; op = op->next) {
    op->result = res;
    op->steps_done = true;
    op->avg_buf = NULL;
  }
  retire_ops(comm);
}

/* The user's point-to-point transfers in a queue from x on. */
static uint64_t p2p_queued(const collie_xfer_t *x) {
  uint64_t n = 0;
  for (; x; x = x->next) n += collie_user_p2p(x->op);
  return n;
}

bool collie_check_departed(collie_comm_t *comm, collie_peer_t *peer) {
  if (!peer->gone || atomic_load(&comm->failed)) return false;
  /* Messages between two ranks are one ordered stream and a queue's transfers finish in
   * order, so the heads decide: a receive at a position the departed rank never sent to,
   * or a send at one it never received. A message it sent that is still on its way (TCP
   * races the relay of its goodbye through rank 0) has a position below gone_sent, and
   * its receive goes on waiting for it. */
  collie_xfer_t *rx = peer->recvq && peer->recvq->pseq >= peer->gone_sent ? peer->recvq : NULL;
  collie_xfer_t *tx = peer->sendq && peer->sendq->pseq >= peer->gone_recvd ? peer->sendq : NULL;
  if (!rx && !tx) return false;
  /* What finished before it keeps its result: its messages did arrive. */
  retire_ops(comm);
  char pd[160], what[96], line[768];
  const collie_xfer_t *x = rx ? rx : tx;
  const collie_op_t *op = x->op;
  const bool p2p = collie_user_p2p(op);
  collie_peer_desc(comm, peer->rank, pd, sizeof(pd));
  if (rx && p2p) {
    uint64_t got = peer->p2p_recvs - p2p_queued(rx); /* every earlier one has completed */
    snprintf(line, sizeof(line),
             "rank %d waits in collie_recv for %llu elements of %s from %s, which destroyed its communicator after "
             "sending it %llu point-to-point message%s, all received",
             comm->rank, (unsigned long long)op->count, collie_datatype_name(op->dt), pd, (unsigned long long)got,
             got == 1 ? "" : "s");
  } else if (rx) {
    snprintf(line, sizeof(line),
             "rank %d waits in %s to receive %llu bytes from %s, which destroyed its communicator without sending "
             "them (every message it did send this rank was received)",
             comm->rank, collie_request_what(op->req, what, sizeof(what)), (unsigned long long)x->nbytes, pd);
  } else if (p2p) {
    uint64_t nth = peer->p2p_sends - p2p_queued(tx) + 1;
    snprintf(line, sizeof(line),
             "rank %d waits in collie_send for %s to receive %llu elements of %s (its point-to-point message #%llu "
             "to that rank), but that rank destroyed its communicator without receiving it",
             comm->rank, pd, (unsigned long long)op->count, collie_datatype_name(op->dt), (unsigned long long)nth);
  } else {
    snprintf(line, sizeof(line),
             "rank %d waits in %s for %s to receive %llu bytes, but that rank destroyed its communicator without "
             "receiving them",
             comm->rank, collie_request_what(op->req, what, sizeof(what)), pd, (unsigned long long)x->nbytes);
  }
  collie_comm_fail(comm, COLLIE_ERR_REMOTE, false,
                   "%s: every send needs a matching receive (and every receive a send) before either rank "
                   "destroys its communicator; check why rank %d stopped early (its errors and log)",
                   line, peer->rank);
  return true;
}

int collie_progress(collie_comm_t *comm) {
  if (atomic_load_explicit(&comm->failed, memory_order_acquire)) {
    collie_fail_all_ops(comm);
    return 1;
  }
  int moved = 0;
  bool messages = false;
  if (comm->oversubscribed) collie_set_wait_peer(comm, -1); /* the wait's hint: shm_rounds.h */
  for (int p = 0; p < comm->nranks; p++) {
    collie_peer_t *peer = &comm->peers[p];
    if (!peer->sendq && !peer->recvq) continue;
    messages = true;
    int r = peer->tp->progress(comm, peer);
    if (r < 0 || (peer->gone && collie_check_departed(comm, peer))) {
      collie_fail_all_ops(comm);
      return 1;
    }
    moved |= r > 0;
  }
  if (comm->native_ops || collie_native_deferred(comm)) {
    int r = collie_native_progress(comm);
    if (r < 0) {
      collie_fail_all_ops(comm);
      return 1;
    }
    moved |= r > 0;
  }
  /* The wait's hint names the peer a shared-memory collective waits for; with messages
   * in flight the caller may wait for one of those instead (core/wait.c). */
  if (messages && comm->oversubscribed) collie_set_wait_peer(comm, -1);
  if (comm->ops && comm->ops->steps_done) {
    retire_ops(comm);
    moved = 1;
  }
  if (moved) comm->progress_count++;
  return moved;
}

/* op's transfer with peer p that waits at the head of p's queue, its dependencies done; NULL if none. */
static const collie_xfer_t *ready_xfer(const collie_comm_t *comm, const collie_op_t *op, int p) {
  const collie_peer_t *pr = &comm->peers[p];
  if (pr->recvq && pr->recvq->op == op && pr->recvq->ready) return pr->recvq;
  return pr->sendq && pr->sendq->op == op && pr->sendq->ready ? pr->sendq : NULL;
}

const collie_xfer_t *collie_op_waited_xfer_avoiding(const collie_comm_t *comm, const collie_op_t *op, int avoid,
                                                   int *peer) {
  const collie_xfer_t *x;
  for (int p = 0; p < comm->nranks; p++)
    if (p != avoid && (x = ready_xfer(comm, op, p))) {
      *peer = p;
      return x;
    }
  if (avoid >= 0 && avoid < comm->nranks && (x = ready_xfer(comm, op, avoid))) {
    *peer = avoid;
    return x;
  }
  return NULL;
}

const collie_xfer_t *collie_op_waited_xfer(const collie_comm_t *comm, const collie_op_t *op, int *peer) {
  return collie_op_waited_xfer_avoiding(comm, op, -1, peer);
}

bool collie_comm_pending(const collie_comm_t *comm) { return comm->ops || collie_native_deferred(comm); }

void collie_describe_wait(collie_comm_t *comm, char *buf, size_t len) {
  collie_describe_wait_avoiding(comm, -1, buf, len);
}

void collie_describe_wait_avoiding(collie_comm_t *comm, int avoid, char *buf, size_t len) {
  char pd[160], what[96];
  for (collie_op_t *op = comm->ops; op; op = op->next) {
    if (op->native) {
      if (op->steps_done) continue;
      collie_native_describe(comm, op, buf, len);
      return;
    }
    int p;
    const collie_xfer_t *x = collie_op_waited_xfer_avoiding(comm, op, avoid, &p);
    if (x && !x->is_send)
      snprintf(buf, len, "%s: waiting to receive %llu bytes from %s", collie_request_what(op->req, what, sizeof(what)),
               (unsigned long long)x->nbytes, collie_peer_desc(comm, p, pd, sizeof(pd)));
    else if (x)
      snprintf(buf, len, "%s: waiting for %s to receive %llu bytes", collie_request_what(op->req, what, sizeof(what)),
               collie_peer_desc(comm, p, pd, sizeof(pd)), (unsigned long long)x->nbytes);
    else
      snprintf(buf, len, "%s", collie_request_what(op->req, what, sizeof(what)));
    return;
  }
  /* A small reduce's non-root returned before comparing its call with the root's: what is
   * left waits for the root to enter that reduce (collie_comm_synchronize, destroy). */
  const int root = collie_native_deferred_root(comm);
  if (root >= 0)
    snprintf(buf, len, "the comparison of a reduce it completed with the call of its root, %s, which has not "
             "entered that reduce", collie_peer_desc(comm, root, pd, sizeof(pd)));
  else
    snprintf(buf, len, "no operation");
}
