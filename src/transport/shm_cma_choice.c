/* COLLIE_SHM_CMA unset: whether ordinary (malloc) buffers travel between the processes of
 * this host by process_vm_readv or through the shared-memory ring is measured once, when
 * the communicator is created.
 *
 * Neither way wins everywhere. CMA copies once, but in the kernel (page by page, pinning
 * the sender's pages) and on the receiver's CPU alone; the ring copies twice, in user space
 * and on both CPUs at once. On the AMD EPYC VM the kernel's copy stops at about 15 GB/s even
 * for data in cache, where memcpy runs at 50 to 120, and in that VM's usual state the ring
 * was the faster way (2 ranks, ring against CMA: the exchange below 36 against 74 us; median
 * of 3, busbw GB/s: all-to-all 1 MiB 18.4 against 7.7, all-gather 1 MiB 19.6 against 9.9,
 * broadcast 256 KiB 47.5 against 14.4). In its slow states, where copies handed from one CPU
 * to another crawl, and on an Intel VM, CMA won 1.5 to 5 times (docs/tuning.md). A fixed
 * rule lost one of the two by 2 to 5 times, so the ranks ask the machine.
 *
 * Local ranks 0 and 1 exchange 1 MiB both ways, each way in turn (warm-ups first: the
 * first use of a buffer or of a ring slot costs several times a later one), and local rank
 * 0 keeps the faster way's best time against the other's; it sends the answer to the other
 * local ranks, so they all decide alike (the shared-memory collectives and the cost model
 * rely on that). It takes about 1 ms. Each host decides for itself: only its ranks' own
 * messages depend on it, and the cost model reads it only when every rank is on one host.
 * The moment matters as much as the machine (a slow state lasts minutes), which is why it
 * is measured here and not once by collie-tune. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/native/shm_native.h"
#include "coll/post.h"
#include "core/comm.h"
#include "core/error.h"
#include "core/log.h"
#include "transport/shm.h"

#define MEASURE_BYTES ((size_t)1 << 20)
#define MEASURE_WARMUPS 2 /* per way */
#define MEASURE_ROUNDS 5  /* per way, the two ways alternating */

/* Posts a send or a receive of n bytes with peer. Every message here is posted and waited
 * for directly, not through collie_send/collie_recv: a communicator created inside
 * collie_group_start/end would only queue those, and the ranks would then decide apart. */
static collie_result_t post(collie_comm_t *comm, bool send, int peer, void *buf, size_t n, collie_request_t **req) {
  return collie_p2p_internal(send, buf, n, peer, comm, req);
}

/* One exchange with peer: both directions at once, as a 2-rank all-to-all does. Returns
 * the time in ns through *ns. */
static collie_result_t exchange(collie_comm_t *comm, int peer, char *sbuf, char *rbuf, int64_t *ns) {
  collie_request_t *send, *recv;
  const int64_t t0 = collie_now_ns();
  collie_result_t res = post(comm, true, peer, sbuf, MEASURE_BYTES, &send);
  if (res) return res;
  res = post(comm, false, peer, rbuf, MEASURE_BYTES, &recv);
  collie_result_t sres = collie_wait(send);
  if (res) return res;
  res = collie_wait(recv);
  *ns = collie_now_ns() - t0;
  return res ? res : sres;
}

