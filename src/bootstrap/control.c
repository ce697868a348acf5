/* Control channel: bootstrap exchange, set-up barriers, failure notices, departure. */
#include "bootstrap/control.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "bootstrap/fork_guard.h"
#include "bootstrap/socket.h"
#include "core/error.h"
#include "core/log.h"
#include "core/params.h"
#include "core/progress_others.h"
#include "transport/tcp.h"

#define CTL_MAGIC 0x434c4354u /* "CLCT" */
#define CTL_MAX_PAYLOAD (1u << 26)

typedef struct {
  uint32_t magic, type;
  int32_t rank;
  uint32_t len;
} frame_t;

typedef struct {
  uint8_t secret[16];
  int32_t nranks;
  uint32_t version;
  collie_card_t card;
  collie_settings_t settings;
} hello_t;

/* What every build's greeting starts with (see the check in root_accept_all). */
#define HELLO_HEAD (offsetof(hello_t, card) + sizeof(int32_t))
_Static_assert(offsetof(collie_card_t, rank) == 0, "the card's rank leads the greeting's variable part");

typedef struct {
  int32_t code, origin;
  char text[1024];
} fail_t;

typedef struct {
  uint8_t secret[16];
  int32_t nranks;
  fail_t fail;
} join_fail_t;

/* What a rank asked by a stalled one waits for itself (COLLIE_CTL_WAITS). */
typedef struct {
  int32_t asker, about;
  char text[COLLIE_WAITS_TEXT], end[COLLIE_WAITS_TEXT];
} waits_t;

/* A goodbye (destroy), and its relay by rank 0: how many collectives the rank issued and,
 * with `counts`, how many messages it had sent to the rank that reads the relay and
 * received from it. The goodbye itself carries those two for every rank, as nranks pairs
 * after its left_t (goodbye()); rank 0 passes each rank only its own pair, so that a
 * departure costs it O(nranks) bytes, not O(nranks^2). */
typedef struct {
  int32_t rank;
  uint32_t counts;
  uint64_t issued;
  uint64_t sent, recvd;
} left_t;

static int send_frame(int fd, uint32_t type, int rank, const void *payload, uint32_t len, int64_t deadline) {
  frame_t f = {CTL_MAGIC, type, rank, len};
  if (collie_send_all(fd, &f, sizeof(f), deadline) != 0) return -1;
  if (len && collie_send_all(fd, payload, len, deadline) != 0) return -1;
  return 0;
}

/* Receives one frame; payload is malloc'ed (caller frees). 0 ok, -1 closed/error, -2 timeout,
 * -3 not a collie frame, FRAME_NO_MEMORY when the payload could not be allocated (the
 * connection is then out of step: the caller must say so, not that the peer closed it). */
#define FRAME_NO_MEMORY -4
static int recv_frame(int fd, frame_t *f, void **payload, int64_t deadline) {
  *payload = NULL;
  int r = collie_recv_all(fd, f, sizeof(*f), deadline);
  if (r) return r;
  if (f->magic != CTL_MAGIC || f->len > CTL_MAX_PAYLOAD) return -3;
  if (f->len) {
    *payload = malloc(f->len + 1);
    if (!*payload) return FRAME_NO_MEMORY;
    r = collie_recv_all(fd, *payload, f->len, deadline);
    if (r) {
      free(*payload);
      *payload = NULL;
      return r;
    }
    ((char *)*payload)[f->len] = 0;
  }
  return 0;
}

/* The notice of a rank that failed while the communicator was created, with its sentence. */
static fail_t creation_failure(int rank, const char *msg) {
  fail_t ft = {COLLIE_ERR_REMOTE, rank, ""};
  snprintf(ft.text, sizeof(ft.text), "rank %d failed while creating the communicator: %.900s", rank, msg);
  return ft;
}

/* Rank 0's fds[r] for a rank that told it it failed before joining (-1: not joined yet). */
#define FD_GAVE_UP -2

static int64_t deadline_after_ms(int64_t ms) { return collie_now_ns() + (int64_t)ms * 1000000; }

static collie_result_t alloc_control(collie_comm_t *comm) {
  collie_control_t *c = calloc(1, sizeof(*c));
  if (!c) return collie_init_no_memory(comm, comm->rank, "its control channel");
  c->root_fd = -1;
  c->wake_fd = -1;
  pthread_mutex_init(&c->send_lock, NULL);
  pthread_mutex_init(&c->m, NULL);
  pthread_cond_init(&c->cv, NULL);
  comm->ctl = c;
  if (comm->rank == 0) {
    c->fds = malloc(sizeof(int) * (size_t)comm->nranks);
    c->said_bye = calloc((size_t)comm->nranks, sizeof(bool));
    if (!c->fds || !c->said_bye) return collie_init_no_memory(comm, 0, "its table of connections");
    for (int i = 0; i < comm->nranks; i++) c->fds[i] = -1;
  }
  return COLLIE_SUCCESS;
}

/* Rank 0: one frame to every rank it is connected to but `except` (-1: none). */
static void send_to_all(collie_comm_t *comm, uint32_t type, const void *payload, uint32_t len, int except,
                        int64_t deadline) {
  for (int r = 1; r < comm->nranks; r++)
    if (r != except && comm->ctl->fds[r] >= 0) send_frame(comm->ctl->fds[r], type, 0, payload, len, deadline);
}

static void reject_all(collie_comm_t *comm, const char *msg) {
  send_to_all(comm, COLLIE_CTL_REJECT, msg, (uint32_t)strlen(msg), -1, deadline_after_ms(1000));
}

/* Rank 0 gave up gathering: the ranks that joined wait for the card table, so they are
 * told why instead of seeing the connection drop. */
static collie_result_t fail_joined(collie_comm_t *comm, collie_result_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static collie_result_t fail_joined(collie_comm_t *comm, collie_result_t code, const char *fmt, ...) {
  fail_t ft = {code, 0, ""};
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ft.text, sizeof(ft.text), fmt, ap);
  va_end(ap);
  send_to_all(comm, COLLIE_CTL_FAIL, &ft, sizeof(ft), -1, deadline_after_ms(1000));
  return collie_error(comm, code, "%s", ft.text);
}

/* Rank 0, once all have joined: refuses the job when the ranks' settings differ. */
static collie_result_t check_settings(collie_comm_t *comm, const collie_settings_t *all) {
  char msg[1024];
  if (collie_settings_check(comm->cards, all, comm->nranks, msg, sizeof(msg)) == 0) return COLLIE_SUCCESS;
  reject_all(comm, msg);
  return collie_error(comm, COLLIE_ERR_INVALID_USAGE, "%s", msg);
}

