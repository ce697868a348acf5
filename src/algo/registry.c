/* Names of every (collective, algorithm) pair, as COLLIE_ALGO spells them. The first entry
 * of a collective is its fallback when nothing else is chosen. */
#include <string.h>

#include "algo/algo_impl.h"

const collie_algo_t collie_algos[] = {
    {COLLIE_COLL_ALLREDUCE, "ring", collie_ring_allreduce},
    {COLLIE_COLL_ALLREDUCE, "tree", collie_tree_allreduce},
    {COLLIE_COLL_ALLREDUCE, "mesh", collie_mesh_allreduce},
    {COLLIE_COLL_ALLREDUCE, "rd", collie_rd_allreduce},
    {COLLIE_COLL_ALLREDUCE, "hd", collie_hd_allreduce},
    {COLLIE_COLL_ALLREDUCE, "hier", collie_hier_allreduce},
    {COLLIE_COLL_ALLGATHER, "ring", collie_ring_allgather},
    {COLLIE_COLL_ALLGATHER, "rd", collie_rd_allgather},
    {COLLIE_COLL_ALLGATHER, "bruck", collie_bruck_allgather},
    {COLLIE_COLL_ALLGATHER, "mesh", collie_mesh_allgather},
    {COLLIE_COLL_ALLGATHERV, "ring", collie_ring_allgather},
    {COLLIE_COLL_ALLGATHERV, "rd", collie_rd_allgather},
    {COLLIE_COLL_ALLGATHERV, "bruck", collie_bruck_allgather},
    {COLLIE_COLL_ALLGATHERV, "mesh", collie_mesh_allgather},
    {COLLIE_COLL_REDUCE_SCATTER, "ring", collie_ring_reduce_scatter},
    {COLLIE_COLL_REDUCE_SCATTER, "hd", collie_hd_reduce_scatter},
    {COLLIE_COLL_REDUCE_SCATTER, "mesh", collie_mesh_reduce_scatter},
    {COLLIE_COLL_REDUCE_SCATTERV, "ring", collie_ring_reduce_scatter},
    {COLLIE_COLL_REDUCE_SCATTERV, "hd", collie_hd_reduce_scatter},
    {COLLIE_COLL_REDUCE_SCATTERV, "mesh", collie_mesh_reduce_scatter},
    {COLLIE_COLL_BROADCAST, "binomial", collie_binomial_broadcast},
    {COLLIE_COLL_BROADCAST, "chain", collie_chain_broadcast},
    {COLLIE_COLL_BROADCAST, "scatter_allgather", collie_scatter_allgather_broadcast},
    {COLLIE_COLL_BROADCAST, "hier", collie_hier_broadcast},
    {COLLIE_COLL_REDUCE, "binomial", collie_binomial_reduce},
    {COLLIE_COLL_REDUCE, "chain", collie_chain_reduce},
    {COLLIE_COLL_REDUCE, "rs_gather", collie_rs_gather_reduce},
    {COLLIE_COLL_ALLTOALL, "pairwise", collie_pairwise_alltoall},
    {COLLIE_COLL_ALLTOALL, "bruck", collie_bruck_alltoall},
    {COLLIE_COLL_ALLTOALL, "mesh", collie_mesh_alltoall},
    {COLLIE_COLL_ALLTOALLV, "pairwise", collie_pairwise_alltoall},
    {COLLIE_COLL_ALLTOALLV, "bruck", collie_bruck_alltoallv},
    {COLLIE_COLL_ALLTOALLV, "mesh", collie_mesh_alltoall},
    {COLLIE_COLL_SCATTER, "binomial", collie_binomial_scatter},
    {COLLIE_COLL_SCATTER, "linear", collie_linear_scatter},
    {COLLIE_COLL_GATHER, "binomial", collie_binomial_gather},
    {COLLIE_COLL_GATHER, "linear", collie_linear_gather},
    {COLLIE_COLL_BARRIER, "dissemination", collie_dissemination_barrier},
    /* Shared memory, every rank on one host (algo/shm_native.c): no schedule to build. */
    {COLLIE_COLL_ALLREDUCE, "shm", NULL},
    {COLLIE_COLL_REDUCE, "shm", NULL},
    {COLLIE_COLL_BROADCAST, "shm", NULL},
    {COLLIE_COLL_ALLGATHER, "shm", NULL},
    {COLLIE_COLL_REDUCE_SCATTER, "shm", NULL},
    {COLLIE_COLL_ALLTOALL, "shm", NULL},
    {COLLIE_COLL_BARRIER, "shm", NULL},
    {0, NULL, NULL},
};

const collie_algo_t *collie_algo_find(collie_coll_t coll, const char *name) {
  for (const collie_algo_t *a = collie_algos; a->name; a++)
    if (a->coll == coll && (!name || strcmp(a->name, name) == 0)) return a;
  return NULL;
}

const char *collie_coll_name(collie_coll_t c) {
  static const char *names[COLLIE_NUM_COLLS] = {
      "send", "recv", "allreduce", "broadcast", "reduce", "allgather", "allgatherv", "reduce_scatter",
      "reduce_scatterv", "alltoall", "alltoallv", "scatter", "gather", "barrier"};
  return (unsigned)c < COLLIE_NUM_COLLS ? names[c] : "unknown";
}
