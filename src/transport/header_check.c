/* Matching a received message against what this rank expects; a disagreement becomes
 * COLLIE_ERR_MISMATCH with a sentence that shows both sides. */
#include <stdio.h>
#include <string.h>

#include "algo/algo.h"
#include "core/comm.h"

static bool is_reduction(int coll) {
  return coll == COLLIE_COLL_ALLREDUCE || coll == COLLIE_COLL_REDUCE || coll == COLLIE_COLL_REDUCE_SCATTER ||
         coll == COLLIE_COLL_REDUCE_SCATTERV;
}

static bool is_rooted(int coll) {
  return coll == COLLIE_COLL_BROADCAST || coll == COLLIE_COLL_REDUCE || coll == COLLIE_COLL_SCATTER ||
         coll == COLLIE_COLL_GATHER;
}

bool collie_wire_same_call(const collie_wire_hdr_t *a, const collie_wire_hdr_t *b) {
  return a->coll == b->coll && a->dtype == b->dtype && a->count == b->count &&
         a->counts_hash == b->counts_hash && (!is_reduction(a->coll) || a->redop == b->redop) &&
         (!is_rooted(a->coll) || a->root == b->root);
}

/* "allreduce(count=1000, float32, sum)" */
static const char *describe(const collie_wire_hdr_t *h, char *buf, size_t len) {
  int n = snprintf(buf, len, "%s(", collie_coll_name((collie_coll_t)h->coll));
  if (h->coll != COLLIE_COLL_BARRIER)
    n += snprintf(buf + n, len - (size_t)n, "count=%llu, %s", (unsigned long long)h->count,
                  collie_datatype_name((collie_datatype_t)h->dtype));
  if (is_reduction(h->coll)) n += snprintf(buf + n, len - (size_t)n, ", %s", collie_redop_name((collie_redop_t)h->redop));
  if (is_rooted(h->coll)) n += snprintf(buf + n, len - (size_t)n, ", root=%d", h->root);
  snprintf(buf + n, len - (size_t)n, ")");
  return buf;
}

const char *collie_wire_describe_call(const collie_wire_hdr_t *h, char *buf, size_t len) {
  return describe(h, buf, len);
}

int collie_xfer_check_header(collie_comm_t *comm, collie_peer_t *peer, collie_xfer_t *x, const collie_wire_hdr_t *got) {
  const collie_wire_hdr_t *want = &x->hdr;
  char pd[160], a[160], b[160];
  collie_peer_desc(comm, peer->rank, pd, sizeof(pd));
  if (got->magic != COLLIE_WIRE_MAGIC || got->src_rank != peer->rank) {
    collie_comm_fail(comm, COLLIE_ERR_INTERNAL, false,
                     "rank %d received a corrupt message header from %s; the stream is out of step (was the "
                     "connection shared with another program?)",
                     comm->rank, pd);
    return -1;
  }
  if (collie_wire_same_call(got, want) && got->seq == want->seq && got->nbytes == want->nbytes) return 0;
  if (want->coll == COLLIE_COLL_SEND && got->coll == COLLIE_COLL_SEND) {
    collie_comm_fail(comm, COLLIE_ERR_MISMATCH, false,
                     "rank %d sent %llu elements of %s (%llu bytes) to rank %d while rank %d expected to receive "
                     "%llu elements of %s (%llu bytes) from it; make the send and receive counts and datatypes "
                     "match",
                     peer->rank, (unsigned long long)got->count, collie_datatype_name((collie_datatype_t)got->dtype),
                     (unsigned long long)got->nbytes, comm->rank, comm->rank, (unsigned long long)want->count,
                     collie_datatype_name((collie_datatype_t)want->dtype), (unsigned long long)want->nbytes);
  } else if (want->coll == COLLIE_COLL_SEND || got->coll == COLLIE_COLL_SEND) {
    collie_comm_fail(comm, COLLIE_ERR_MISMATCH, false,
                     "rank %d sent %s%s to rank %d while rank %d expected %s%s from it; every rank must issue "
                     "its collectives and point-to-point calls on a communicator in the same order",
                     peer->rank, got->coll == COLLIE_COLL_SEND ? "a point-to-point message " : "",
                     got->coll == COLLIE_COLL_SEND ? "" : describe(got, a, sizeof(a)), comm->rank, comm->rank,
                     want->coll == COLLIE_COLL_SEND ? "a point-to-point message" : describe(want, b, sizeof(b)),
                     "");
  } else if (!strcmp(describe(got, a, sizeof(a)), describe(want, b, sizeof(b))) && got->seq == want->seq &&
             got->counts_hash != want->counts_hash) {
    collie_comm_fail(comm, COLLIE_ERR_MISMATCH, false,
                     "rank %d called %s as operation #%llu with other recvcounts than rank %d (the same sum, "
                     "divided differently among the ranks); every rank must pass the same recvcounts",
                     peer->rank, a, (unsigned long long)want->seq, comm->rank);
  } else if (!strcmp(a, b) && got->seq == want->seq) {
    /* The same call on both sides, but a message of another size: the counts arrays of a
     * v-collective disagree (they travel in no header). Showing the calls alone gave a
     * sentence whose two sides read the same. */
    char why[160];
    if (want->coll == COLLIE_COLL_ALLTOALLV)
      snprintf(why, sizeof(why), "rank %d's sendcounts[%d] must equal rank %d's recvcounts[%d]", peer->rank,
               comm->rank, comm->rank, peer->rank);
    else if (want->coll == COLLIE_COLL_ALLGATHERV || want->coll == COLLIE_COLL_REDUCE_SCATTERV)
      snprintf(why, sizeof(why), "every rank must pass the same recvcounts");
    else
      snprintf(why, sizeof(why), "the ranks divide the operation differently: settings that must agree differ");
    collie_comm_fail(comm, COLLIE_ERR_MISMATCH, false,
                     "rank %d sent a message of %llu bytes in %s #%llu to rank %d while rank %d expected %llu bytes "
                     "from it in that operation; %s",
                     peer->rank, (unsigned long long)got->nbytes, collie_coll_name((collie_coll_t)want->coll),
                     (unsigned long long)want->seq, comm->rank, comm->rank, (unsigned long long)want->nbytes, why);
  } else {
    collie_comm_fail(comm, COLLIE_ERR_MISMATCH, false,
                     "rank %d called %s as operation #%llu while rank %d called %s as operation #%llu; every "
                     "rank must call the same collectives with matching arguments in the same order",
                     peer->rank, describe(got, a, sizeof(a)), (unsigned long long)got->seq, comm->rank,
                     describe(want, b, sizeof(b)), (unsigned long long)want->seq);
  }
  return -1;
}