/* Rank 0: accepts every other rank, keeping its card and its settings. */
static collie_result_t root_accept_all(collie_comm_t *comm, const collie_id_info_t *id, int listen_fd,
                                       collie_settings_t *settings, int64_t deadline) {
  collie_control_t *c = comm->ctl;
  int joined = 1;
  char a[80];
  while (joined < comm->nranks) {
    int64_t left = (deadline - collie_now_ns()) / 1000000;
    if (left <= 0 || collie_socket_abandoned()) {
      char missing[256] = "";
      size_t o = 0;
      for (int r = 1; r < comm->nranks && o < sizeof(missing) - 16; r++)
        if (c->fds[r] < 0) o += (size_t)snprintf(missing + o, sizeof(missing) - o, "%s%d", o ? ", " : "", r);
      return fail_joined(comm, COLLIE_ERR_TIMEOUT,
                          "rank 0 timed out after %d ms waiting for %d of %d ranks to join (missing: %s); "
                          "check that they started, use the same unique id, and can reach this host "
                          "(COLLIE_CONNECT_TIMEOUT raises the limit)",
                          comm->connect_timeout_ms, comm->nranks - joined, comm->nranks, missing);
    }
    struct pollfd p = {listen_fd, POLLIN, 0};
    if (collie_socket_poll(&p, 1, (int)(left > 1000 ? 1000 : left)) <= 0) continue;
    struct sockaddr_storage from;
    int shortage;
    int fd = collie_accept(listen_fd, &from, &shortage);
    if (shortage) {
      char advice[400];
      return fail_joined(comm, COLLIE_ERR_SYSTEM,
                         "rank 0 could not accept the connection of a rank joining the communicator (%d of %d "
                         "joined): %s; %s",
                         joined, comm->nranks, strerror(shortage), collie_fd_advice(shortage, advice, sizeof(advice)));
    }
    if (fd < 0) continue;
    collie_socket_tune(fd);
    collie_socket_keepalive(fd, (int)collie_param_int(COLLIE_P_KEEPALIVE));
    frame_t f;
    void *pl = NULL;
    int64_t hd = deadline_after_ms(2000);
    int r = recv_frame(fd, &f, &pl, hd < deadline ? hd : deadline);
    hello_t *h = pl;
    const char *why = NULL;
    if (r == FRAME_NO_MEMORY) {
      collie_socket_close(fd);
      collie_init_no_memory(comm, 0, "the greeting of a joining rank");
      return fail_joined(comm, COLLIE_ERR_SYSTEM, "%s", comm->last_error);
    }
    if (r == 0 && f.type == COLLIE_CTL_JOIN_FAIL && f.len == sizeof(join_fail_t) &&
        memcmp(((join_fail_t *)pl)->secret, id->secret, 16) == 0 && ((join_fail_t *)pl)->nranks == comm->nranks) {
      join_fail_t *jf = pl;
      jf->fail.text[sizeof(jf->fail.text) - 1] = 0;
      /* Not missing: it will not come (answer_latecomers waits for the missing). */
      if (jf->fail.origin > 0 && jf->fail.origin < comm->nranks && c->fds[jf->fail.origin] == -1)
        c->fds[jf->fail.origin] = FD_GAVE_UP;
      collie_socket_close(fd);
      collie_result_t res = fail_joined(comm, COLLIE_ERR_REMOTE, "%s", jf->fail.text);
      free(pl);
      return res;
    }
    /* The secret, nranks, version and the card's rank lead every build's greeting, so a
     * process of another build, whose greeting grew or shrank, is told so (below) rather
     * than dropped as a stranger and left waiting for the connect timeout. */
    if (r != 0 || f.type != COLLIE_CTL_HELLO || f.len < HELLO_HEAD) why = "it sent no collie greeting";
    else if (memcmp(h->secret, id->secret, 16) != 0) why = "it did not present this communicator's secret";
    if (why) {
      COLLIE_WARN(COLLIE_SUB_BOOTSTRAP, 0, "dropped a connection from %s to the bootstrap port: %s",
                  collie_addr_str(&from, a, sizeof(a)), why);
      free(pl);
      collie_socket_close(fd);
      continue;
    }
    char msg[512];
    msg[0] = 0;
    if (h->version / 100 != COLLIE_VERSION_CODE / 100)
      snprintf(msg, sizeof(msg),
               "rank %d runs collie version %u but rank 0 runs %d: every rank must use the same collie "
               "version",
               h->card.rank, h->version, COLLIE_VERSION_CODE);
    else if (f.len != sizeof(hello_t))
      snprintf(msg, sizeof(msg),
               "rank %d greeted rank 0 with %u bytes where this build of collie %d.%d.%d sends %zu: the two run "
               "different builds of the same version (their settings or cards differ in layout); every rank must "
               "run the same build of collie: rebuild or reinstall it on every host",
               h->card.rank, f.len, COLLIE_VERSION_MAJOR, COLLIE_VERSION_MINOR, COLLIE_VERSION_PATCH, sizeof(hello_t));
    else if (h->nranks != comm->nranks)
      snprintf(msg, sizeof(msg), "rank %d was created with nranks=%d but rank 0 with nranks=%d", h->card.rank,
               h->nranks, comm->nranks);
    else if (h->card.rank <= 0 || h->card.rank >= comm->nranks)
      snprintf(msg, sizeof(msg), "a process joined as rank %d, outside 1..%d", h->card.rank, comm->nranks - 1);
    else if (c->fds[h->card.rank] >= 0)
      snprintf(msg, sizeof(msg), "two processes joined as rank %d (pids %d and %d)", h->card.rank,
               comm->cards[h->card.rank].pid, h->card.pid);
    if (msg[0]) {
      send_frame(fd, COLLIE_CTL_REJECT, 0, msg, (uint32_t)strlen(msg), deadline_after_ms(1000));
      collie_socket_close(fd);
      free(pl);
      reject_all(comm, msg);
      return collie_error(comm, COLLIE_ERR_INVALID_USAGE, "%s", msg);
    }
    comm->cards[h->card.rank] = h->card;
    settings[h->card.rank] = h->settings;
    c->fds[h->card.rank] = fd;
    free(pl);
    joined++;
  }
  return COLLIE_SUCCESS;
}

/* Rank 0 gave up while ranks were still joining (one failed, or rank 0 did): those whose
 * connection waits in the listen backlog, or comes within a second, get rank 0's sentence
 * too, as the ranks that had joined did, instead of a dropped connection ("rank 0 died,
 * dropped us") or, for those not yet connected, a wait until COLLIE_CONNECT_TIMEOUT.
 * answer_joiners answers up to `missing` greetings that present `secret` with *ft. */
static void answer_joiners(int listen_fd, const uint8_t *secret, int missing, const fail_t *ft) {
  int64_t until = deadline_after_ms(1000);
  while (missing > 0) {
    int64_t left = (until - collie_now_ns()) / 1000000;
    if (left <= 0) break;
    struct pollfd p = {listen_fd, POLLIN, 0};
    if (poll(&p, 1, (int)left) <= 0) continue;
    struct sockaddr_storage from;
    int shortage;
    int fd = collie_accept(listen_fd, &from, &shortage);
    if (shortage) break;
    if (fd < 0) continue;
    frame_t f;
    void *pl = NULL;
    int rc = recv_frame(fd, &f, &pl, deadline_after_ms(200));
    if (rc == 0 && f.type == COLLIE_CTL_HELLO && f.len == sizeof(hello_t) &&
        memcmp(((hello_t *)pl)->secret, secret, 16) == 0) {
      send_frame(fd, COLLIE_CTL_FAIL, 0, ft, sizeof(*ft), deadline_after_ms(200));
      missing--;
    } else if (rc == 0 && f.type == COLLIE_CTL_JOIN_FAIL && f.len == sizeof(join_fail_t) &&
               memcmp(((join_fail_t *)pl)->secret, secret, 16) == 0) {
      missing--; /* failed on its own: it waits for nothing */
    }
    free(pl);
    collie_socket_close(fd);
  }
}

