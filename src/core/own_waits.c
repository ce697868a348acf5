/* What this process itself waits for (own_waits.h). */
#include "core/own_waits.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "algo/native/shm_native.h"
#include "bootstrap/control.h"
#include "core/comm_internal.h"
#include "sched/executor.h"
#include "transport/shm.h"

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static collie_comm_t **list;
static size_t list_n, list_cap;

void collie_own_waits_add(collie_comm_t *comm) {
  pthread_mutex_lock(&list_lock);
  if (list_n == list_cap) { /* without memory the communicator is simply not described */
    size_t cap = list_cap ? list_cap * 2 : 16;
    collie_comm_t **l = realloc(list, cap * sizeof(*l));
    if (l) {
      list = l;
      list_cap = cap;
    }
  }
  if (list_n < list_cap) list[list_n++] = comm;
  pthread_mutex_unlock(&list_lock);
}

void collie_own_waits_remove(collie_comm_t *comm) {
  pthread_mutex_lock(&list_lock);
  for (size_t i = 0; i < list_n; i++)
    if (list[i] == comm) {
      list[i] = list[--list_n];
      break;
    }
  pthread_mutex_unlock(&list_lock);
}

/* A communicator's lock, tried a few times: the holder is in a post or a progress pass
 * (or a wait that does not sleep), so it is not stalled, or will let go soon. */
static bool lock_briefly(collie_comm_t *c) {
  for (int i = 0; i < 64; i++) {
    if (collie_lock_try(&c->lock)) return true;
    sched_yield();
  }
  return false;
}

/* Whether rank `rank` of c is the only rank of c in this process: with ranks as threads of
 * one process, the process's stalls could be any of them. */
bool collie_only_rank_here(const collie_comm_t *c, int rank) {
  const collie_card_t *mine = &c->cards[rank];
  for (int r = 0; r < c->nranks; r++)
    if (r != rank && c->cards[r].pid == mine->pid && !strncmp(c->cards[r].host_id, mine->host_id, sizeof(mine->host_id)))
      return false;
  return true;
}

enum { STALL_MIN_NS = 50 * 1000000 }; /* idle less long is not a stall, just a wait */
enum { ASK_SOON_MIN_NS = 40 * 1000000 }; /* a communicator asks its peer at most this often when asked */

/* Under c->lock: the rank its oldest pending operation waits for (-1: none known), another
 * than `avoid` where it waits for more than one (collie_op_waited_xfer_avoiding). */
static int waited_peer(collie_comm_t *c, int avoid) {
  for (const collie_op_t *op = c->ops; op; op = op->next) {
    if (op->steps_done) continue;
    if (op->native) return op->nat_wait;
    int p;
    return collie_op_waited_xfer_avoiding(c, op, avoid, &p) ? p : -1;
  }
  return collie_native_deferred_root(c); /* a comparison with a root's call, if any */
}

typedef struct {
  bool elsewhere;  /* it does not wait for the asker's own process (ranks as threads: a cycle) */
  bool loops;      /* the far end of its chain is a wait for this very process */
  bool waited;     /* a thread waits for it right now (it sleeps or yields in collie_wait) */
  int64_t idle_ns;
  char text[COLLIE_WAITS_TEXT - 160], end[COLLIE_WAITS_TEXT];
} stalled_t;

const char *collie_rank_stopped(const collie_comm_t *comm, int p) {
  if (p < 0 || p >= comm->nranks) return NULL;
  const collie_card_t *c = &comm->cards[p], *mine = &comm->cards[comm->rank];
  if (strncmp(c->host_id, mine->host_id, sizeof(c->host_id)) || c->pid == mine->pid) return NULL;
  const char s = collie_proc_state(c->pid);
  return s == 'T' ? "stopped (SIGSTOP or job control)" : s == 't' ? "stopped by a debugger" : NULL;
}

/* Under comm->lock: what the peer comm's last stall report asked answered, if it answered
 * during this stall (a peer of another process, and no threads of this one among comm's
 * ranks). */
static int asked(collie_comm_t *comm, char *text, char *end) {
  const int p = comm->stall_asked;
  if (p < 0 || p >= comm->nranks || !comm->cards || !collie_only_rank_here(comm, comm->rank) ||
      !collie_only_rank_here(comm, p) || !comm->last_progress_ns || comm->stall_asked_ns < comm->last_progress_ns)
    return -1;
  /* the answer through rank 0, else what a peer of this host posted in its segment (rank 0
   * stopped passes no answer on) */
  return collie_ctl_peer_waits(comm, p, comm->last_progress_ns, text, end) ||
                 collie_shm_peer_waits(comm, p, comm->last_progress_ns, text, end)
             ? p
             : -2 - p;
}

