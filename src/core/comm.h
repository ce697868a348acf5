/* The communicator: ranks, peers and their transports, the queue of operations, the
 * failure state that the watchdog and the transports share. */
#ifndef COLLIE_COMM_H
#define COLLIE_COMM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "bootstrap/card.h"
#include "collie.h"
#include "core/lock.h"
#include "transport/transport.h"

struct collie_op;
struct collie_shm_state;
struct collie_tcp_state;
struct collie_control;

typedef struct collie_peer {
  int rank;
  const collie_transport_t *tp;
  void *tp_state;
  collie_xfer_t *sendq, *sendq_tail;
  collie_xfer_t *recvq, *recvq_tail;
  uint64_t send_seq, recv_seq; /* next queue positions to assign */
  uint64_t p2p_sends, p2p_recvs; /* point-to-point messages posted, for sentences */
  /* The peer destroyed its communicator having sent this rank `gone_sent` messages and
   * received `gone_recvd` from it (its goodbye, relayed by rank 0): a receive at a queue
   * position from gone_sent on, or a send from gone_recvd on, can never be matched
   * (collie_check_departed). Written under comm->lock. */
  bool gone;
  uint64_t gone_sent, gone_recvd;
  struct collie_peer *next_active; /* peers with non-empty queues */
  bool active;
} collie_peer_t;

/* comm->magic: a handle the user may still hold after collie_comm_destroy or abort is
 * recognised (collie_comm_check) while its memory waits in a quarantine (comm_destroy.c). */
enum { COLLIE_COMM_LIVE = 0x636f6d6d, COLLIE_COMM_DEAD = 0x64656164 };

struct collie_comm {
  uint32_t magic;
  int rank, nranks;
  uint8_t secret[16];
  uint64_t comm_hash;          /* names shared segments, checks connections */
  collie_card_t *cards;        /* every rank's card, index = rank */
  collie_peer_t *peers;        /* index = rank */
  int nlocal, local_rank;      /* ranks on this host and this rank's index among them */
  int *local_ranks;            /* comm ranks of the local ranks, ascending */
  int *group_of, ngroups;      /* every rank's group of ranks sharing memory (comm_init.c) */
  int group_size;              /* the groups' size when all are alike, else 0 */

  int connect_timeout_ms, exec_timeout_ms;
  char *algo, *proto;          /* configuration strings (owned) */
  struct collie_algo_spec_s *algo_spec; /* parsed algo (tune/) */
  void *_Atomic scratch_pool;   /* one reusable scratch buffer (sched/executor.c) */
  struct collie_sched_cache *sched_cache; /* schedules by shape (coll/sched_cache.c) */
  size_t chunk_bytes;