static void answer_latecomers(collie_comm_t *comm, const collie_id_info_t *id, int listen_fd, collie_result_t code) {
  fail_t ft = {code, 0, ""};
  snprintf(ft.text, sizeof(ft.text), "%s", comm->last_error);
  int missing = 0;
  for (int r = 1; r < comm->nranks; r++) missing += comm->ctl->fds[r] == -1;
  answer_joiners(listen_fd, id->secret, missing, &ft);
}

static collie_result_t root_gather(collie_comm_t *comm, const collie_id_info_t *id, int listen_fd,
                                   const collie_settings_t *my_settings, int64_t deadline) {
  collie_control_t *c = comm->ctl;
  collie_settings_t *settings = malloc(sizeof(*settings) * (size_t)comm->nranks);
  collie_result_t res;
  if (!settings) {
    collie_init_no_memory(comm, 0, "its table of the ranks' settings");
    res = fail_joined(comm, COLLIE_ERR_SYSTEM, "%s", comm->last_error);
  } else {
    settings[0] = *my_settings;
    res = root_accept_all(comm, id, listen_fd, settings, deadline);
    if (!res) res = check_settings(comm, settings);
    free(settings);
  }
  if (res && res != COLLIE_ERR_TIMEOUT) answer_latecomers(comm, id, listen_fd, res);
  if (res) return res;
  size_t bytes = sizeof(collie_card_t) * (size_t)comm->nranks;
  for (int r = 1; r < comm->nranks; r++)
    if (send_frame(c->fds[r], COLLIE_CTL_CARDS, 0, comm->cards, (uint32_t)bytes, deadline) != 0)
      return collie_error(comm, COLLIE_ERR_REMOTE, "rank 0 could not send the card table to rank %d: %s", r,
                          strerror(errno));
  return COLLIE_SUCCESS;
}

void collie_ctl_tell_join_failure(const collie_id_info_t *id, int rank, int nranks, int listen_fd, int fd,
                                  int64_t deadline_ns, const char *msg) {
  if (nranks == 1) return;
  if (rank == 0) {
    fail_t ft = creation_failure(0, msg);
    if (listen_fd >= 0) answer_joiners(listen_fd, id->secret, nranks - 1, &ft);
    return;
  }
  join_fail_t jf;
  memset(&jf, 0, sizeof(jf));
  memcpy(jf.secret, id->secret, 16);
  jf.nranks = nranks;
  jf.fail = creation_failure(rank, msg);
  const bool own = fd < 0;
  int err;
  if (own) fd = collie_connect_retry(&id->root, deadline_ns, &err);
  if (fd < 0) return; /* rank 0 is not there: nobody waits for this rank yet */
  send_frame(fd, COLLIE_CTL_JOIN_FAIL, rank, &jf, sizeof(jf), deadline_ns);
  if (own) collie_socket_close(fd);
}

collie_result_t collie_bootstrap(collie_comm_t *comm, const collie_id_info_t *id, int listen_fd,
                                 collie_card_t *my_card, const collie_settings_t *my_settings,
                                 collie_make_listener_fn make_listener) {
  int64_t deadline = deadline_after_ms(comm->connect_timeout_ms);
  collie_result_t res = alloc_control(comm);
  if (res) {
    collie_ctl_tell_join_failure(id, comm->rank, comm->nranks, listen_fd, -1, deadline, comm->last_error);
    return res;
  }
  char a[80];
  if (comm->rank == 0) {
    struct sockaddr_storage ip = id->root;
    res = make_listener(comm, &ip);
    if (res) {
      collie_ctl_tell_join_failure(id, 0, comm->nranks, listen_fd, -1, deadline, comm->last_error);
      return res;
    }
    comm->cards[0] = *my_card;
    comm->cards[0].data_addr = comm->tcp->addr;
    if (comm->nranks == 1) return COLLIE_SUCCESS;
    return root_gather(comm, id, listen_fd, my_settings, deadline);
  }
  int err = 0;
  int fd = collie_connect_retry(&id->root, deadline, &err);
  if (fd < 0 && collie_errno_is_shortage(err)) {
    char advice[400];
    return collie_error(comm, COLLIE_ERR_SYSTEM, "rank %d could not open a socket to reach rank 0 at %s: %s; %s",
                        comm->rank, collie_addr_str(&id->root, a, sizeof(a)), strerror(err),
                        collie_fd_advice(err, advice, sizeof(advice)));
  }
  if (fd < 0 && collie_socket_refusal_is_final() && (err == ECONNREFUSED || err == ECONNRESET))
    return collie_error(comm, COLLIE_ERR_REMOTE,
                        "rank %d could not reach rank 0 at %s: %s; rank 0 listened there before it handed out the "
                        "communicator's id, so it has given up creating the communicator (its own error says why) "
                        "or died",
                        comm->rank, collie_addr_str(&id->root, a, sizeof(a)), strerror(err));
  if (fd < 0) {
    char within[48] = ""; /* only a timeout took the whole time; other errors end the tries at once */
    if (fd == -2) snprintf(within, sizeof(within), " within %d ms", comm->connect_timeout_ms);
    return collie_error(comm, fd == -2 ? COLLIE_ERR_TIMEOUT : COLLIE_ERR_SYSTEM,
                        "rank %d could not reach rank 0 at %s%s: %s; check that rank 0 started, "
                        "that the address is right (COLLIE_ROOT_ADDR) and reachable from this host",
                        comm->rank, collie_addr_str(&id->root, a, sizeof(a)), within, strerror(err));
  }
  comm->ctl->root_fd = fd;
  collie_socket_keepalive(fd, (int)collie_param_int(COLLIE_P_KEEPALIVE));
  /* The route to the root tells which local address the other ranks can reach. */
  struct sockaddr_storage local;
  socklen_t llen = sizeof(local);
  getsockname(fd, (struct sockaddr *)&local, &llen);
  res = make_listener(comm, &local);
  if (res) {
    collie_ctl_tell_join_failure(id, comm->rank, comm->nranks, -1, fd, deadline, comm->last_error);
    return res;
  }
  my_card->data_addr = comm->tcp->addr;
  hello_t h;
  memset(&h, 0, sizeof(h));
  memcpy(h.secret, id->secret, 16);
  h.nranks = comm->nranks;
  h.version = COLLIE_VERSION_CODE;
  h.card = *my_card;
  h.settings = *my_settings;
  if (send_frame(fd, COLLIE_CTL_HELLO, comm->rank, &h, sizeof(h), deadline) != 0)
    return collie_error(comm, COLLIE_ERR_REMOTE, "rank %d could not greet rank 0 at %s: %s", comm->rank,
                        collie_addr_str(&id->root, a, sizeof(a)), strerror(errno));
  frame_t f;
  void *pl = NULL;
  /* Rank 0's own timeout names the missing ranks: wait to hear it. */
  int r = recv_frame(fd, &f, &pl, deadline + (int64_t)COLLIE_SETUP_GRACE_MS * 1000000);
  if (r == FRAME_NO_MEMORY) {
    res = collie_init_no_memory(comm, comm->rank, "a message from rank 0");
    collie_ctl_tell_creation_failure(comm, comm->last_error); /* rank 0 reads it at the first barrier */
    return res;
  }
  if (r == -2)
    return collie_error(comm, COLLIE_ERR_TIMEOUT,
                        "rank %d timed out after %lld ms waiting for the other ranks to join (rank 0 at %s "
                        "answered but not everyone arrived)",
                        comm->rank, (long long)comm->connect_timeout_ms + COLLIE_SETUP_GRACE_MS,
                        collie_addr_str(&id->root, a, sizeof(a)));
  if (r != 0 && collie_socket_refusal_is_final()) /* a split's: the id cannot be wrong */
    return collie_error(comm, COLLIE_ERR_REMOTE,
                        "rank %d lost its connection to rank 0 at %s while joining: rank 0 gave up creating the "
                        "communicator before it accepted this rank (its own error says why), or died",
                        comm->rank, collie_addr_str(&id->root, a, sizeof(a)));
  if (r != 0)
    return collie_error(comm, COLLIE_ERR_REMOTE,
                        "rank %d lost its connection to rank 0 at %s while joining: rank 0 died, dropped us "
                        "(wrong unique id?), or timed out",
                        comm->rank, collie_addr_str(&id->root, a, sizeof(a)));
  if (f.type == COLLIE_CTL_FAIL && f.len == sizeof(fail_t)) {
    fail_t *ft = pl;
    ft->text[sizeof(ft->text) - 1] = 0;
    res = collie_error(comm, ft->code ? (collie_result_t)ft->code : COLLIE_ERR_REMOTE,
                       "rank %d could not join the communicator: %s", comm->rank, ft->text);
    free(pl);
    return res;
  }
  if (f.type == COLLIE_CTL_REJECT) {
    res = collie_error(comm, COLLIE_ERR_INVALID_USAGE, "rank 0 refused rank %d: %s", comm->rank, (char *)pl);
    free(pl);
    return res;
  }
  if (f.type != COLLIE_CTL_CARDS || f.len != sizeof(collie_card_t) * (size_t)comm->nranks) {
    free(pl);
    return collie_error(comm, COLLIE_ERR_INTERNAL, "rank %d received a malformed card table from rank 0",
                        comm->rank);
  }
  memcpy(comm->cards, pl, f.len);
  free(pl);
  return COLLIE_SUCCESS;
}

