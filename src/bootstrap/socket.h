/* Socket helpers shared by the bootstrap and the TCP transport: addresses, interface
 * selection (NCCL's COLLIE_SOCKET_IFNAME syntax), listening within COLLIE_PORT_RANGE,
 * connecting with retries, and whole-buffer I/O with deadlines. */
#ifndef COLLIE_SOCKET_H
#define COLLIE_SOCKET_H

#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* "host:port", "[v6]:port"; host may be a name. 0 on success, -1 for a bad address, -2
 * when resolving failed for want of memory or for now (the address may be right). */
int collie_parse_hostport(const char *s, struct sockaddr_storage *out, char *err, size_t errlen);
const char *collie_addr_str(const struct sockaddr_storage *a, char *buf, size_t len);
socklen_t collie_addr_len(const struct sockaddr_storage *a);
uint16_t collie_addr_port(const struct sockaddr_storage *a);
void collie_addr_set_port(struct sockaddr_storage *a, uint16_t port);

/* Is a an address in 127.0.0.0/8 or ::1 (reachable from this host only)? */
bool collie_addr_is_loopback(const struct sockaddr_storage *a);
/* Is a one of this host's addresses (can a socket bind it)? */
bool collie_addr_is_local(const struct sockaddr_storage *a);

/* Does interface `name` pass the filter ("eth,ib", "^docker", "=eth0")? */
bool collie_ifname_match(const char *filter, const char *name);
/* The address to advertise: the first up interface passing COLLIE_SOCKET_IFNAME (default:
 * the first non-loopback one, else loopback). 0 on success. */
int collie_pick_local_addr(struct sockaddr_storage *out, char *err, size_t errlen);

/* A listening socket on `addr`'s IP (port from COLLIE_PORT_RANGE or any); the chosen port is
 * written back into addr. Returns the fd or -1 with errno. */
int collie_listen(struct sockaddr_storage *addr);
/* Connects, retrying refused/unreachable attempts until deadline_ns. Returns the fd, -2
 * when the deadline passed (or the thread's waits were abandoned), or -1 with *err_out on
 * an error that ends the tries (a refusal too, while refusals are final). */
int collie_connect_retry(const struct sockaddr_storage *addr, int64_t deadline_ns, int *err_out);
/* While set, this thread's connects take a refused (or reset) connection as final instead
 * of retrying it until their deadline. Set by collie_comm_split around the new
 * communicator's creation: its rank 0 listens before it hands out the id, so a refusal
 * there means it closed the listener, having given up creating the communicator (or died);
 * the members it had not accepted retried until COLLIE_CONNECT_TIMEOUT (60 s) and then
 * advised checking that rank 0 started. Elsewhere a refusal may only mean that rank 0 has
 * not started yet. */
void collie_socket_refusal_final(bool final);
bool collie_socket_refusal_is_final(void);

/* accept(2) for the loops that wait for connections. Returns the fd, or -1 with *shortage
 * set to errno when the process or the system is out of descriptors or memory (EMFILE,
 * ENFILE, ENOBUFS, ENOMEM): the connection then stays pending and keeps the listening
 * socket readable, so a retry would spin until the deadline and blame the peers. Other
 * failures (the connection vanished, a signal): -1 with *shortage 0, retry. */
int collie_accept(int listen_fd, struct sockaddr_storage *from, int *shortage);
/* Is err one of the shortages above? */
bool collie_errno_is_shortage(int err);
/* The end of a sentence for a shortage of descriptors: the limit and how to raise it. */
const char *collie_fd_advice(int err, char *buf, size_t len);

/* Blocking whole-buffer I/O with a deadline (poll based). 0 ok, -1 error/EOF (errno set,
 * ECONNRESET for EOF), -2 timeout. */
int collie_send_all(int fd, const void *buf, size_t len, int64_t deadline_ns);
int collie_recv_all(int fd, void *buf, size_t len, int64_t deadline_ns);

/* While *flag is nonzero, this thread's waits above, and the bootstrap's and the TCP
 * transport's accept loops, give up as at their deadline. Set by collie_comm_split around
 * the new communicator's creation to the parent's failure word: a member that dies then
 * fails the parent, and the others need not wait out COLLIE_CONNECT_TIMEOUT for it. NULL:
 * never give up early. */
void collie_socket_abandon_when(const _Atomic int *flag);
/* The same with a test instead of a word: this thread's waits also give up while
 * fn(arg) says so. NULL: no test. */
void collie_socket_abandon_if(bool (*fn)(void *arg), void *arg);
bool collie_socket_abandoned(void);

/* While creating a communicator, this thread's other communicators must still move: a
 * peer may wait in one of them for this rank before it joins (a rank creating a
 * communicator while the other waited for an all-reduce first: both gave up at
 * COLLIE_CONNECT_TIMEOUT). fn (NULL: none) is called from this thread's waits in
 * creation, and says whether other work is in flight (>= 0), in which case the waits look
 * again within a millisecond. */
void collie_socket_idle_with(int (*fn)(void));
/* poll() for creation's waits: fn in between, in steps of 1 ms while it has work. */
int collie_socket_poll(struct pollfd *p, nfds_t n, int timeout_ms);

void collie_socket_tune(int fd); /* TCP_NODELAY, close-on-exec */
int collie_set_nonblocking(int fd, bool nb);
/* A connection whose peer's host stops answering (crashed, powered off, cut off the
 * network) ends with ETIMEDOUT after about `seconds` (COLLIE_KEEPALIVE), idle or not,
 * where without probes it stayed open and a waiting rank saw nothing until
 * COLLIE_EXEC_TIMEOUT. The peer's kernel answers the probes: a stopped or busy process is
 * not mistaken for a lost host. 0: no probes. */
void collie_socket_keepalive(int fd, int seconds);

/* How much longer a wait on other ranks lasts than the connects those ranks make. A rank
 * that cannot reach a peer fails at COLLIE_CONNECT_TIMEOUT with the sentence that says why
 * ("could not connect to rank 1 ... at ADDR: No route to host"); the peer waiting to
 * accept it, and rank 0 waiting for both at the barrier, used the same deadline and often
 * failed first with a vaguer one ("timed out waiting for 2 TCP connections", "rank 1 did
 * not answer in time"), which the others then reported. With this margin the precise
 * sentence reaches rank 0 first and every rank returns it. */
#define COLLIE_SETUP_GRACE_MS 2000

#endif
