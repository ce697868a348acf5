/* collie_comm_split: ranks with the same color form a new communicator, ordered by key
 * (then by parent rank). Built from the parent itself: an allgather of (color, key), then
 * each group's new rank 0 makes a unique id and sends it to its members, and once the
 * groups have made their communicators an all-reduce tells every rank whether all did. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/socket.h"
#include "bootstrap/unique_id.h"
#include "core/comm.h"
#include "core/comm_internal.h"
#include "core/error.h"
#include "coll/coll.h"

typedef struct {
  int64_t color, key, rank;
} member_t;

static int by_key(const void *a, const void *b) {
  const member_t *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* The exchange on the parent: every rank's (color, key), then the new communicator's id
 * from its new rank 0 (which listens on *listen_fd). *m: the new size, 0 for NOCOLOR. */
static collie_result_t exchange(collie_comm_t *comm, const char *fn, int color, int key, collie_unique_id_t *id,
                                int *listen_fd, int *m_out, int *newrank_out, int *root_out) {
  int n = comm->nranks;
  member_t mine = {color, key, comm->rank};
  member_t *all = malloc(sizeof(member_t) * (size_t)n);
  if (!all) return collie_comm_fail_no_memory(comm, fn, "the table of %d colors and keys", n);
  /* The nonblocking calls and explicit waits, not the blocking ones: inside the caller's
   * collie_group_start/end a blocking call only queues its request, and the split needs
   * the answers now (it read the array before the all-gather had filled it). */
  collie_request_t *req;
  collie_result_t res = collie_iallgather(&mine, all, 3, COLLIE_INT64, comm, &req);
  if (!res) res = collie_wait(req);
  if (res) {
    free(all);
    return res;
  }
  int m = 0;
  for (int r = 0; r < n; r++)
    if (all[r].color == color && color != COLLIE_SPLIT_NOCOLOR) all[m++] = all[r];
  *m_out = m;
  if (color == COLLIE_SPLIT_NOCOLOR) {
    free(all);
    return COLLIE_SUCCESS;
  }
  qsort(all, (size_t)m, sizeof(member_t), by_key);
  int newrank = 0;
  for (int i = 0; i < m; i++)
    if (all[i].rank == comm->rank) newrank = i;
  *newrank_out = newrank;
  int root = (int)all[0].rank;
  *root_out = root;

  if (newrank == 0) {
    /* Listen where the parent's peers already reach this rank. */
    collie_id_info_t info = {0};
    info.root = comm->cards[comm->rank].data_addr;
    *listen_fd = collie_listen(&info.root);
    if (*listen_fd < 0) {
      /* The other members wait on the parent for the address this rank could not make:
       * the parent fails on every rank, as after an allocation failure here, where they
       * waited until COLLIE_EXEC_TIMEOUT and then blamed a missing message. */
      const int err = errno;
      free(all);
      if (m == 1) /* nobody waits for it */
        return collie_error(comm, COLLIE_ERR_SYSTEM, "%s on rank %d could not listen for the new communicator: %s", fn,
                            comm->rank, strerror(err));
      collie_comm_fail(comm, COLLIE_ERR_SYSTEM, false,
                       "%s on rank %d could not listen for the new communicator of color %d, whose rank 0 it was to "
                       "be (%s), so its %d other member(s) could not join it; the communicator now fails on every "
                       "rank: free ports or file descriptors (COLLIE_PORT_RANGE, ulimit -n), then create the "
                       "communicators again",
                       fn, comm->rank, color, strerror(err), m - 1);
      return collie_error(comm, COLLIE_ERR_SYSTEM, "%s", comm->fail_msg);
    }
    collie_random_bytes(info.secret, 16);
    info.version = COLLIE_VERSION_CODE;
    collie_id_encode(&info, id);
    for (int i = 1; i < m; i++) { /* one at a time: the id is small, the members few */
      res = collie_p2p_internal(true, id, sizeof(*id), (int)all[i].rank, comm, &req);
      if (!res) res = collie_wait(req);
      if (res) break;
    }
  } else {
    res = collie_p2p_internal(false, id, sizeof(*id), root, comm, &req);
    if (!res) res = collie_wait(req);
  }
  free(all);
  if (res && *listen_fd >= 0) {
    close(*listen_fd);
    *listen_fd = -1;
  }
  return res;
}

/* The new communicator of this rank's color, from the id exchange() gave it. Its own
 * sentence on failure, wrapped to say so on the parent. */