static bool setup_failure_now(collie_comm_t *comm) {
  collie_control_t *c = comm->ctl;
  if (comm->rank != 0) {
    /* Between barriers rank 0 sends nothing but a failure, and its death closes the socket. */
    struct pollfd p = {c->root_fd, POLLIN, 0};
    return c->root_fd < 0 || poll(&p, 1, 0) > 0;
  }
  /* A rank done with this stage has sent its barrier frame already; look for a failure
   * without taking it (the barrier reads it). */
  for (int r = 1; r < comm->nranks; r++) {
    struct pollfd p = {c->fds[r], POLLIN, 0};
    if (c->fds[r] < 0) return true;
    if (poll(&p, 1, 0) <= 0) continue;
    frame_t f;
    ssize_t n = recv(c->fds[r], &f, sizeof(f), MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
    if (n == (ssize_t)sizeof(f) && f.type == COLLIE_CTL_FAIL) return true;
  }
  return false;
}

/* How often collie_ctl_setup_failed looks. Rank 0's look costs two system calls per rank,
 * and its accept loop asks once per connection, (nranks - 1) * COLLIE_TCP_NSOCKS times:
 * asked every time, that grew with the square of the ranks (64 ranks: 10,000 polls and
 * 11,000 peeks in rank 0 alone; 1024 would make millions while every rank waits). The
 * waits that ask sleep up to a second between looks anyway. */
#define SETUP_CHECK_INTERVAL_NS 20000000

bool collie_ctl_setup_failed(void *arg) {
  collie_comm_t *comm = arg;
  collie_control_t *c = comm->ctl;
  if (comm->nranks == 1) return false;
  if (c->setup_failure_seen) return true; /* a failure frame or a closed socket stays */
  int64_t now = collie_now_ns();
  if (c->setup_checked_ns && now - c->setup_checked_ns < SETUP_CHECK_INTERVAL_NS) return false;
  c->setup_checked_ns = now;
  c->setup_failure_seen = setup_failure_now(comm);
  return c->setup_failure_seen;
}

/* Rank 0's side of the barrier: every other rank's frame, in the order they come, so that
 * a failure is passed on at once even while some ranks are still connecting (they give up
 * when it arrives: collie_ctl_setup_failed). Fills failure, empty when all are fine. */
/* Rank 0 passes a rank's failure on: to the others first, to that rank last. Its answer
 * lets the failing rank remove the peers' shared-memory segments (collie_ctl_barrier);
 * told first, it removed one that a rank still opening found gone before rank 0 had told
 * that rank why, and it reported "No such file" instead (fault_alloc_fail_tuned failed so
 * once in a clean clone). */
static void relay_failure(collie_comm_t *comm, const fail_t *ft, int origin, int64_t deadline) {
  send_to_all(comm, COLLIE_CTL_FAIL, ft, sizeof(*ft), origin, deadline);
  if (origin > 0 && comm->ctl->fds[origin] >= 0)
    send_frame(comm->ctl->fds[origin], COLLIE_CTL_FAIL, 0, ft, sizeof(*ft), deadline);
}

static void root_gather_barrier(collie_comm_t *comm, const char *my_error, char *failure, size_t flen,
                                int64_t deadline, bool *own) {
  collie_control_t *c = comm->ctl;
  int n = comm->nranks, heard = 1;
  bool *got = calloc((size_t)n, sizeof(bool));
  struct pollfd *p = calloc((size_t)n, sizeof(struct pollfd));
  int *who = calloc((size_t)n, sizeof(int));
  fail_t ft = {COLLIE_ERR_REMOTE, 0, ""};
  bool told = false;
  int origin = -1; /* the rank whose frame brought the failure */
  if (my_error) snprintf(failure, flen, "rank 0 failed while creating the communicator: %.900s", my_error);
  if (!got || !p || !who) {
    if (!failure[0]) {
      snprintf(failure, flen, "rank 0 ran out of memory creating the communicator (its table of %d ranks): %s", n,
               COLLIE_MEMORY_ADVICE);
      *own = true;
    }
    heard = n;
  }
  while (heard < n) {
    if (failure[0] && !told) { /* tell everyone now, then let the others' frames drain */
      snprintf(ft.text, sizeof(ft.text), "%.1000s", failure);
      relay_failure(comm, &ft, origin, deadline);
      told = true;
      int64_t drain = deadline_after_ms(2000);
      if (drain < deadline) deadline = drain;
    }
    int k = 0;
    for (int r = 1; r < n; r++)
      if (!got[r]) {
        p[k] = (struct pollfd){c->fds[r], POLLIN, 0};
        who[k++] = r;
      }
    int64_t left = (deadline - collie_now_ns()) / 1000000;
    if (left <= 0) {
      if (!failure[0]) snprintf(failure, flen, "rank %d did not answer in time while the communicator was being created", who[0]);
      break;
    }
    int rc = collie_socket_poll(p, (nfds_t)k, (int)(left > 1000 ? 1000 : left));
    if (rc < 0 && errno != EINTR) { /* a failure, or the release below would skip the missing */
      if (!failure[0])
        snprintf(failure, flen, "rank 0 could not wait for rank %d while the communicator was being created: %s",
                 who[0], strerror(errno));
      break;
    }
    for (int i = 0; rc > 0 && i < k; i++) {
      if (!p[i].revents) continue;
      int r = who[i];
      frame_t f;
      void *pl = NULL;
      int got_frame = recv_frame(c->fds[r], &f, &pl, deadline);
      got[r] = true;
      heard++;
      if (!failure[0] && got_frame == FRAME_NO_MEMORY) {
        snprintf(failure, flen, "rank 0 ran out of memory creating the communicator (a message from rank %d): %s",
                 r, COLLIE_MEMORY_ADVICE);
        *own = true;
      }
      else if (!failure[0] && got_frame != 0)
        snprintf(failure, flen, "rank %d %s while the communicator was being created", r,
                 got_frame == -2 ? "did not answer in time" : "closed its connection");
      else if (!failure[0] && f.type == COLLIE_CTL_FAIL) {
        snprintf(failure, flen, "%s", ((fail_t *)pl)->text);
        origin = r;
      }
      free(pl);
    }
  }
  if (!told) {
    snprintf(ft.text, sizeof(ft.text), "%.1000s", failure);
    if (failure[0]) relay_failure(comm, &ft, origin, deadline_after_ms(comm->connect_timeout_ms));
    else send_to_all(comm, COLLIE_CTL_RELEASE, &ft, 0, -1, deadline_after_ms(comm->connect_timeout_ms));
  }
  free(got);
  free(p);
  free(who);
}

collie_result_t collie_ctl_barrier(collie_comm_t *comm, const char *my_error) {
  if (comm->nranks == 1) return my_error ? COLLIE_ERR_SYSTEM : COLLIE_SUCCESS;
  collie_control_t *c = comm->ctl;
  /* The other ranks may be in connects bounded by the connect timeout; rank 0 outlasts
   * them, and the others outlast rank 0, so that the sentence that says most wins. */
  int64_t deadline =
      deadline_after_ms((int64_t)comm->connect_timeout_ms + COLLIE_SETUP_GRACE_MS * (comm->rank == 0 ? 1 : 2));
  frame_t f;
  void *pl = NULL;
  char failure[1100] = "";
  bool own = false; /* the failure is this rank's own (out of memory), not another's */
  if (comm->rank == 0) {
    root_gather_barrier(comm, my_error, failure, sizeof(failure), deadline, &own);
  } else {
    if (my_error) {
      fail_t ft = creation_failure(comm->rank, my_error);
      send_frame(c->root_fd, COLLIE_CTL_FAIL, comm->rank, &ft, sizeof(ft), deadline);
      /* Until rank 0 has passed it on (its answer): this rank's failure path then removes
       * the peers' shared-memory segments, and a rank still opening them would otherwise
       * find them gone before it learns why, and report that instead. */
      int64_t told = deadline_after_ms(2000);
      if (recv_frame(c->root_fd, &f, &pl, told < deadline ? told : deadline) == 0) {
        /* Rank 0 answers with the first failure it heard. Another rank's, heard before
         * this one, most likely caused it: a rank that gave up closed its sockets, and a
         * connection of this rank to it was reset (fault_fd_limit, 8 ranks: once "rank 7
         * could not greet rank 5 ...: Connection reset by peer", where the 7 others named
         * rank 0's limit of open files). So that cause comes first in this rank's error. */
        const char *first = f.type == COLLIE_CTL_FAIL && pl ? ((fail_t *)pl)->text : NULL;
        if (first && first[0] && strncmp(first, ft.text, strlen(first)) != 0) {
          char mine[900]; /* my_error may be comm's last error, which collie_error rewrites */
          snprintf(mine, sizeof(mine), "%s", my_error);
          collie_error(comm, COLLIE_ERR_REMOTE, "%.1000s; after that, %s", first, mine);
        }
        free(pl);
      }
      return COLLIE_ERR_SYSTEM;
    }
    send_frame(c->root_fd, COLLIE_CTL_BARRIER, comm->rank, NULL, 0, deadline);
    int rc = recv_frame(c->root_fd, &f, &pl, deadline);
    own = rc == FRAME_NO_MEMORY;
    if (own)
      snprintf(failure, sizeof(failure),
               "rank %d ran out of memory creating the communicator (a message from rank 0): %s", comm->rank,
               COLLIE_MEMORY_ADVICE);
    else if (rc != 0)
      snprintf(failure, sizeof(failure), "rank 0 %s while the communicator was being created",
               rc == -2 ? "did not answer in time" : "closed its connection");
    else if (f.type == COLLIE_CTL_FAIL)
      snprintf(failure, sizeof(failure), "%s", ((fail_t *)pl)->text);
    free(pl);
  }
  if (my_error) return COLLIE_ERR_SYSTEM;
  if (failure[0]) return collie_error(comm, own ? COLLIE_ERR_SYSTEM : COLLIE_ERR_REMOTE, "%s", failure);
  return COLLIE_SUCCESS;
}

void collie_ctl_tell_creation_failure(collie_comm_t *comm, const char *msg) {
  fail_t ft = creation_failure(comm->rank, msg);
  collie_ctl_send_fail(comm, COLLIE_ERR_REMOTE, ft.text);
}

/* Sends a failure notice under send_lock; with `try`, not when another thread holds it. */
static void send_fail(collie_comm_t *comm, collie_result_t res, const char *msg, bool try) {
  collie_control_t *c = comm->ctl;
  if (!c || comm->nranks == 1) return;
  fail_t ft = {res, comm->rank, ""};
  snprintf(ft.text, sizeof(ft.text), "%s", msg);
  int64_t dl = deadline_after_ms(1000);
  if (!try) pthread_mutex_lock(&c->send_lock);
  else if (pthread_mutex_trylock(&c->send_lock)) return;
  if (comm->rank == 0) {
    send_to_all(comm, COLLIE_CTL_FAIL, &ft, sizeof(ft), -1, dl);
  } else if (c->root_fd >= 0) {
    send_frame(c->root_fd, COLLIE_CTL_FAIL, comm->rank, &ft, sizeof(ft), dl);
  }
  pthread_mutex_unlock(&c->send_lock);
}

void collie_ctl_send_fail(collie_comm_t *comm, collie_result_t res, const char *msg) { send_fail(comm, res, msg, false); }

void collie_ctl_report_stall(collie_comm_t *comm, const collie_stall_t *st) {
  collie_control_t *c = comm->ctl;
  if (!c || comm->nranks == 1) return;
  if (comm->rank == 0) {
    collie_ctl_note_stall(comm, 0, st);
    return;
  }
  pthread_mutex_lock(&c->m);
  if (!c->unseen_since_ns) c->unseen_since_ns = collie_now_ns();
  pthread_mutex_unlock(&c->m);
  pthread_mutex_lock(&c->send_lock);
  if (c->root_fd >= 0) send_frame(c->root_fd, COLLIE_CTL_STALL, comm->rank, st, sizeof(*st), deadline_after_ms(1000));
  pthread_mutex_unlock(&c->send_lock);
}

int64_t collie_ctl_relay_silent_ns(collie_comm_t *comm) {
  collie_control_t *c = comm->ctl;
  if (!c || comm->rank == 0) return 0;
  pthread_mutex_lock(&c->m);
  const int64_t since = c->unseen_since_ns;
  pthread_mutex_unlock(&c->m);
  return since ? collie_now_ns() - since : 0;
}

/* Rank 0: asks rank `to` about the message stalled rank `asker` waits for (stall.c). */
void collie_ctl_ask_owed(collie_comm_t *comm, int to, int asker, const collie_stall_t *st) {
  collie_control_t *c = comm->ctl;
  pthread_mutex_lock(&c->send_lock);
  if (c->fds[to] >= 0) send_frame(c->fds[to], COLLIE_CTL_OWED, asker, st, sizeof(*st), deadline_after_ms(1000));
  pthread_mutex_unlock(&c->send_lock);
}

void collie_ctl_try_send_fail(collie_comm_t *comm, collie_result_t res, const char *msg) { send_fail(comm, res, msg, true); }

static void keep_waits(collie_comm_t *comm, const waits_t *w) {
  collie_control_t *c = comm->ctl;
  pthread_mutex_lock(&c->m);
  c->waits_about = w->about;
  c->waits_ns = collie_now_ns();
  snprintf(c->waits_text, sizeof(c->waits_text), "%s", w->text);
  snprintf(c->waits_end, sizeof(c->waits_end), "%s", w->end);
  pthread_mutex_unlock(&c->m);
}

/* Rank 0 passes an answer on to the rank that asked (from its watchdog, or from the one
 * that answered itself). */
static void pass_waits(collie_comm_t *comm, const waits_t *w) {
  collie_control_t *c = comm->ctl;
  if (w->asker == 0) {
    keep_waits(comm, w);
    return;
  }
  if (w->asker < 0 || w->asker >= comm->nranks) return;
  pthread_mutex_lock(&c->send_lock);
  if (c->fds[w->asker] >= 0) send_frame(c->fds[w->asker], COLLIE_CTL_WAITS, 0, w, sizeof(*w), deadline_after_ms(1000));
  pthread_mutex_unlock(&c->send_lock);
}

void collie_ctl_send_waits(collie_comm_t *comm, int asker, const char *text, const char *end) {
  collie_control_t *c = comm->ctl;
  if (!c || comm->nranks == 1) return;
  waits_t w = {asker, comm->rank, "", ""};
  snprintf(w.text, sizeof(w.text), "%s", text);
  snprintf(w.end, sizeof(w.end), "%s", end);
  if (comm->rank == 0) {
    pass_waits(comm, &w);
    return;
  }
  pthread_mutex_lock(&c->send_lock);
  if (c->root_fd >= 0) send_frame(c->root_fd, COLLIE_CTL_WAITS, comm->rank, &w, sizeof(w), deadline_after_ms(1000));
  pthread_mutex_unlock(&c->send_lock);
}

bool collie_ctl_peer_waits(collie_comm_t *comm, int about, int64_t since_ns, char *text, char *end) {
  collie_control_t *c = comm->ctl;
  if (!c) return false;
  pthread_mutex_lock(&c->m);
  const bool fresh = c->waits_ns && c->waits_about == about && c->waits_ns >= since_ns;
  if (fresh) {
    snprintf(text, COLLIE_WAITS_TEXT, "%s", c->waits_text);
    snprintf(end, COLLIE_WAITS_TEXT, "%s", c->waits_end);
  }
  pthread_mutex_unlock(&c->m);
  return fresh;
}

static void signal_bye(collie_control_t *c) {
  pthread_mutex_lock(&c->m);
  c->bye_done = true;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->m);
}