bool collie_peer_answered(collie_comm_t *comm) {
  char t[COLLIE_WAITS_TEXT], e[COLLIE_WAITS_TEXT];
  return asked(comm, t, e) >= 0;
}

enum { RELAY_SILENT_NS = 500 * 1000000 }; /* rank 0's watchdog acknowledges at once when it runs */

/* Under c->lock: whether rank 0, through which c's question about rank p went, has left it
 * unacknowledged (stopped, or starved of CPU; on another host /proc cannot tell): how,
 * into buf, naming it. */
static bool relay_silent(collie_comm_t *c, int p, char *buf, size_t len) {
  if (p == 0 || c->rank == 0) return false;
  const int64_t ns = collie_ctl_relay_silent_ns(c);
  if (ns < RELAY_SILENT_NS) return false;
  char rd[160];
  snprintf(buf, len, "%s, which passes on the question of what rank %d waits for, has not acknowledged it in %.1f s: "
           "it may be stopped (a debugger, SIGSTOP) or starved of CPU",
           collie_peer_desc(c, 0, rd, sizeof(rd)), p, (double)ns / 1e9);
  return true;
}

/* Whether `text` (ranks described by collie_peer_desc) names this process: its own
 * description's "(pid ... on host ...)". */
static bool names_own_process(const collie_comm_t *c, const char *text) {
  char mine[160];
  const char *proc = strchr(collie_peer_desc(c, c->rank, mine, sizeof(mine)), '(');
  return proc && strstr(text, proc) != NULL;
}

/* Under c->lock: whether c waits without progress, and in what. */
static bool stalled(collie_comm_t *c, collie_comm_t *asking, const collie_card_t *asker, int64_t now, stalled_t *s) {
  if (!collie_comm_pending(c) || atomic_load(&c->failed) || !c->last_progress_ns || c->progress_seen != c->progress_count)
    return false;
  s->idle_ns = now - c->last_progress_ns;
  if (s->idle_ns < STALL_MIN_NS) return false;
  /* Asked by another process what it waits for: c asks its own peer soon, not at its next
   * report (up to 2 s on), so that a question travels down a chain of waits at once and
   * each answer reaches one rank further (a chain of 4 with a timeout of 6 s was traced 2
   * ranks deep: fault campaign, 5 ranks, two threads each on their own communicators). Not
   * when this process describes itself (its posts, comes_back): two stalled communicators
   * of one process would make each other ask every 40 ms. */
  const collie_card_t *mine = &c->cards[c->rank];
  if (now - c->stall_asked_ns >= ASK_SOON_MIN_NS &&
      (asker->pid != mine->pid || strncmp(asker->host_id, mine->host_id, sizeof(mine->host_id))))
    c->ask_soon = true;
  s->waited = atomic_load(&c->waiters) > 0;
  /* c's rank in the asker's process, if any: a wait for it is named last */
  int avoid = -1;
  for (int r = 0; r < c->nranks && avoid < 0; r++)
    if (c->cards[r].pid == asker->pid && !strncmp(c->cards[r].host_id, asker->host_id, sizeof(asker->host_id)))
      avoid = r;
  const int p = waited_peer(c, avoid);
  s->elsewhere = p < 0 || p >= c->nranks || c->cards[p].pid != asker->pid ||
                 strncmp(c->cards[p].host_id, asker->host_id, sizeof(asker->host_id));
  char what[300];
  collie_describe_wait_avoiding(c, avoid, what, sizeof(what));
  if (c == asking)
    snprintf(s->text, sizeof(s->text), "%.1f s without progress in %.250s", (double)s->idle_ns / 1e9, what);
  else
    snprintf(s->text, sizeof(s->text), "%.1f s without progress on another communicator (where it is rank %d of %d), "
             "in %.200s", (double)s->idle_ns / 1e9, c->rank, c->nranks, what);
  /* the far end of the chain: where the peer's answer says it ends, else the peer itself */
  char t[COLLIE_WAITS_TEXT], e[COLLIE_WAITS_TEXT], pd[160];
  /* c's own question went to the peer it waits for first; named another, c has no answer */
  const int q = p < 0 || p == c->stall_asked ? asked(c, t, e) : -1;
  /* the peer asked that did not answer, or (nobody asked: c only moves inside another
   * communicator's wait, which alone reports its stalls) the peer c waits for */
  const int quiet = q < -1 ? -2 - q : q == -1 ? p : -1;
  const char *how = quiet >= 0 ? collie_rank_stopped(c, quiet) : NULL;
  if (q >= 0) snprintf(s->end, sizeof(s->end), "%s", e[0] ? e : t);
  else if (how) snprintf(s->end, sizeof(s->end), "%s is %s", collie_peer_desc(c, quiet, pd, sizeof(pd)), how);
  else if (q >= -1 || !relay_silent(c, quiet, s->end, sizeof(s->end))) s->end[0] = 0;
  s->loops = names_own_process(c, s->end);
  return true;
}