  collie_lock_t lock;          /* posting and progress (core/lock.h) */
  struct collie_op *ops, *ops_tail; /* posted, in issue order */
  uint64_t coll_seq;           /* collectives issued so far */
  /* The thread inside a blocking collective on this communicator (0: none), and which
   * collective (its collie_coll_t, -1 for collie_comm_split, and number): another thread's
   * collective meanwhile fails the communicator (coll/coll.c). Set under lock; cleared by
   * that collective's wait (or the end of the split). */
  _Atomic uintptr_t coll_thread;
  int coll_thread_coll;
  uint64_t coll_thread_seq;
  /* The fewest collectives a rank had issued when it destroyed its communicator
   * (UINT64_MAX while none has), and that rank: a collective beyond it waits for a rank
   * that is gone (collie_comm_peer_left). */
  _Atomic uint64_t left_after;
  _Atomic int left_rank;
  uint64_t native_rounds;      /* rounds of shared-memory collectives posted so far */
  uint64_t native_end[2];      /* the end of the last posted rounds staged in each area layout */
  int native_ops;              /* posted shared-memory collectives not yet finished */
  bool native_prev_all;        /* the last finished round waited for every rank's staging */
  uint64_t native_done_seen;   /* every other rank's `done` was at least this when last read */
  uint32_t native_logged;      /* collectives whose shared-memory choice was logged */
  /* The last call that chose the shared-memory collectives (coll/coll.c): the same call
   * again skips the cost model, whose answer for a communicator never changes */
  struct {
    int coll;
    size_t bytes, elem_size;
    const void *algo; /* the collie_algo_t chosen; NULL: none yet */
    bool fast;        /* a collective of one inline round, or a barrier: the fast lane may run it
                       * (coll/fast_lane.c, collie_fast_lane_serves) */
  } native_memo;
  bool native_direct_logged;   /* the first single-copy shared-memory collective was logged */
  int64_t last_progress_ns;    /* first clock read after progress_count last changed; 0: none yet */
  uint32_t idle_checks;        /* collie_check_idle calls since then (the clock is read every 64th) */
  int64_t stall_next_ns;       /* when a stall may be reported to rank 0 again (bootstrap/stall.c) */
  int stall_asked;             /* the peer the last report asked what it waits for (-1: none) ... */
  int64_t stall_asked_ns;      /* ... and when */
  int64_t waits_repost_ns;     /* when to post this process's waits in the segments again (core/wait.c), 0: not */
  int64_t timeout_reask_ns;    /* when the timeout asked the peer again (core/wait.c), 0: not during this stall */
  bool ask_soon;               /* asked what it waits for: ask its own peer at the next clock read (own_waits.c) */
  uint64_t progress_count, progress_seen; /* passes that moved something; the count last seen */
  int spin, yield;             /* microseconds of polling, then of yielding, before sleeping */
  bool oversubscribed;         /* this host's ranks outnumber the cores this process may use */
  uint64_t stream_bytes;       /* COLLIE_STREAM_BYTES for the host's ranks (comm_init.c; 0: never stream) */
  /* With more ranks than cores: the rank a shared-memory collective waited for in the last
   * progress pass (its local index too: those need every rank local); -1: none. A hint for
   * the waiter (wait.c), written under lock by whichever thread ran the pass: hence atomic,
   * relaxed. Not kept up otherwise, since nothing reads it then. */
  _Atomic int wait_peer;

  struct collie_shm_state *shm;
  struct collie_tcp_state *tcp;
  struct collie_control *ctl;  /* bootstrap connections kept as the failure channel */

  _Atomic int failed;          /* collie_result_t of the first failure, 0 while healthy */
  char fail_msg[1024];         /* written once, before `failed` is published */
  bool fail_from_remote;       /* the failure was another rank's, relayed (written with fail_msg) */
  bool fail_explained;         /* this rank has logged what it was waiting on then (executor.c) */
  _Atomic int aborted;
  /* collie_comm_abort ran in a signal handler on the thread holding `lock`: the teardown
   * and the release of the handle wait for the next wait or call (collie_comm_end_abort). */
  _Atomic int abort_deferred;
  _Atomic int refs;            /* the user's handle + outstanding requests */
  _Atomic int destroyed;
  /* Threads in a wait that yields or sleeps, or in a synchronize, on this communicator:
   * while there are any, its shared segments outlive its destroy until the last reference
   * (comm_destroy.c). */
  _Atomic int waiters;

  pthread_mutex_t err_lock;
  char last_error[1024];

  pthread_t progress_thread;   /* COLLIE_PROGRESS_THREAD */
  _Atomic bool has_progress_thread; /* read by the watchdog too (collie_comm_wake) */
  _Atomic int stop_progress;
  /* The progress thread sleeps on this futex word while nothing is posted; a post, a
   * failure or the stop bumps it (collie_progress_kick). `progress_asleep`, under lock:
   * the thread found nothing to do and may be asleep, so a post must wake it (not while it
   * only naps: progress_main). */
  _Atomic uint32_t progress_kick;
  bool progress_asleep;
  uint64_t posts; /* nonblocking operations posted, under lock: whether any came while the thread napped */
  /* Threads inside a wait (collie_wait, a blocking call, a synchronize) on this
   * communicator: each moves the data itself, and while there are any the progress thread
   * stands aside (progress_main), so that the two do not take turns on the lock and the
   * cores. The last one to leave wakes it if operations remain. */
  _Atomic int driving;
};

static inline void collie_set_wait_peer(collie_comm_t *comm, int rank) {
  atomic_store_explicit(&comm->wait_peer, rank, memory_order_relaxed);
}

void collie_comm_set_last_error(collie_comm_t *comm, const char *msg);
const char *collie_comm_last_error(const collie_comm_t *comm);

/* Fails the communicator (first failure wins): pending and later operations return `res`
 * with `msg`. The other ranks are told through the control channel unless `from_remote`
 * (another rank's failure, or an abort) on a rank other than 0: rank 0 passes on every
 * failure but an abort. */