/* Rank 0 counts departures (its own included); the one that completes the count tells
 * everyone. */
static void root_note_bye(collie_comm_t *comm, int from) {
  collie_control_t *c = comm->ctl;
  pthread_mutex_lock(&c->m);
  bool all = false;
  if (!c->said_bye[from]) {
    c->said_bye[from] = true;
    all = ++c->nbye == comm->nranks;
  }
  pthread_mutex_unlock(&c->m);
  if (!all) return;
  pthread_mutex_lock(&c->send_lock);
  send_to_all(comm, COLLIE_CTL_BYE_ACK, NULL, 0, -1, deadline_after_ms(1000));
  pthread_mutex_unlock(&c->send_lock);
  signal_bye(c);
}

/* Rank 0: rank `from` is leaving after `issued` collectives, and (`counts`: NULL when
 * its goodbye had none) with counts[2r] messages sent to rank r and counts[2r+1] received
 * from it. The others learn it too, so that a rank already waiting for it in a later
 * collective, or in a send or receive it will never match, fails now. */
static void note_left(collie_comm_t *comm, int from, uint64_t issued, const uint64_t *counts) {
  left_t l = {from, counts != NULL, issued, 0, 0};
  int64_t deadline = deadline_after_ms(1000);
  pthread_mutex_lock(&comm->ctl->send_lock);
  for (int r = 1; r < comm->nranks; r++) {
    if (r == from || comm->ctl->fds[r] < 0) continue;
    if (counts) {
      l.sent = counts[2 * r];
      l.recvd = counts[2 * r + 1];
    }
    send_frame(comm->ctl->fds[r], COLLIE_CTL_LEFT, 0, &l, sizeof(l), deadline);
  }
  pthread_mutex_unlock(&comm->ctl->send_lock);
  collie_comm_peer_left(comm, from, issued, counts != NULL, counts ? counts[0] : 0, counts ? counts[1] : 0);
}