/* Whether a is the better answer: one whose chain does not end in a wait for this process
 * (across communicators two processes can wait for each other while the cause lies behind
 * another wait of one of them: fault campaign, 5 ranks with rank 0 frozen, a reduce on the
 * world and an all-gather on another communicator, and no error named rank 0), what waits
 * elsewhere than the asker's process, then what a thread waits in (before operations that
 * merely wait to be driven), then the longest. */
static bool better(const stalled_t *a, const stalled_t *b) {
  if (a->loops != b->loops) return !a->loops;
  if (a->elsewhere != b->elsewhere) return a->elsewhere;
  if (a->waited != b->waited) return a->waited;
  return a->idle_ns > b->idle_ns;
}

/* Under list_lock; `held`: a communicator whose lock the caller holds (or NULL); `skip`: one
 * to leave out (or NULL). Whether any communicator was stalled. */
static bool describe(collie_comm_t *asking, int asker, collie_comm_t *held, const collie_comm_t *skip, char *text,
                     char *end) {
  stalled_t best, s;
  bool found = false;
  const int64_t now = collie_now_ns();
  for (size_t i = 0; i < list_n; i++) {
    collie_comm_t *c = list[i];
    if (c == skip || atomic_load(&c->destroyed) || !c->cards || !collie_only_rank_here(c, c->rank)) continue;
    if (c != held && !lock_briefly(c)) continue;
    const bool st = stalled(c, asking, &asking->cards[asker], now, &s);
    if (c != held) collie_unlock(&c->lock);
    if (st && (!found || better(&s, &best))) {
      best = s;
      found = true;
    }
  }
  char me[160];
  collie_peer_desc(asking, asking->rank, me, sizeof(me));
  end[0] = 0;
  if (!found) {
    snprintf(text, COLLIE_WAITS_TEXT, "%s is not waiting without progress in collie: it has not reached this "
             "operation (busy elsewhere in the program, or blocked outside collie)", me);
    return false;
  }
  snprintf(text, COLLIE_WAITS_TEXT, "%.150s has itself waited %.300s", me, best.text);
  snprintf(end, COLLIE_WAITS_TEXT, "%s", best.end);
  return true;
}

void collie_own_waits_describe(collie_comm_t *asking, int asker, char *text, char *end) {
  pthread_mutex_lock(&list_lock);
  describe(asking, asker, NULL, NULL, text, end);
  pthread_mutex_unlock(&list_lock);
}

void collie_own_waits_post(collie_comm_t *held) {
  char text[COLLIE_WAITS_TEXT], end[COLLIE_WAITS_TEXT];
  /* Only if free: the watchdog answering a question holds it while it tries held->lock,
   * and waiting here with held->lock made it skip held's stall ("not waiting in collie",
   * coll_fuzz_stop_5 under ASan). The post comes again 600 ms on (core/wait.c). */
  if (pthread_mutex_trylock(&list_lock)) return;
  for (size_t i = 0; i < list_n; i++) {
    collie_comm_t *c = list[i];
    if (atomic_load(&c->destroyed) || !c->cards || !c->shm || !collie_only_rank_here(c, c->rank)) continue;
    describe(c, c->rank, held, NULL, text, end); /* asked by itself: any peer elsewhere is "elsewhere" */
    collie_shm_post_waits(c, text, end);
  }
  pthread_mutex_unlock(&list_lock);
}

/* The list lock, waited for up to 50 ms: a timeout's sentence comes once, and the holder
 * (a watchdog answering a question) tries each communicator's lock a bounded number of
 * times, so a caller holding one delays it without deadlock. */
