/* Every algorithm's builder, one line each; src/algo/registry.c maps names to them. */
#ifndef COLLIE_ALGO_IMPL_H
#define COLLIE_ALGO_IMPL_H

#include "algo/algo.h"

#define COLLIE_ALGO_DECL(fn) collie_result_t fn(const collie_coll_args_t *args, collie_sched_t *s)

/* ring.c */
COLLIE_ALGO_DECL(collie_ring_allreduce);
COLLIE_ALGO_DECL(collie_ring_allgather);      /* allgather and allgatherv */
COLLIE_ALGO_DECL(collie_ring_reduce_scatter); /* reduce_scatter and reduce_scatterv */
/* recursive.c: recursive doubling, halving-doubling (Rabenseifner) */
COLLIE_ALGO_DECL(collie_rd_allreduce);
COLLIE_ALGO_DECL(collie_hd_allreduce);
COLLIE_ALGO_DECL(collie_rd_allgather);
COLLIE_ALGO_DECL(collie_hd_reduce_scatter);
/* hier.c: inside each host, then between hosts */
COLLIE_ALGO_DECL(collie_hier_allreduce);
COLLIE_ALGO_DECL(collie_hier_broadcast);
/* bruck.c */
COLLIE_ALGO_DECL(collie_bruck_allgather);
COLLIE_ALGO_DECL(collie_bruck_alltoall);
/* bruck_v.c */
COLLIE_ALGO_DECL(collie_bruck_alltoallv);
/* direct.c: every rank talks to every other directly */
COLLIE_ALGO_DECL(collie_mesh_allreduce);
COLLIE_ALGO_DECL(collie_mesh_allgather);
COLLIE_ALGO_DECL(collie_mesh_reduce_scatter);
COLLIE_ALGO_DECL(collie_mesh_alltoall);
COLLIE_ALGO_DECL(collie_pairwise_alltoall);
COLLIE_ALGO_DECL(collie_linear_scatter);
COLLIE_ALGO_DECL(collie_linear_gather);
/* tree.c: binomial trees, chains, double binary tree */
COLLIE_ALGO_DECL(collie_tree_allreduce);
COLLIE_ALGO_DECL(collie_binomial_broadcast);
COLLIE_ALGO_DECL(collie_chain_broadcast);
COLLIE_ALGO_DECL(collie_binomial_reduce);
COLLIE_ALGO_DECL(collie_chain_reduce);
COLLIE_ALGO_DECL(collie_binomial_scatter);
COLLIE_ALGO_DECL(collie_binomial_gather);
/* composite.c: algorithms made of two others */
COLLIE_ALGO_DECL(collie_scatter_allgather_broadcast);
COLLIE_ALGO_DECL(collie_rs_gather_reduce);
/* barrier.c */
COLLIE_ALGO_DECL(collie_dissemination_barrier);

#endif
