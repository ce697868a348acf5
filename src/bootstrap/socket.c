/* Socket helpers (see socket.h). */
#include "bootstrap/socket.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bootstrap/fork_guard.h"
#include "core/comm.h"
#include "core/comm_internal.h"
#include "core/error.h"
#include "core/params.h"

int collie_parse_hostport(const char *s, struct sockaddr_storage *out, char *err, size_t errlen) {
  char host[256];
  const char *port;
  if (!s || !*s) {
    snprintf(err, errlen, "empty address");
    return -1;
  }
  if (s[0] == '[') {
    const char *end = strchr(s, ']');
    if (!end || end[1] != ':') {
      snprintf(err, errlen, "'%s' is not [ipv6]:port", s);
      return -1;
    }
    snprintf(host, sizeof(host), "%.*s", (int)(end - s - 1), s + 1);
    port = end + 2;
  } else {
    const char *colon = strrchr(s, ':');
    if (!colon) {
      snprintf(err, errlen, "'%s' has no :port", s);
      return -1;
    }
    snprintf(host, sizeof(host), "%.*s", (int)(colon - s), s);
    port = colon + 1;
  }
  char *endp;
  long p = strtol(port, &endp, 10);
  if (*endp || p <= 0 || p > 65535) {
    snprintf(err, errlen, "'%s' has an invalid port", s);
    return -1;
  }
  struct addrinfo hints = {0}, *res = NULL;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo(host, NULL, &hints, &res);
  if (rc != 0 || !res) {
    /* Out of memory, or a resolver that failed for now: not a wrong address. */
    bool transient = rc == EAI_MEMORY || rc == EAI_AGAIN || rc == EAI_SYSTEM;
    snprintf(err, errlen, "cannot resolve host '%s': %s%s", host, gai_strerror(rc),
             rc == EAI_MEMORY ? "; " COLLIE_MEMORY_ADVICE : "");
    return transient ? -2 : -1;
  }
  memset(out, 0, sizeof(*out));
  memcpy(out, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  collie_addr_set_port(out, (uint16_t)p);
  return 0;
}

socklen_t collie_addr_len(const struct sockaddr_storage *a) {
  return a->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

uint16_t collie_addr_port(const struct sockaddr_storage *a) {
  if (a->ss_family == AF_INET6) return ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
  return ntohs(((const struct sockaddr_in *)a)->sin_port);
}

void collie_addr_set_port(struct sockaddr_storage *a, uint16_t port) {
  if (a->ss_family == AF_INET6) ((struct sockaddr_in6 *)a)->sin6_port = htons(port);
  else ((struct sockaddr_in *)a)->sin_port = htons(port);
}

const char *collie_addr_str(const struct sockaddr_storage *a, char *buf, size_t len) {
  char ip[INET6_ADDRSTRLEN] = "?";
  if (a->ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)a)->sin6_addr, ip, sizeof(ip));
    snprintf(buf, len, "[%s]:%u", ip, collie_addr_port(a));
  } else {
    inet_ntop(AF_INET, &((const struct sockaddr_in *)a)->sin_addr, ip, sizeof(ip));
    snprintf(buf, len, "%s:%u", ip, collie_addr_port(a));
  }
  return buf;
}

bool collie_addr_is_loopback(const struct sockaddr_storage *a) {
  if (a->ss_family == AF_INET6) return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)a)->sin6_addr);
  return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
}

bool collie_addr_is_local(const struct sockaddr_storage *a) {
  int fd = socket(a->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return true; /* cannot tell: assume so, as before */
  struct sockaddr_storage b = *a;
  collie_addr_set_port(&b, 0);
  bool local = bind(fd, (struct sockaddr *)&b, collie_addr_len(&b)) == 0 || errno != EADDRNOTAVAIL;
  close(fd);
  return local;
}

bool collie_ifname_match(const char *filter, const char *name) {
  if (!filter || !*filter) return true;
  bool exclude = false, exact = false;
  if (*filter == '^') {
    exclude = true;
    filter++;
  }
  if (*filter == '=') {
    exact = true;
    filter++;
  }
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", filter);
  bool hit = false;
  for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (exact ? strcmp(tok, name) == 0 : strncmp(tok, name, strlen(tok)) == 0) hit = true;
  }
  return exclude ? !hit : hit;
}

