/* Copies between buffers whose page offsets differ by a few bytes. memcpy and the kernel's
 * process_vm_readv/writev slow down 4 to 15 times when a destination lies 1 to 63 bytes
 * past its source modulo 4 KiB (core/copy.h), so collie copies such pairs another way:
 * a vector loop in user space, and a bounce buffer at the right offset around the kernel's
 * copy (transport/shm_cma.c). This program makes those pairs on purpose and checks every
 * result: each rank places its send buffer at page offset 0 and its receive buffer at
 * page offset d, for d in 0, 1, 8, 15, 16, 40, 63, 64, 4033 and 4095 (the distances between
 * any rank's send and another's receive are then d), and runs a broadcast of 1 MiB + 3
 * bytes from every root (from 512 KiB the root also writes part of each receiver's buffer
 * by process_vm_writev where CMA serves), an all-gather, an all-to-all and an all-reduce of
 * 1 MiB + 3 elements of int8 (odd block sizes move every later block's offset too).
 *   page_offset_check      (launched by collie-run; COLLIE_SHM_CMA and COLLIE_ALGO pick the
 *                           paths) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collie.h"

enum { COUNT = (1 << 20) + 3, PAGE = 4096 };
static const size_t dists[] = {0, 1, 8, 15, 16, 40, 63, 64, 4033, 4095};

static int8_t value(size_t d, int rank, size_t j) { return (int8_t)((j * 7 + (size_t)rank * 31 + d) % 13); }

static int fail(int me, size_t d, const char *what, size_t j, int got, int want) {
  fprintf(stderr, "page_offset_check: rank %d: receive buffer at page offset %zu, %s: byte %zu is %d, expected %d\n",
          me, d, what, j, got, want);
  return 1;
}

static int check(collie_result_t r, int me, size_t d, const char *what) {
  if (r == COLLIE_SUCCESS) return 0;
  fprintf(stderr, "page_offset_check: rank %d: receive buffer at page offset %zu, %s failed: %s\n", me, d, what,
          collie_get_last_error(NULL));
  return 1;
}

/* One distance: every collective once, checked. */
static int run(collie_comm_t *comm, int me, int n, size_t d, int8_t *send, int8_t *recv) {
  const size_t total = (size_t)n * COUNT;
  for (int root = 0; root < n; root++) {
    for (size_t j = 0; j < COUNT; j++) send[j] = value(d, root, j);
    memset(recv, -1, COUNT);
    if (check(collie_broadcast(send, recv, COUNT, COLLIE_INT8, root, comm), me, d, "broadcast")) return 1;
    for (size_t j = 0; j < COUNT; j++)
      if (recv[j] != value(d, root, j)) return fail(me, d, "broadcast", j, recv[j], value(d, root, j));
  }
  for (size_t j = 0; j < COUNT; j++) send[j] = value(d, me, j);
  memset(recv, -1, total);
  if (check(collie_allgather(send, recv, COUNT, COLLIE_INT8, comm), me, d, "allgather")) return 1;
  for (int r = 0; r < n; r++)
    for (size_t j = 0; j < COUNT; j++)
      if (recv[(size_t)r * COUNT + j] != value(d, r, j))
        return fail(me, d, "allgather", (size_t)r * COUNT + j, recv[(size_t)r * COUNT + j], value(d, r, j));
  /* all-to-all: block b of rank r's send holds value(d, r * n + b, .) */
  const size_t block = COUNT / (size_t)n;
  for (int b = 0; b < n; b++)
    for (size_t j = 0; j < block; j++) send[(size_t)b * block + j] = value(d, me * n + b, j);
  memset(recv, -1, total);
  if (check(collie_alltoall(send, recv, block, COLLIE_INT8, comm), me, d, "alltoall")) return 1;
  for (int r = 0; r < n; r++)
    for (size_t j = 0; j < block; j++)
      if (recv[(size_t)r * block + j] != value(d, r * n + me, j))
        return fail(me, d, "alltoall", (size_t)r * block + j, recv[(size_t)r * block + j], value(d, r * n + me, j));
  /* all-reduce: small values, so the int8 sum cannot wrap */
  for (size_t j = 0; j < COUNT; j++) send[j] = (int8_t)(value(d, me, j) % 4);
  memset(recv, -1, COUNT);
  if (check(collie_allreduce(send, recv, COUNT, COLLIE_INT8, COLLIE_SUM, comm), me, d, "allreduce")) return 1;
  for (size_t j = 0; j < COUNT; j++) {
    int want = 0;
    for (int r = 0; r < n; r++) want += value(d, r, j) % 4;
    if (recv[j] != want) return fail(me, d, "allreduce", j, recv[j], want);
  }
  return 0;
}

int main(void) {
  collie_comm_t *comm;
  if (collie_comm_init_env(&comm) != COLLIE_SUCCESS) {
    fprintf(stderr, "page_offset_check: %s\n", collie_get_last_error(NULL));
    return 1;
  }
  int me, n;
  collie_comm_rank(comm, &me);
  collie_comm_size(comm, &n);
  void *send_mem = NULL, *recv_mem = NULL;
  int bad = posix_memalign(&send_mem, PAGE, COUNT) || posix_memalign(&recv_mem, PAGE, (size_t)n * COUNT + PAGE);
  for (size_t i = 0; !bad && i < sizeof(dists) / sizeof(dists[0]); i++)
    bad = run(comm, me, n, dists[i], send_mem, (int8_t *)recv_mem + dists[i]);
  collie_result_t r = collie_comm_destroy(comm);
  free(send_mem);
  free(recv_mem);
  if (bad || r != COLLIE_SUCCESS) return 1;
  printf("page_offset_check: rank %d: %zu page offsets OK\n", me, sizeof(dists) / sizeof(dists[0]));
  return 0;
}
