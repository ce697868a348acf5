/* The control channel: the bootstrap connections (every rank <-> rank 0) kept open for the
 * communicator's life. They carry the card exchange, the set-up barriers, failure notices
 * (the rank that detects a failure tells rank 0, which tells everyone) and the departure
 * handshake of destroy. A watchdog thread per communicator sleeps in poll() on them:
 * rank 0 notices at once when any rank's connection drops, every rank when rank 0's does. */
#ifndef COLLIE_CONTROL_H
#define COLLIE_CONTROL_H

#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "bootstrap/settings.h"
#include "bootstrap/unique_id.h"
#include "core/comm.h"
#include "core/own_waits.h"

enum {
  COLLIE_CTL_HELLO = 1,
  COLLIE_CTL_CARDS,
  COLLIE_CTL_REJECT,
  COLLIE_CTL_BARRIER,
  COLLIE_CTL_RELEASE,
  COLLIE_CTL_FAIL,
  COLLIE_CTL_BYE,
  COLLIE_CTL_BYE_ACK,
  COLLIE_CTL_JOIN_FAIL, /* instead of a greeting: this rank failed before it could join */
  COLLIE_CTL_LEFT,      /* rank 0 to the others: a rank said goodbye after N collectives */
  COLLIE_CTL_STALL,     /* to rank 0: this rank's oldest collective made no progress for a while (stall.c) */
  COLLIE_CTL_OWED,      /* rank 0 to a rank: another waits for a message of yours (stall.c) */
  COLLIE_CTL_WAITS,     /* the answer, through rank 0: what the asked rank itself waits for (stall.c) */
  COLLIE_CTL_STALL_SEEN /* rank 0 to a rank: your stall report arrived (a rank 0 that sends none is silent) */
};

typedef struct collie_control {
  int root_fd;          /* non-root: the connection to rank 0 */
  int *fds;             /* rank 0: connection of each rank (-1 for itself) */
  bool *said_bye;       /* rank 0: ranks that finished destroy's handshake */
  int nbye;
  int wake_fd;          /* eventfd: stops the watchdog */
  pthread_t watchdog;
  bool watchdog_running;
  struct pollfd *wd_poll; /* the watchdog's poll set and the rank of each entry, allocated */
  int *wd_who;            /* before it starts: without them it could not watch at all */
  pthread_mutex_t send_lock;
  pthread_mutex_t m;
  pthread_cond_t cv;
  bool bye_done;        /* the departure handshake finished */
  int64_t setup_checked_ns; /* collie_ctl_setup_failed: when it last looked */
  bool setup_failure_seen;  /* ... and whether it saw a failure (which stays) */
  collie_wire_hdr_t *stalls; /* rank 0, under m: the first stall report of recent operations (stall.c) */
  /* Under m: the last answer of a rank this one asked what it waits for (stall.c), when. */
  int waits_about;
  int64_t waits_ns;
  int64_t unseen_since_ns; /* under m: when the oldest stall report rank 0 has not acknowledged went */
  char waits_text[COLLIE_WAITS_TEXT], waits_end[COLLIE_WAITS_TEXT];
} collie_control_t;

/* Rank 0: accepts every rank on listen_fd, checks secrets, exchanges cards. Others:
 * connect to the root in `id`, present their card, receive all cards. `my_card` is filled
 * by the caller except data_addr, which `make_listener` sets once the route is known. */
typedef collie_result_t (*collie_make_listener_fn)(collie_comm_t *comm, const struct sockaddr_storage *local_ip);
collie_result_t collie_bootstrap(collie_comm_t *comm, const collie_id_info_t *id, int listen_fd,
                                 collie_card_t *my_card, const collie_settings_t *my_settings,
                                 collie_make_listener_fn make_listener);

/* A rank that failed to create the communicator before it joined (out of memory, a
 * setting it refused), with its sentence `msg`. A rank other than 0 tells rank 0, on `fd`
 * when it has connected already, else on a connection of its own, made until
 * `deadline_ns`: rank 0 then fails the creation at once on every rank that joined, where
 * it would have waited until COLLIE_CONNECT_TIMEOUT and every rank would have reported
 * this one missing. Rank 0 answers the ranks that greet it on listen_fd (if >= 0) within
 * a second with `msg`. The caller closes the sockets. */
void collie_ctl_tell_join_failure(const collie_id_info_t *id, int rank, int nranks, int listen_fd, int fd,
                                  int64_t deadline_ns, const char *msg);

/* A barrier over the control star, used only during set-up (before the watchdog runs).
 * A rank that failed during set-up calls it with `my_error` set to tell the others. */