int collie_pick_local_addr(struct sockaddr_storage *out, char *err, size_t errlen) {
  const char *filter = collie_param_str(COLLIE_P_SOCKET_IFNAME);
  struct ifaddrs *ifs = NULL;
  if (getifaddrs(&ifs) != 0) {
    snprintf(err, errlen, "getifaddrs failed: %s", strerror(errno));
    return -1;
  }
  int found = -1;
  /* Two passes: first non-loopback (unless the filter names loopback), then loopback. */
  for (int pass = 0; pass < 2 && found < 0; pass++) {
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
      if (!i->ifa_addr || !(i->ifa_flags & IFF_UP)) continue;
      if (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6) continue;
      if (i->ifa_addr->sa_family == AF_INET6 &&
          IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr))
        continue;
      bool lo = (i->ifa_flags & IFF_LOOPBACK) != 0;
      if (filter ? !collie_ifname_match(filter, i->ifa_name) : (pass == 0 ? lo : !lo)) continue;
      /* Prefer IPv4 when both exist on the same interface: simpler for users to read. */
      if (found >= 0 && out->ss_family == AF_INET) continue;
      memset(out, 0, sizeof(*out));
      memcpy(out, i->ifa_addr, i->ifa_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
                                                                 : sizeof(struct sockaddr_in6));
      found = 0;
      if (out->ss_family == AF_INET) break;
    }
    if (filter) break;
  }
  if (found < 0) { /* name what there is, so that the user can pick */
    char names[160] = "";
    size_t o = 0;
    for (struct ifaddrs *i = ifs; i && o < sizeof(names) - 20; i = i->ifa_next)
      if (i->ifa_addr && (i->ifa_flags & IFF_UP) &&
          (i->ifa_addr->sa_family == AF_INET || i->ifa_addr->sa_family == AF_INET6) && !strstr(names, i->ifa_name))
        o += (size_t)snprintf(names + o, sizeof(names) - o, "%s%s", o ? ", " : "", i->ifa_name);
    snprintf(err, errlen, "no network interface that is up matches COLLIE_SOCKET_IFNAME='%s' (this host has: %s)",
             filter ? filter : "", names[0] ? names : "none");
  }
  freeifaddrs(ifs);
  return found;
}

int collie_listen(struct sockaddr_storage *addr) {
  int lo, hi;
  /* Validated at creation; before it (collie_get_unique_id) a malformed range is ignored. */
  if (collie_param_port_range(&lo, &hi) <= 0) lo = hi = 0;
  /* A fresh socket per port: two ranks of a host that bind one port at once (SO_REUSEADDR
   * lets both) find out only at listen(), and the loser must go on to the next port. With
   * one socket, bind could not be undone, and the rank failed with the range unused. */
  int e = 0;
  for (int p = lo; p <= hi; p++) {
    int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    collie_addr_set_port(addr, (uint16_t)p);
    if (bind(fd, (struct sockaddr *)addr, collie_addr_len(addr)) == 0 && listen(fd, 1024) == 0) {
      socklen_t len = sizeof(*addr);
      getsockname(fd, (struct sockaddr *)addr, &len);
      return fd;
    }
    e = errno;
    close(fd);
  }
  errno = e;
  return -1;
}

void collie_socket_tune(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  fcntl(fd, F_SETFD, FD_CLOEXEC);
}