/* This rank's goodbye: its left_t followed by its counts for every rank (malloc'ed, size
 * in *len). NULL without memory: the goodbye then goes without counts, and only the
 * check of sends and receives left unmatched is lost. */
static left_t *goodbye(collie_comm_t *comm, uint64_t issued, uint32_t *len) {
  const size_t n = (size_t)comm->nranks;
  left_t *l = malloc(sizeof(left_t) + sizeof(uint64_t) * 2 * n);
  if (!l) return NULL;
  *l = (left_t){comm->rank, 1, issued, 0, 0};
  uint64_t *c = (uint64_t *)(l + 1);
  collie_lock(&comm->lock);
  for (size_t r = 0; r < n; r++) {
    c[2 * r] = comm->peers[r].send_seq;
    c[2 * r + 1] = comm->peers[r].recv_seq;
  }
  collie_unlock(&comm->lock);
  *len = (uint32_t)(sizeof(left_t) + sizeof(uint64_t) * 2 * n);
  return l;
}

/* A frame from rank `from` (rank 0's view) or from rank 0 (the others' view). Returns false
 * when the connection is finished. */
static bool handle_frame(collie_comm_t *comm, int fd, int from) {
  collie_control_t *c = comm->ctl;
  frame_t f;
  void *pl = NULL;
  char pd[160];
  int rc = recv_frame(fd, &f, &pl, deadline_after_ms(5000));
  const int err = errno;
  const bool lost_host = rc == -1 && (err == ETIMEDOUT || err == EHOSTUNREACH);
  if (rc == FRAME_NO_MEMORY) { /* the connection is out of step: this rank can watch no more */
    collie_comm_fail(comm, COLLIE_ERR_SYSTEM, false,
                     "rank %d ran out of memory reading a control message from %s, and can no longer watch its "
                     "peers: %s; create a new communicator",
                     comm->rank, collie_peer_desc(comm, from, pd, sizeof(pd)), COLLIE_MEMORY_ADVICE);
    free(pl);
    return false;
  }
  if (rc != 0) {
    pthread_mutex_lock(&c->m);
    bool departed = comm->rank == 0 ? c->said_bye[from] : c->bye_done;
    pthread_mutex_unlock(&c->m);
    /* Also while this rank destroys: it waits for that rank's goodbye (rank 0), or for rank
     * 0's word that everyone left, and a peer that died meanwhile left it waiting until
     * COLLIE_EXEC_TIMEOUT and then blaming itself. (After an abort here the communicator
     * has failed already, and nothing more is said.) */
    if (!departed) {
      collie_peer_desc(comm, from, pd, sizeof(pd));
      if (lost_host) /* keepalive probes or frames went unanswered (collie_socket_keepalive) */
        collie_comm_fail(comm, COLLIE_ERR_REMOTE, true,
                         "%s stopped answering: its host acknowledged nothing on the control connection for "
                         "about %d s (%s; detected by rank %d), so it crashed, lost power or was cut off the "
                         "network; every rank now fails its pending and next operations: check that host "
                         "(COLLIE_KEEPALIVE sets the limit)",
                         pd, (int)collie_param_int(COLLIE_P_KEEPALIVE), strerror(err), comm->rank);
      else if (comm->rank == 0)
        collie_comm_fail(comm, COLLIE_ERR_REMOTE, false,
                         "%s died or closed its connection without destroying the communicator (detected by "
                         "rank 0); every rank now fails its pending and next operations: check that rank's "
                         "log and exit status",
                         pd);
      else
        collie_comm_fail(comm, COLLIE_ERR_REMOTE, true,
                         "%s died or closed its connection without destroying the communicator (detected by "
                         "rank %d); check that rank's log and exit status",
                         pd, comm->rank);
    }
    return false;
  }
  if (f.type == COLLIE_CTL_FAIL && f.len == sizeof(fail_t)) {
    fail_t *ft = pl;
    ft->text[sizeof(ft->text) - 1] = 0;
    /* Rank 0 passes it on (collie_comm_fail): the ranks are connected to rank 0 alone. */
    collie_comm_fail(comm, (collie_result_t)ft->code, true, "%s", ft->text);
  } else if (f.type == COLLIE_CTL_BYE && comm->rank == 0) {
    const size_t with_counts = sizeof(left_t) + sizeof(uint64_t) * 2 * (size_t)comm->nranks;
    left_t *l = pl;
    if (f.len == sizeof(left_t) || f.len == with_counts)
      note_left(comm, from, l->issued, f.len == with_counts ? (const uint64_t *)(l + 1) : NULL);
    root_note_bye(comm, from);
  } else if (f.type == COLLIE_CTL_LEFT && comm->rank != 0 && f.len == sizeof(left_t)) {
    left_t *l = pl;
    if (l->rank >= 0 && l->rank < comm->nranks)
      collie_comm_peer_left(comm, l->rank, l->issued, l->counts != 0, l->sent, l->recvd);
  } else if (f.type == COLLIE_CTL_STALL && comm->rank == 0 && f.len == sizeof(collie_stall_t)) {
    pthread_mutex_lock(&c->send_lock);
    if (c->fds[from] >= 0) send_frame(c->fds[from], COLLIE_CTL_STALL_SEEN, 0, NULL, 0, deadline_after_ms(1000));
    pthread_mutex_unlock(&c->send_lock);
    collie_ctl_note_stall(comm, from, pl);
  } else if (f.type == COLLIE_CTL_STALL_SEEN && comm->rank != 0) {
    pthread_mutex_lock(&c->m);
    c->unseen_since_ns = 0;
    pthread_mutex_unlock(&c->m);
  } else if (f.type == COLLIE_CTL_OWED && comm->rank != 0 && f.len == sizeof(collie_stall_t)) {
    if (f.rank >= 0 && f.rank < comm->nranks) {
      collie_ctl_check_owed(comm, f.rank, pl);
      collie_ctl_answer_waits(comm, f.rank);
    }
  } else if (f.type == COLLIE_CTL_WAITS && f.len == sizeof(waits_t)) {
    waits_t *w = pl;
    w->text[sizeof(w->text) - 1] = w->end[sizeof(w->end) - 1] = 0;
    if (comm->rank == 0) {
      w->about = from; /* the rank that answered is the one whose connection it came on */
      pass_waits(comm, w);
    } else {
      keep_waits(comm, w);
    }
  } else if (f.type == COLLIE_CTL_BYE_ACK && comm->rank != 0) {
    signal_bye(c);
  }
  free(pl);
  return true;
}