static bool list_lock_within_50ms(void) {
  for (int i = 0; i < 50; i++) {
    if (!pthread_mutex_trylock(&list_lock)) return true;
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  return false;
}

/* Under comm->lock: when the chain of waits ends at this rank's own process (`far` names
 * it), what this process itself waits for on its other communicators, as ", which is this
 * rank's own process: it has itself waited ...", else "". Across communicators two ranks
 * can each wait for the other while the cause lies further on, behind one of this
 * process's other waits (fault campaign: rank 4, frozen rank 0, 5 ranks; rank 1 waited
 * in a reduce on the world for this rank, which waited for rank 1 in an all-gather on
 * another communicator, and the error named no frozen rank). */
static void comes_back(collie_comm_t *comm, const char *far, char *buf, size_t len) {
  char text[COLLIE_WAITS_TEXT], end[COLLIE_WAITS_TEXT];
  buf[0] = 0;
  /* the far end is one rank's wait, and names this process only as the one waited for */
  if (!names_own_process(comm, far) || !list_lock_within_50ms()) return;
  const bool found = describe(comm, comm->rank, comm, comm, text, end);
  pthread_mutex_unlock(&list_lock);
  if (!found) return;
  /* the far end first again: the sentence is cut to fit */
  if (end[0]) snprintf(buf, len, ", which is this rank's own process; at the end of its own chain, %s; %s", end, text);
  else snprintf(buf, len, ", which is this rank's own process: %s", text);
}

void collie_peer_said(collie_comm_t *comm, char *buf, size_t len) {
  char t[COLLIE_WAITS_TEXT], e[COLLIE_WAITS_TEXT], pd[160], rd[160], silent[COLLIE_WAITS_TEXT];
  buf[0] = 0;
  const int q = asked(comm, t, e);
  if (q == -1) return;
  if (q >= 0) {
    /* the far end first: a sentence cut to fit keeps what matters most */
    char own[2 * COLLIE_WAITS_TEXT + 128];
    comes_back(comm, e[0] ? e : t, own, sizeof(own));
    if (e[0]) snprintf(buf, len, "; at the end of the chain of ranks waiting for each other, %s%s; asked first, %s", e, own, t);
    else snprintf(buf, len, "; asked, %s%s", t, own);
    return;
  }
  const int p = -2 - q;
  const char *how = collie_rank_stopped(comm, p), *relay_how = p && comm->rank ? collie_rank_stopped(comm, 0) : NULL;
  collie_peer_desc(comm, p, pd, sizeof(pd));
  if (how)
    snprintf(buf, len, "; %s is %s: resume it (kill -CONT %d) or detach the debugger", pd, how, comm->cards[p].pid);
  else if (relay_how)
    snprintf(buf, len, "; %s, which passes on the question of what %s waits for, is %s: resume it (kill -CONT %d)",
             collie_peer_desc(comm, 0, rd, sizeof(rd)), pd, relay_how, comm->cards[0].pid);
  else if (relay_silent(comm, p, silent, sizeof(silent)))
    snprintf(buf, len, "; %s did not answer when asked what it waits for, and %s", pd, silent);
  else if (collie_now_ns() - comm->stall_asked_ns >= 500 * 1000000LL)
    snprintf(buf, len, "; %s did not answer when asked what it waits for: it may be stopped, or starved of CPU", pd);
}

/* The fields of /proc/PID/stat after the command, from the state (field 3) on, into line;
 * NULL when unreadable. "pid (comm) S ...": the command may hold spaces and parentheses,
 * the last ')' ends it. */
static const char *proc_stat_fields(int pid, char *line, size_t len) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  const bool got = fgets(line, (int)len, f) != NULL;
  fclose(f);
  const char *p = got ? strrchr(line, ')') : NULL;
  return p && p[1] == ' ' ? p + 2 : NULL;
}

char collie_proc_state(int pid) {
  char line[512];
  const char *p = proc_stat_fields(pid, line, sizeof(line));
  return p ? p[0] : 0;
}

unsigned long long collie_proc_start(int pid) {
  char line[512];
  const char *p = proc_stat_fields(pid, line, sizeof(line));
  for (int field = 3; p && field < 22; field++) { /* starttime is field 22 */
    p = strchr(p, ' ');
    if (p) p++;
  }
  return p ? strtoull(p, NULL, 10) : 0;
}