void collie_socket_keepalive(int fd, int seconds) {
  if (seconds <= 0) return;
  /* Probes from a third of the limit on, every sixth, and TCP_USER_TIMEOUT for frames
   * sent but never acknowledged; both end the connection at about `seconds`. */
  int one = 1, idle = seconds / 3 > 0 ? seconds / 3 : 1, intvl = seconds / 6 > 0 ? seconds / 6 : 1;
  int cnt = (seconds - idle + intvl - 1) / intvl;
  unsigned int user_ms = (unsigned int)seconds * 1000u;
  if (cnt < 1) cnt = 1;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_ms, sizeof(user_ms));
}

int collie_set_nonblocking(int fd, bool nb) {
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0) return -1;
  return fcntl(fd, F_SETFL, nb ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK));
}

static int wait_fd(int fd, short ev, int64_t deadline_ns);

static _Thread_local bool refusal_final;

void collie_socket_refusal_final(bool final) { refusal_final = final; }

bool collie_socket_refusal_is_final(void) { return refusal_final; }

int collie_connect_retry(const struct sockaddr_storage *addr, int64_t deadline_ns, int *err_out) {
  int64_t backoff_ms = 5;
  *err_out = 0;
  for (;;) {
    int fd = collie_guarded_socket(addr->ss_family);
    if (fd < 0) {
      *err_out = errno;
      return -1;
    }
    /* Nonblocking, so that the deadline bounds each attempt: a blocking connect to an
     * address whose packets are dropped (a firewall, a route into a black hole) waits out
     * the kernel's SYN retries, over two minutes, whatever COLLIE_CONNECT_TIMEOUT says.
     * The wait also covers a connect that a signal interrupts (a handler installed without
     * SA_RESTART: a profiler's SIGPROF, a timer's SIGALRM): the handshake goes on in the
     * kernel, and failing there lost the join ("could not reach rank 0 ...: Interrupted
     * system call") while the listener accepted a connection that never greeted. */
    int rc = collie_set_nonblocking(fd, true);
    if (rc == 0) rc = connect(fd, (const struct sockaddr *)addr, collie_addr_len(addr));
    if (rc != 0 && (errno == EINPROGRESS || errno == EINTR)) {
      int w = wait_fd(fd, POLLOUT, deadline_ns);
      int so = 0;
      socklen_t sl = sizeof(so);
      if (w == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl) == 0) rc = so ? -1 : 0;
      /* An attempt cut short by the deadline reports the previous attempt's error, if
       * any ("refused" says more than "timed out"). */
      errno = w == -2 ? (*err_out ? *err_out : ETIMEDOUT) : w == 0 ? so : errno;
    }
    if (rc == 0 && collie_set_nonblocking(fd, false) == 0) {
      collie_socket_tune(fd);
      return fd;
    }
    *err_out = errno;
    collie_socket_close(fd);
    if (refusal_final && (*err_out == ECONNREFUSED || *err_out == ECONNRESET)) return -1;
    if (*err_out != ECONNREFUSED && *err_out != ETIMEDOUT && *err_out != ENETUNREACH &&
        *err_out != EHOSTUNREACH && *err_out != ECONNRESET && *err_out != EAGAIN)
      return -1;
    int64_t now = collie_now_ns();
    if (now >= deadline_ns || collie_socket_abandoned()) return -2;
    int64_t left_ms = (deadline_ns - now) / 1000000;
    collie_socket_poll(NULL, 0, (int)(backoff_ms < left_ms ? backoff_ms : left_ms));
    if (backoff_ms < 200) backoff_ms *= 2;
  }
}