static void *watchdog_main(void *arg) {
  collie_comm_t *comm = arg;
  collie_control_t *c = comm->ctl;
  int n = comm->nranks;
  struct pollfd *p = c->wd_poll;
  int *who = c->wd_who;
  for (;;) {
    int k = 0;
    p[k].fd = c->wake_fd;
    p[k++].events = POLLIN;
    if (comm->rank == 0) {
      for (int r = 1; r < n; r++)
        if (c->fds[r] >= 0) {
          p[k].fd = c->fds[r];
          p[k].events = POLLIN;
          who[k++] = r;
        }
    } else if (c->root_fd >= 0) {
      p[k].fd = c->root_fd;
      p[k].events = POLLIN;
      who[k++] = 0;
    }
    int rc = poll(p, (nfds_t)k, -1);
    if (rc < 0 && errno != EINTR) break;
    if (p[0].revents) break;
    for (int i = 1; i < k; i++) {
      if (!p[i].revents) continue;
      if (!handle_frame(comm, p[i].fd, who[i])) {
        /* The connection is over: close it and stop polling it. Under send_lock, which
         * every sender holds while it uses the number: closed without it, a failure
         * notice or a goodbye sent meanwhile could land in whatever file the number was
         * given to next. */
        pthread_mutex_lock(&c->send_lock);
        if (comm->rank == 0) {
          for (int r = 1; r < n; r++)
            if (c->fds[r] == p[i].fd) {
              collie_socket_close(c->fds[r]);
              c->fds[r] = -1;
            }
        } else {
          collie_socket_close(c->root_fd);
          c->root_fd = -1;
        }
        pthread_mutex_unlock(&c->send_lock);
      }
    }
  }
  return NULL;
}

