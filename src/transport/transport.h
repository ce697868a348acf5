/* The transport interface: ordered, reliable byte messages between two ranks.
 *
 * Each peer has a send queue and a receive queue of transfers (collie_xfer_t), appended in
 * the order the schedules require. A transport moves the queue heads when they are
 * `ready` (their step's dependencies are done) and calls collie_xfer_complete() for each
 * finished transfer, in queue order. Receives deliver through collie_xfer_deliver(), which
 * copies or reduces into place. */
#ifndef COLLIE_TRANSPORT_H
#define COLLIE_TRANSPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "collie.h"
#include "core/copy.h"
#include "transport/wire.h"

struct collie_comm;
struct collie_peer;
struct collie_op;

typedef void (*collie_reduce_fn_t)(void *dst, const void *a, const void *b, size_t count);

typedef struct collie_xfer {
  struct collie_xfer *next; /* in the peer's queue */
  struct collie_op *op;
  uint32_t step;
  uint8_t is_send;
  uint8_t ready;     /* dependencies done: the transport may move it */
  uint8_t hdr_done;  /* header sent / received and checked            */
  uint8_t complete;
  uint8_t tp_init;   /* the transport has set up its per-transfer state */
  uint8_t stream;    /* recv: write rbuf with streaming stores (the op's `stream`); send: the tee */
  uint64_t pseq;     /* position in the peer's queue (assigned when enqueued) */
  const char *sbuf;  /* send: source                                   */
  char *rbuf;        /* recv: destination                              */
  const char *rsrc;  /* recv-reduce: local operand (NULL: plain copy)  */
  collie_reduce_fn_t reduce;
  uint32_t elem_size;
  uint64_t nbytes;
  uint64_t done;     /* bytes moved so far (transports may track per stripe) */
  uint32_t parts_left; /* tcp: stripes not yet finished                      */
  char *tee;         /* send: also write the bytes here as they go (collie_op_t.tee_send) */
  uint64_t teed;     /* how many were                                  */
  collie_wire_hdr_t hdr; /* send: what goes out; recv: what is expected */
} collie_xfer_t;

typedef struct collie_transport {
  const char *name;
  /* Moves what it can without blocking. Returns >0 if anything moved, 0 if nothing could,
   * <0 after failing the communicator (collie_comm_fail). */
  int (*progress)(struct collie_comm *comm, struct collie_peer *peer);
  /* Releases the peer's resources; called once, at destroy or abort. */
  void (*close)(struct collie_comm *comm, struct collie_peer *peer);
} collie_transport_t;

extern const collie_transport_t collie_transport_self;
extern const collie_transport_t collie_transport_shm;
extern const collie_transport_t collie_transport_tcp;

/* Receive side: `len` bytes of payload at message offset `off` (element aligned, a whole
 * number of elements for reductions). `staged`: src is a transport's staging copy (a shm
 * slot, a socket's bounce buffer), hot in some core's cache. Streaming stores pay only
 * when the source comes from memory too: out of a shm slot they lost (2 ranks, 64 MiB
 * allgather 8.4 ms against memcpy's 6.8), out of a peer's buffer they won (4.1 against
 * 6.0). */
static inline void collie_xfer_deliver(collie_xfer_t *x, uint64_t off, const void *src, size_t len, bool staged) {
  if (!len) return;
  if (x->reduce) x->reduce(x->rbuf + off, x->rsrc + off, src, len / x->elem_size);
  else collie_copy(x->rbuf + off, src, len, x->stream && !staged);
}

/* Whether two fingerprints describe the same call: collective, datatype, count, and the
 * reduction and root where the collective has them (not the sequence number). */
bool collie_wire_same_call(const collie_wire_hdr_t *a, const collie_wire_hdr_t *b);
/* "allreduce(count=1000, float32, sum)": the call a fingerprint describes. */
const char *collie_wire_describe_call(const collie_wire_hdr_t *h, char *buf, size_t len);

/* Checks a received header against the expected one; on mismatch fails the communicator
 * with a sentence that shows both sides and returns -1. */
int collie_xfer_check_header(struct collie_comm *comm, struct collie_peer *peer, collie_xfer_t *x,
                             const collie_wire_hdr_t *got);

/* Called by a transport when the head of a queue finished; pops it and tells the executor. */
void collie_xfer_complete(struct collie_comm *comm, struct collie_peer *peer, collie_xfer_t *x);

#endif