bool collie_errno_is_shortage(int err) {
  return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

int collie_accept(int listen_fd, struct sockaddr_storage *from, int *shortage) {
  int fd = collie_guarded_accept(listen_fd, from);
  *shortage = fd < 0 && collie_errno_is_shortage(errno) ? errno : 0;
  return fd;
}

const char *collie_fd_advice(int err, char *buf, size_t len) {
  if (err == ENFILE) {
    snprintf(buf, len, "the system's table of open files is full: raise fs.file-max (sysctl) or close files");
    return buf;
  }
  if (err != EMFILE) {
    snprintf(buf, len, "the system is short of memory for sockets");
    return buf;
  }
  struct rlimit rl;
  char limit[64] = "a limited number of";
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    snprintf(limit, sizeof(limit), "at most %llu", (unsigned long long)rl.rlim_cur);
  snprintf(buf, len,
           "this process may have %s files open (ulimit -n), and every communicator keeps sockets: rank 0 one "
           "per rank for control, every rank COLLIE_TCP_NSOCKS per peer over TCP: raise the limit (ulimit -n "
           "65536, systemd LimitNOFILE, docker run --ulimit nofile=65536), destroy communicators no longer "
           "needed or lower COLLIE_TCP_NSOCKS",
           limit);
  return buf;
}

static _Thread_local const _Atomic int *abandon_flag;

static _Thread_local bool (*abandon_fn)(void *);
static _Thread_local void *abandon_arg;

void collie_socket_abandon_when(const _Atomic int *flag) { abandon_flag = flag; }

void collie_socket_abandon_if(bool (*fn)(void *arg), void *arg) {
  abandon_fn = fn;
  abandon_arg = arg;
}

bool collie_socket_abandoned(void) {
  return (abandon_flag && atomic_load(abandon_flag) != 0) || (abandon_fn && abandon_fn(abandon_arg));
}

static _Thread_local int (*idle_fn)(void);

void collie_socket_idle_with(int (*fn)(void)) { idle_fn = fn; }

int collie_socket_poll(struct pollfd *p, nfds_t n, int timeout_ms) {
  const int64_t until = collie_now_ns() + (int64_t)timeout_ms * 1000000;
  for (;;) {
    const int busy = idle_fn ? idle_fn() : -1;
    int64_t left_ms = (until - collie_now_ns() + 999999) / 1000000;
    if (left_ms < 0) left_ms = 0;
    const int r = poll(p, n, (int)(busy >= 0 && left_ms > 1 ? 1 : left_ms));
    if (r != 0 || busy < 0 || left_ms <= 1) return r;
  }
}

static int wait_fd(int fd, short ev, int64_t deadline_ns) {
  for (;;) {
    int64_t left = deadline_ns - collie_now_ns();
    if (left <= 0 || collie_socket_abandoned()) return -2;
    struct pollfd p = {fd, ev, 0};
    int ms = (int)(left / 1000000) + 1;
    int r = collie_socket_poll(&p, 1, ms > 1000 ? 1000 : ms);
    if (r > 0) return 0;
    if (r < 0 && errno != EINTR) return -1;
  }
}

int collie_send_all(int fd, const void *buf, size_t len, int64_t deadline_ns) {
  const char *p = buf;
  while (len) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      int w = wait_fd(fd, POLLOUT, deadline_ns);
      if (w) return w;
      continue;
    }
    return -1;
  }
  return 0;
}

int collie_recv_all(int fd, void *buf, size_t len, int64_t deadline_ns) {
  char *p = buf;
  while (len) {
    ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= (size_t)n;
      continue;
    }
    if (n == 0) {
      errno = ECONNRESET;
      return -1;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      int w = wait_fd(fd, POLLIN, deadline_ns);
      if (w) return w;
      continue;
    }
    return -1;
  }
  return 0;
}

int collie_listen_exact(struct sockaddr_storage *addr) {
  int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, (struct sockaddr *)addr, collie_addr_len(addr)) != 0) {
    /* MASTER_ADDR may name this host by an address it cannot bind (NAT, a name that
     * resolves elsewhere): listen on every address with that port. */
    struct sockaddr_storage any;
    memset(&any, 0, sizeof(any));
    any.ss_family = addr->ss_family;
    collie_addr_set_port(&any, collie_addr_port(addr));
    if (bind(fd, (struct sockaddr *)&any, collie_addr_len(&any)) != 0) {
      int e = errno;
      close(fd);
      errno = e;
      return -1;
    }
  }
  if (listen(fd, 1024) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}
