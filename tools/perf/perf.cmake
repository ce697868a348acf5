# The perf tests (docs/perf.md): one binary per collective over a shared frame, like
# nccl-tests. The frame is an object library so each binary links only what it needs
# and the frame compiles once.
set(COLLIE_PERF_DIR ${CMAKE_CURRENT_LIST_DIR})
add_library(collie_perf_frame OBJECT
  ${COLLIE_PERF_DIR}/perf_args.c
  ${COLLIE_PERF_DIR}/perf_launch.c
  ${COLLIE_PERF_DIR}/perf_data.c
  ${COLLIE_PERF_DIR}/perf_bench.c
  ${COLLIE_PERF_DIR}/perf_output.c
  ${COLLIE_PERF_DIR}/perf_json.c
  ${COLLIE_PERF_DIR}/perf_main.c)
target_link_libraries(collie_perf_frame PUBLIC collie_static PRIVATE collie_internal) # hostid.h

set(COLLIE_PERF_BINARIES
  all_reduce_perf all_gather_perf all_gatherv_perf broadcast_perf reduce_perf
  reduce_scatter_perf reduce_scatterv_perf alltoall_perf alltoallv_perf
  scatter_perf gather_perf sendrecv_perf)
foreach(b ${COLLIE_PERF_BINARIES})
  add_executable(${b} ${COLLIE_PERF_DIR}/${b}.c)
  target_link_libraries(${b} PRIVATE collie_perf_frame collie_static m)
endforeach()
install(TARGETS ${COLLIE_PERF_BINARIES})
