/* TCP loopback probe: what two processes move over one 127.0.0.1 connection, one way and
 * both ways at once (a sender and a receiver thread in each process). An allreduce over
 * TCP sends and receives at the same time, so the two-way figure per direction is its
 * ceiling; iperf3 measures the one-way figure only. Prints GB/s per direction.
 *   tcp_probe [MiB per direction]   (default 512) */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe_clock.h"

#define CHUNK (4u << 20)

static size_t total;

static void *sender(void *p) {
  int fd = *(int *)p;
  char *b = malloc(CHUNK);
  if (!b) return NULL;
  memset(b, 1, CHUNK);
  for (size_t left = total; left;) {
    ssize_t w = send(fd, b, left < CHUNK ? left : CHUNK, MSG_NOSIGNAL);
    if (w <= 0) break;
    left -= (size_t)w;
  }
  free(b);
  return NULL;
}

static void *receiver(void *p) {
  int fd = *(int *)p;
  char *b = malloc(CHUNK);
  if (!b) return NULL;
  for (size_t left = total; left;) {
    ssize_t r = recv(fd, b, left < CHUNK ? left : CHUNK, 0);
    if (r <= 0) break;
    left -= (size_t)r;
  }
  free(b);
  return NULL;
}

/* One connection between a parent and a child; both directions when two_way. */
static double run(int two_way) {
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) || getsockname(ls, (struct sockaddr *)&a, &len) ||
      listen(ls, 1)) {
    perror("tcp_probe: listen");
    exit(1);
  }
  pid_t child = fork();
  int fd;
  if (child == 0) {
    close(ls);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) _exit(1);
  } else {
    fd = accept(ls, NULL, NULL);
    close(ls);
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  double t0 = probe_now();
  if (two_way) {
    pthread_t ts, tr;
    pthread_create(&ts, NULL, sender, &fd);
    pthread_create(&tr, NULL, receiver, &fd);
    pthread_join(ts, NULL);
    pthread_join(tr, NULL);
  } else if (child) {
    sender(&fd);
  } else {
    receiver(&fd);
  }
  close(fd);
  if (child == 0) _exit(0);
  waitpid(child, NULL, 0);
  return (double)total / (probe_now() - t0) / 1e9;
}

int main(int argc, char **argv) {
  total = (size_t)(argc > 1 ? atoi(argv[1]) : 512) << 20;
  double best1 = 0, best2 = 0;
  for (int rep = 0; rep < 3; rep++) {
    double r1 = run(0), r2 = run(1);
    if (r1 > best1) best1 = r1;
    if (r2 > best2) best2 = r2;
  }
  printf("tcp one way: %.2f GB/s\n", best1);
  printf("tcp both ways: %.2f GB/s per direction\n", best2);
  return 0;
}