/* Local ranks 0 and 1: the exchanges, each way in turn. best[1]: by CMA, best[0]: ring. */
static collie_result_t time_both_ways(collie_comm_t *comm, int peer, int64_t best[2]) {
  collie_shm_state_t *st = comm->shm;
  char *sbuf = malloc(MEASURE_BYTES), *rbuf = malloc(MEASURE_BYTES);
  if (!sbuf || !rbuf) {
    free(sbuf);
    free(rbuf);
    return collie_init_no_memory(comm, comm->rank, "the buffers that time process_vm_readv");
  }
  memset(sbuf, comm->local_rank + 1, MEASURE_BYTES);
  memset(rbuf, 0, MEASURE_BYTES);
  best[0] = best[1] = INT64_MAX;
  collie_result_t res = COLLIE_SUCCESS;
  for (int i = 0; !res && i < 2 * (MEASURE_WARMUPS + MEASURE_ROUNDS); i++) {
    const int cma = i & 1;
    int64_t ns = 0;
    st->cma_msgs = cma; /* what this rank's sends do; both ranks switch in step */
    res = exchange(comm, peer, sbuf, rbuf, &ns);
    if (res) break;
    if (i >= 2 * MEASURE_WARMUPS && ns < best[cma]) best[cma] = ns;
    /* each way must deliver, to its last byte: the peer filled its buffer with its index + 1 */
    const char want = (char)(2 - comm->local_rank);
    if (rbuf[0] != want || rbuf[MEASURE_BYTES - 1] != want)
      res = collie_error(comm, COLLIE_ERR_INTERNAL,
                         "rank %d: the exchange %s that measures process_vm_readv delivered wrong data; set "
                         "COLLIE_SHM_CMA=0 and report this",
                         comm->rank, cma ? "by process_vm_readv" : "through the shared-memory ring");
    rbuf[0] = rbuf[MEASURE_BYTES - 1] = 0;
  }
  free(sbuf);
  free(rbuf);
  return res;
}

/* The verdict, one byte from local rank 0 to another local rank (or received from it). */
static collie_result_t verdict(collie_comm_t *comm, bool send, int peer, uint8_t *b) {
  collie_request_t *req;
  collie_result_t res = post(comm, send, peer, b, 1, &req);
  return res ? res : collie_wait(req);
}

collie_result_t collie_shm_cma_measure(collie_comm_t *comm) {
  collie_shm_state_t *st = comm->shm;
  if (!st || !st->cma_measure) return COLLIE_SUCCESS; /* the same answer on every local rank */
  st->cma_measure = false;
  uint8_t use_cma = 1;
  collie_result_t res = COLLIE_SUCCESS;
  int64_t best[2] = {0, 0};
  if (comm->local_rank < 2) res = time_both_ways(comm, comm->local_ranks[1 - comm->local_rank], best);
  if (res) return res;
  if (comm->local_rank == 0) {
    use_cma = best[1] < best[0];
    for (int li = 1; !res && li < comm->nlocal; li++) res = verdict(comm, true, comm->local_ranks[li], &use_cma);
  } else {
    res = verdict(comm, false, comm->local_ranks[0], &use_cma);
  }
  if (res) return res;
  st->cma_msgs = use_cma != 0;
  /* where the ring won, the broadcast may still read by CMA (its rule: shm_direct.c) */
  const size_t bcast_from = use_cma ? 0 : collie_native_bcast_split_min(comm);
  char bcast[64] = "";
  if (bcast_from) snprintf(bcast, sizeof(bcast), " (the broadcast reads by it from %zu MiB)", bcast_from >> 20);
  if (comm->local_rank == 0)
    COLLIE_INFO(COLLIE_SUB_TRANSPORT, comm->rank,
                "process_vm_readv measured against the shared-memory ring (1 MiB both ways between ranks %d and "
                "%d, best of %d): %.1f us against %.1f us, so %s%s; COLLIE_SHM_CMA=0 or 1 fixes the choice",
                comm->local_ranks[0], comm->local_ranks[1], MEASURE_ROUNDS, (double)best[1] / 1e3,
                (double)best[0] / 1e3,
                use_cma ? "on for messages of 64 KiB and more, and in the shared-memory all-to-all"
                        : "off: ordinary buffers go through the ring",
                bcast);
  else
    COLLIE_INFO(COLLIE_SUB_TRANSPORT, comm->rank, "process_vm_readv %s for messages, as rank %d measured",
                use_cma ? "on" : "off", comm->local_ranks[0]);
  return COLLIE_SUCCESS;
}
