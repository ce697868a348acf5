/* collie-run --tag-output: each rank writes into pipes, and the parent copies whole
 * lines to its own stdout/stderr with a "[rank] " prefix. Lines are kept whole so that
 * the output of two ranks never interleaves within a line. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collie-run.h"

/* A line longer than this is split into lines of this size, each with the prefix. */
#define CR_LINE_MAX 65536

int cr_stream_open(struct cr_stream *s, int dest, int *write_end) {
  int p[2];
  /* Close-on-exec on both ends: the child dup2()s its end onto 1 or 2 (which clears
   * the flag on the copy), and no other rank inherits either end. */
  if (pipe2(p, O_CLOEXEC) < 0) {
    fprintf(stderr, "collie-run: cannot create an output pipe: %s.\n", strerror(errno));
    return -1;
  }
  s->buf = malloc(CR_LINE_MAX);
  if (!s->buf) {
    fprintf(stderr, "collie-run: out of memory.\n");
    close(p[0]);
    close(p[1]);
    return -1;
  }
  /* Non-blocking, so the final drain after the ranks exit cannot hang on a pipe that a
   * stray grandchild still holds open. */
  fcntl(p[0], F_SETFL, O_NONBLOCK);
  s->fd = p[0];
  s->dest = dest;
  s->len = 0;
  *write_end = p[1];
  return 0;
}

/* Writes everything, waiting if our own stdout is a slow or non-blocking reader. Output
 * nobody reads any more (EPIPE) is dropped: the ranks must still be drained. */
static void write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w > 0) {
      p += w;
      n -= (size_t)w;
    } else if (w < 0 && errno == EAGAIN) {
      struct pollfd pfd = {.fd = fd, .events = POLLOUT};
      poll(&pfd, 1, -1);
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else {
      return;
    }
  }
}

/* Writes data[0..n) with the prefix at each line start, ending the last line if the
 * data does not, all in one write(): lines never mix with another rank's output, even
 * when stdout and stderr go to the same terminal. */
static void emit(const struct cr_stream *s, int rank, const char *data, size_t n) {
  char prefix[16];
  int plen = snprintf(prefix, sizeof prefix, "[%d] ", rank);
  size_t lines = 1;
  for (size_t i = 0; i < n; i++) lines += data[i] == '\n';
  char *out = malloc(n + 1 + lines * (size_t)plen);
  if (!out) {
    write_all(s->dest, data, n); /* untagged beats lost */
    return;
  }
  size_t o = 0;
  bool line_start = true;
  for (size_t i = 0; i < n; i++) {
    if (line_start) {
      memcpy(out + o, prefix, (size_t)plen);
      o += (size_t)plen;
    }
    out[o++] = data[i];
    line_start = data[i] == '\n';
  }
  if (!line_start) out[o++] = '\n';
  write_all(s->dest, out, o);
  free(out);
}

/* One read: 1 if data came, 0 if the pipe is empty for now, -1 once it is closed. */
static int pump_once(struct cr_stream *s, int rank) {
  if (s->fd < 0) return -1;
  ssize_t n = read(s->fd, s->buf + s->len, CR_LINE_MAX - s->len);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
  if (n <= 0) {
    cr_stream_close(s, rank);
    return -1;
  }
  s->len += (size_t)n;
  const char *nl = memrchr(s->buf, '\n', s->len);
  size_t whole = nl ? (size_t)(nl - s->buf) + 1 : 0;
  /* A full buffer without a newline: break the line there. */
  if (whole == 0 && s->len == CR_LINE_MAX) whole = s->len;
  if (whole > 0) {
    emit(s, rank, s->buf, whole);
    memmove(s->buf, s->buf + whole, s->len - whole);
    s->len -= whole;
  }
  return 1;
}

bool cr_stream_pump(struct cr_stream *s, int rank) { return pump_once(s, rank) >= 0; }

/* After the rank has exited: whatever it wrote is already in the pipe, so read until
 * the pipe is empty, but do not wait for a writer that outlived the rank. */
void cr_stream_drain(struct cr_stream *s, int rank) {
  while (pump_once(s, rank) > 0) {
  }
  cr_stream_close(s, rank);
}

/* Flushes a last line that had no newline, ending it so the next line starts clean. */
void cr_stream_close(struct cr_stream *s, int rank) {
  if (!s->buf) return;
  if (s->len > 0) emit(s, rank, s->buf, s->len);
  s->len = 0;
  if (s->fd >= 0) close(s->fd);
  s->fd = -1;
  free(s->buf);
  s->buf = NULL;
}
