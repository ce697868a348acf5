/* Settings the ranks of a communicator must share, compared by rank 0 at creation.
 *
 * Each rank reads most COLLIE_* variables for itself, and most may differ between ranks
 * (timeouts, the waiting policy, streaming stores). Some may not: ranks that picked
 * algorithms from another COLLIE_ALGO or tuning file, or cut pipelines at another chunk
 * size, wait forever for messages the others never send (found hung until
 * COLLIE_EXEC_TIMEOUT, then blaming a peer as slow); another TCP_NSOCKS left a rank
 * waiting for connections that never came, and other shared-memory sizes gave segments
 * the neighbours could not read. A variable set on one host only is an everyday launch
 * mistake (mpirun passes few variables to other hosts without -x), so each rank sends
 * its values in its greeting and rank 0 refuses the job, naming the variable, two ranks
 * and their values, before anything hangs. */
#ifndef COLLIE_SETTINGS_H
#define COLLIE_SETTINGS_H

#include <stddef.h>
#include <stdint.h>

#include "bootstrap/card.h"
#include "core/comm.h"

typedef enum {
  COLLIE_SET_ALGO,          /* every rank */
  COLLIE_SET_PROTO,         /* every rank */
  COLLIE_SET_TUNING,        /* every rank: the figures, wherever they were read from */
  COLLIE_SET_CHUNK,         /* every rank: the effective size (its default depends on the hosts) */
  COLLIE_SET_TCP_NSOCKS,    /* ranks that talk TCP */
  COLLIE_SET_SHM_NSLOTS,    /* ranks of one host */
  COLLIE_SET_SHM_SLOT_SIZE, /* ranks of one host */
  COLLIE_SET_SHM_COLL_SIZE, /* ranks of one host, when all ranks share it (only then does the area exist) */
  COLLIE_NUM_SETTINGS
} collie_setting_id_t;

#define COLLIE_SETTING_SHOWN 96

typedef struct {
  uint64_t key[COLLIE_NUM_SETTINGS];                    /* compared */
  char shown[COLLIE_NUM_SETTINGS][COLLIE_SETTING_SHOWN]; /* for the sentence */
} collie_settings_t;

/* This rank's values (after collie_check_algo_config has parsed COLLIE_ALGO, COLLIE_PROTO
 * and the tuning file). */
void collie_settings_read(const collie_comm_t *comm, collie_settings_t *out);

/* Rank 0, once every rank has joined: 0 when the ranks agree, else -1 and a sentence in
 * msg naming the first setting that differs, two ranks, their values and what to do. */
int collie_settings_check(const collie_card_t *cards, const collie_settings_t *all, int nranks, char *msg,
                          size_t len);

#endif