collie_result_t collie_ctl_barrier(collie_comm_t *comm, const char *my_error);
/* Between two barriers of creation: has a rank already failed this stage (its failure is
 * waiting to be read at the barrier, or a connection closed)? For collie_socket_abandon_if,
 * with the communicator as arg: the waits for other ranks' connections then give up. */
bool collie_ctl_setup_failed(void *comm);

/* Tells rank 0 (rank 0: everyone) that this rank failed creating the communicator, with
 * its sentence: a failure after the set-up barriers, which the others would otherwise see
 * only as its connection closing. */
void collie_ctl_tell_creation_failure(collie_comm_t *comm, const char *msg);

collie_result_t collie_ctl_start_watchdog(collie_comm_t *comm);
/* Sends a failure notice (rank 0: to everyone; others: to rank 0, which relays). */
void collie_ctl_send_fail(collie_comm_t *comm, collie_result_t res, const char *msg);
/* A stalled rank's report (stall.c): its oldest pending collective, and the transfer it
 * waits for in it, if one of its messages: to or from `peer`, at position `pos` of the
 * pair's ordered stream. */
typedef struct {
  collie_wire_hdr_t call;
  int32_t peer; /* -1: waiting for no one peer */
  int32_t dir;  /* COLLIE_STALL_RECV: to receive from peer; COLLIE_STALL_SEND: for peer to receive;
                 * COLLIE_STALL_SHM: for peer to enter shared-memory round `pos` */
  uint64_t pos;
} collie_stall_t;
enum { COLLIE_STALL_RECV = 1, COLLIE_STALL_SEND = 2, COLLIE_STALL_SHM = 3,
       COLLIE_STALL_ASK = 4 /* a point-to-point wait (no operation number): only asks the peer what it waits for */ };
enum { COLLIE_STALL_RING = 64 }; /* operation numbers rank 0 remembers a stall report of */

/* This rank's oldest pending collective has made no progress for a while: the report goes
 * to rank 0, which compares it with the other stalled ranks' and asks the peer (stall.c). */
void collie_ctl_report_stall(collie_comm_t *comm, const collie_stall_t *st);
/* Rank 0: rank `from` is stalled as `st` says. Two ranks stalled in the same operation
 * number with different calls fail the communicator with COLLIE_ERR_MISMATCH; a wait for a
 * message goes to the peer as a question (collie_ctl_check_owed). */
void collie_ctl_note_stall(collie_comm_t *comm, int from, const collie_stall_t *st);
/* On the peer of a stalled rank `asker`: fails the communicator with COLLIE_ERR_MISMATCH
 * when this rank has issued the asker's operation and posted no transfer at that position
 * of their stream (it never will: a schedule posts all its messages at once). Takes
 * comm->lock. */
void collie_ctl_check_owed(collie_comm_t *comm, int asker, const collie_stall_t *st);
/* Rank 0: passes stalled rank asker's report to rank `to`, the peer it waits for. */
void collie_ctl_ask_owed(collie_comm_t *comm, int to, int asker, const collie_stall_t *st);
/* The asked rank's answer to stalled rank `asker`, `text` and `end` (collie_own_waits_describe):
 * to rank 0, which passes it on (or keeps it when it asked). */
void collie_ctl_send_waits(collie_comm_t *comm, int asker, const char *text, const char *end);
/* How long (ns) rank 0 has left this rank's stall report unacknowledged, 0 when it has
 * acknowledged every one (or this is rank 0): its watchdog answers at once unless its
 * process is stopped or starved, and every question to another rank passes through it. */
int64_t collie_ctl_relay_silent_ns(collie_comm_t *comm);
/* The answer rank `about` gave this rank at or after `since_ns`, into text and end
 * (COLLIE_WAITS_TEXT each); false if none. */
bool collie_ctl_peer_waits(collie_comm_t *comm, int about, int64_t since_ns, char *text, char *end);
/* On the asked rank: answers stalled rank `asker` with what this process waits for, unless
 * that rank is a thread of this process, or several ranks of comm are (stall.c). */
void collie_ctl_answer_waits(collie_comm_t *comm, int asker);
/* The same, best effort: nothing when another thread is sending (collie_comm_abort, which
 * may run in a signal handler that interrupted that thread). */
void collie_ctl_try_send_fail(collie_comm_t *comm, collie_result_t res, const char *msg);
/* Destroy's handshake: returns once every rank said bye, the comm failed, or the deadline. */
collie_result_t collie_ctl_depart(collie_comm_t *comm, int64_t deadline_ns);
void collie_ctl_close(collie_comm_t *comm);

#endif