void collie_comm_fail(collie_comm_t *comm, collie_result_t res, bool from_remote, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Fails the communicator with the sentence a local peer posted in its segment when its own
 * failed (collie_shm_post_failure), if one did; returns whether. */
bool collie_comm_fail_as_local_peer(collie_comm_t *comm);
/* For a peer found gone (its connection closed, its process exited): a rank usually leaves
 * because the communicator failed elsewhere first, and the notice of that cause may still
 * be on its way over the control channel (read by this rank's watchdog, which fails the
 * communicator without comm->lock, so callers may hold it), or be in a local peer's
 * segment: a rank resumed after a stop reached its reads of a dead peer before its
 * watchdog read the notice (coll_fuzz_stop_hosts_root_4 under load). Waits up to 300 ms
 * for the communicator to fail, and returns whether it has: the caller then blames nobody
 * itself. */
bool collie_comm_await_failure(collie_comm_t *comm);
/* An allocation failed while this rank posted `fn` (a collective, a send or receive, a
 * split): the other ranks have posted their part or will, and would wait for this rank's
 * until COLLIE_EXEC_TIMEOUT, so the communicator fails on every rank at once with this
 * sentence (a one-rank communicator only returns it). `what` says what could not be
 * allocated. Returns COLLIE_ERR_SYSTEM. Safe with comm->lock held, like collie_comm_fail. */
collie_result_t collie_comm_fail_no_memory(collie_comm_t *comm, const char *fn, const char *what, ...)
    __attribute__((format(printf, 3, 4)));
/* Creating a communicator ran out of memory on `rank` (comm may be NULL: its own memory
 * was what failed); `what` names the allocation. Returns COLLIE_ERR_SYSTEM. */
collie_result_t collie_init_no_memory(collie_comm_t *comm, int rank, const char *what);
/* Rank `rank` destroyed its communicator after issuing `issued` collectives (its goodbye,
 * relayed by rank 0). If this rank has issued more, the communicator fails at once on every
 * rank, where the collective would have waited for it until COLLIE_EXEC_TIMEOUT; later
 * ones are caught as they are posted (collie_comm_check_left). With `counts`, the goodbye
 * also said how many messages that rank had sent to this one (`sent`) and received from
 * it (`recvd`): a pending send or receive it can no longer match fails the communicator
 * too (collie_check_departed). Takes comm->lock. */
void collie_comm_peer_left(collie_comm_t *comm, int rank, uint64_t issued, bool counts, uint64_t sent,
                           uint64_t recvd);
/* Under comm->lock, after a collective was posted: fails the communicator when it goes
 * beyond what a departed rank issued. */
void collie_comm_check_left(collie_comm_t *comm);
/* Describes a peer for error sentences: "rank 2 (pid 4711 on host x)". */
const char *collie_peer_desc(const collie_comm_t *comm, int rank, char *buf, size_t len);

/* Wakes every thread of this rank sleeping in a wait (after a failure, abort, ...). Takes
 * no lock: it is called with comm->lock held too. */
void collie_comm_wake(collie_comm_t *comm);
/* Wakes the progress thread if it sleeps for want of work (wait.c); no lock needed. */
void collie_progress_kick(collie_comm_t *comm);

/* Completes an abort that a signal handler had to leave half done; call without the lock. */
void collie_comm_end_abort(collie_comm_t *comm);

/* Reference counting: the comm's memory lives until the user's handle and every request
 * are gone. */
void collie_comm_retain(collie_comm_t *comm);
void collie_comm_release(collie_comm_t *comm);

/* Validates a communicator handle from the user; returns COLLIE_SUCCESS or an error. */
collie_result_t collie_comm_check(collie_comm_t *comm, const char *fn);
/* The handle alone (not NULL, not destroyed, not garbage), for calls that work on a failed
 * communicator too. */
collie_result_t collie_comm_check_handle(const collie_comm_t *comm, const char *fn);

int64_t collie_now_ns(void);

/* pthread_create for collie's own threads (watchdog, progress, collie_comm_init_all's
 * ranks): they start with every signal blocked, so that the program's handlers run on its
 * own threads. A handler that ran on the watchdog and called collie_comm_abort freed the
 * watchdog's state under it. */
int collie_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg);

#endif