collie_result_t collie_ctl_start_watchdog(collie_comm_t *comm) {
  collie_control_t *c = comm->ctl;
  if (comm->nranks == 1) return COLLIE_SUCCESS;
  /* Allocated here, not in the thread: a thread that found no memory ended silently, and
   * the communicator went on with nobody watching (a dead peer went unseen, and destroy
   * waited for goodbyes nobody relayed until COLLIE_EXEC_TIMEOUT). */
  c->wd_poll = calloc((size_t)comm->nranks + 1, sizeof(struct pollfd));
  c->wd_who = calloc((size_t)comm->nranks + 1, sizeof(int));
  if (!c->wd_poll || !c->wd_who) return collie_init_no_memory(comm, comm->rank, "the poll set of its watchdog");
  c->wake_fd = eventfd(0, EFD_CLOEXEC);
  if (c->wake_fd < 0) return collie_error(comm, COLLIE_ERR_SYSTEM, "rank %d: eventfd failed: %s", comm->rank, strerror(errno));
  int rc = collie_thread_start(&c->watchdog, watchdog_main, comm);
  if (rc != 0)
    return collie_error(comm, COLLIE_ERR_SYSTEM, "rank %d could not start its watchdog thread: %s; %s", comm->rank,
                        strerror(rc), collie_thread_advice(rc));
  c->watchdog_running = true;
  return COLLIE_SUCCESS;
}

/* Whether every other rank of comm is a thread of this process: its pid, on this host
 * (containers of one host may each have a process of the same pid). */
static bool peers_in_this_process(const collie_comm_t *comm) {
  const collie_card_t *mine = &comm->cards[comm->rank];
  for (int r = 0; r < comm->nranks; r++)
    if (comm->cards[r].pid != mine->pid || strncmp(comm->cards[r].host_id, mine->host_id, sizeof(mine->host_id)))
      return false;
  return true;
}

collie_result_t collie_ctl_depart(collie_comm_t *comm, int64_t deadline_ns) {
  collie_control_t *c = comm->ctl;
  if (!c || comm->nranks == 1 || !c->watchdog_running) return COLLIE_SUCCESS;
  collie_lock(&comm->lock);
  const uint64_t issued = comm->coll_seq;
  collie_unlock(&comm->lock);
  left_t plain = {comm->rank, 0, issued, 0, 0};
  uint32_t len = sizeof(plain);
  left_t *bye = goodbye(comm, issued, &len);
  if (comm->rank == 0) {
    note_left(comm, 0, issued, bye ? (const uint64_t *)(bye + 1) : NULL);
    root_note_bye(comm, 0);
  } else if (c->root_fd >= 0) {
    pthread_mutex_lock(&c->send_lock);
    send_frame(c->root_fd, COLLIE_CTL_BYE, comm->rank, bye ? bye : &plain, len, deadline_after_ms(1000));
    pthread_mutex_unlock(&c->send_lock);
  }
  free(bye);
  const int64_t start = collie_now_ns(), hint_at = start + (deadline_ns - start) / 2;
  bool hinted = false;
  pthread_mutex_lock(&c->m);
  while (!c->bye_done && !atomic_load(&comm->failed)) {
    int64_t left = deadline_ns - collie_now_ns();
    if (left <= 0) break;
    if (!hinted && collie_now_ns() >= hint_at) {
      hinted = true;
      if (peers_in_this_process(comm))
        COLLIE_WARN(COLLIE_SUB_INIT, comm->rank,
                    "rank %d has waited %.0f s in collie_comm_destroy for the other ranks of its communicator, "
                    "all threads of this process: a destroy waits until every rank has called its own, so one "
                    "thread destroying the ranks of collie_comm_init_all one after another waits in the first "
                    "until COLLIE_EXEC_TIMEOUT; call each rank's collie_comm_destroy from its own thread",
                    comm->rank, (double)(collie_now_ns() - start) / 1e9);
    }
    /* This thread's other communicators move meanwhile, as in any wait: a peer may wait in
     * one of them for this rank before it destroys this one (a destroy and a wait in
     * opposite orders on two ranks waited until COLLIE_EXEC_TIMEOUT). While they have
     * operations in flight, the wait looks again soon: at once after one moved. */
    pthread_mutex_unlock(&c->m);
    const int others = collie_others_progress(comm);
    pthread_mutex_lock(&c->m);
    if (c->bye_done) break;
    if (others > 0) {
      pthread_mutex_unlock(&c->m);
      sched_yield();
      pthread_mutex_lock(&c->m);
      continue;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t step = left < 50000000 ? left : 50000000; /* re-check the failure flag often */
    if (others == 0 && step > 200000) step = 200000;
    ts.tv_nsec += step % 1000000000;
    ts.tv_sec += step / 1000000000 + ts.tv_nsec / 1000000000;
    ts.tv_nsec %= 1000000000;
    pthread_cond_timedwait(&c->cv, &c->m, &ts);
  }
  bool done = c->bye_done;
  pthread_mutex_unlock(&c->m);
  if (done || atomic_load(&comm->failed)) return COLLIE_SUCCESS;
  return COLLIE_ERR_TIMEOUT;
}

/* A rank that leaves a failed communicator tells rank 0 the failure it learned, ahead of
 * the close on the same connection. It may have learned it where rank 0 has not yet: in a
 * local peer's segment, posted there before that peer's own notice to rank 0 went out; rank
 * 0 then read this rank's close first and blamed it for dying (fault_zero_count_4 under
 * ASan: rank 1 found the mismatch, rank 3 read it in rank 1's segment and exited, and rank
 * 0 said "rank 3 died"). Rank 0 keeps the first failure it hears, so an echo of what rank 0
 * itself passed on changes nothing. */
static void echo_failure(collie_comm_t *comm) {
  const collie_result_t res = (collie_result_t)atomic_load(&comm->failed);
  if (comm->rank == 0 || comm->ctl->root_fd < 0 || !res || res == COLLIE_ERR_ABORTED) return;
  char msg[sizeof(comm->fail_msg)];
  pthread_mutex_lock(&comm->err_lock);
  const bool relayed = comm->fail_from_remote;
  snprintf(msg, sizeof(msg), "%s", comm->fail_msg);
  pthread_mutex_unlock(&comm->err_lock);
  if (relayed) collie_ctl_send_fail(comm, res, msg);
}

void collie_ctl_close(collie_comm_t *comm) {
  collie_control_t *c = comm->ctl;
  if (!c) return;
  if (c->watchdog_running) {
    uint64_t one = 1;
    if (write(c->wake_fd, &one, sizeof(one)) < 0) { /* the thread also stops on closed fds */
    }
    pthread_join(c->watchdog, NULL);
  }
  if (c->wake_fd >= 0) close(c->wake_fd);
  echo_failure(comm);
  if (c->root_fd >= 0) collie_socket_close(c->root_fd);
  if (c->fds)
    for (int r = 0; r < comm->nranks; r++)
      if (c->fds[r] >= 0) collie_socket_close(c->fds[r]);
  free(c->fds);
  free(c->said_bye);
  free(c->stalls);
  free(c->wd_poll);
  free(c->wd_who);
  pthread_mutex_destroy(&c->send_lock);
  pthread_mutex_destroy(&c->m);
  pthread_cond_destroy(&c->cv);
  free(c);
  comm->ctl = NULL;
}