static collie_result_t create(collie_comm_t *comm, const char *fn, collie_unique_id_t id, int m, int newrank, int root,
                              int listen_fd, collie_comm_t **newcomm) {
  collie_config_t cfg = COLLIE_CONFIG_INIT;
  cfg.connect_timeout_ms = comm->connect_timeout_ms;
  cfg.exec_timeout_ms = comm->exec_timeout_ms;
  cfg.algo = comm->algo;
  cfg.proto = comm->proto;
  /* A member that dies now fails the parent (its watchdog sees the control channel
   * close): the creation's waits then give up instead of waiting out the connect timeout,
   * and the parent's sentence, which names the rank, is the one to report. */
  collie_socket_abandon_when(&comm->failed);
  collie_socket_refusal_final(true); /* the new rank 0 listens already: see socket.h */
  collie_result_t res = collie_comm_init_internal(newcomm, m, id, newrank, &cfg, listen_fd);
  collie_socket_refusal_final(false);
  collie_socket_abandon_when(NULL);
  const int failed = atomic_load(&comm->failed);
  if (res && failed)
    return collie_error(comm, (collie_result_t)failed, "%s on rank %d could not create the new communicator: %s", fn,
                        comm->rank, comm->fail_msg);
  if (res) { /* the creation's sentence is this thread's; the caller may ask the parent for it */
    char why[1024];
    snprintf(why, sizeof(why), "%s", collie_get_last_error(NULL));
    char whose[96] = ""; /* the sentence counts ranks of the new one; its rank 0's own says why */
    if (newrank != 0) snprintf(whose, sizeof(whose), " (rank %d there; its rank 0 is rank %d here)", newrank, root);
    return collie_error(comm, res, "%s on rank %d could not create the new communicator%s: %s", fn, comm->rank, whose,
                        why);
  }
  return res;
}

/* Whether every color's communicator was created: the lowest parent rank whose creation
 * failed, or INT32_MAX, from every rank (COLLIE_SPLIT_NOCOLOR's too). Failures within one
 * new communicator reach all its members, but not the other colors' ranks, which went on
 * while those gave up (4 ranks waited in the parent's next collective while the 4 whose
 * creation failed waited in collie_comm_destroy for them, until COLLIE_EXEC_TIMEOUT). */
static collie_result_t agree(collie_comm_t *comm, const char *fn, bool failed_here, int *first_failed) {
  int32_t mine = failed_here ? comm->rank : INT32_MAX, lowest = INT32_MAX;
  bool claimed;
  collie_result_t res = collie_coll_claim(comm, fn, &claimed);
  if (res) return res;
  collie_request_t *req; /* nonblocking and waited for: see exchange() */
  res = collie_iallreduce(&mine, &lowest, 1, COLLIE_INT32, COLLIE_MIN, comm, &req);
  if (!res) res = collie_wait(req);
  collie_coll_unclaim(comm, claimed);
  *first_failed = lowest;
  return res;
}

collie_result_t collie_comm_split(collie_comm_t *comm, int color, int key, collie_comm_t **newcomm) {
  const char *fn = "collie_comm_split";
  collie_result_t res = collie_comm_check(comm, fn);
  if (res) return res;
  if (!newcomm)
    return collie_error(comm, COLLIE_ERR_INVALID_ARGUMENT, "%s on rank %d: newcomm is NULL", fn, comm->rank);
  *newcomm = NULL;
  if (color < 0 && color != COLLIE_SPLIT_NOCOLOR)
    return collie_error(comm, COLLIE_ERR_INVALID_ARGUMENT,
                        "%s on rank %d: color %d is negative; use a color >= 0 or COLLIE_SPLIT_NOCOLOR", fn,
                        comm->rank, color);
  collie_unique_id_t id;
  int listen_fd = -1, m = 0, newrank = 0, root = 0;
  bool claimed;
  res = collie_coll_claim(comm, fn, &claimed);
  if (res) return res;
  res = exchange(comm, fn, color, key, &id, &listen_fd, &m, &newrank, &root);
  collie_coll_unclaim(comm, claimed);
  if (res) return res;
  const collie_result_t created = m ? create(comm, fn, id, m, newrank, root, listen_fd, newcomm) : COLLIE_SUCCESS;
  char why[1024] = "";
  if (created) snprintf(why, sizeof(why), "%s", collie_get_last_error(NULL));
  int first = INT32_MAX;
  const bool agreed = agree(comm, fn, created != COLLIE_SUCCESS, &first) == COLLIE_SUCCESS;
  /* This rank's own failure, or no agreement (the parent failed meanwhile): its own outcome
   * stands, with the creation's sentence (the agreement's calls may have set another). */
  if (created) return collie_error(comm, created, "%s", why);
  if (!agreed || first == INT32_MAX) return COLLIE_SUCCESS;
  /* Another color's creation failed: every rank fails the split, as that color's ranks
   * do, and this color's communicator goes (its members all destroy it here, together). */
  if (*newcomm) collie_comm_destroy(*newcomm);
  *newcomm = NULL;
  return collie_error(comm, COLLIE_ERR_REMOTE,
                      "%s on rank %d: the new communicator of rank %d could not be created (its own error says why), "
                      "so the split failed on every rank; this rank's new communicator was destroyed: every rank "
                      "may create the communicators again",
                      fn, comm->rank, first);
}
