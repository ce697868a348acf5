# The perf tests (tools/perf, docs/perf.md): every binary runs small sizes with checks on,
# and check_output.py asserts the layout, the #wrong columns and the exit status. Sizes
# and iteration counts are kept small: the whole group takes well under a minute on 2
# cores, most of it process start-up.
find_program(COLLIE_PERF_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT COLLIE_PERF_PYTHON)
  find_program(COLLIE_PERF_PYTHON python3)
endif()
if(NOT COLLIE_PERF_PYTHON)
  message(FATAL_ERROR "python3 is needed by the perf tests: run scripts/install-deps.sh")
endif()

set(PERF_CHECK ${COLLIE_PERF_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/check_output.py)
set(PERF_ENV "COLLIE_SOCKET_IFNAME=lo;COLLIE_CONNECT_TIMEOUT=30;COLLIE_EXEC_TIMEOUT=60")
set(PERF_TESTS "")
macro(perf_test name)
  add_test(NAME perf_${name} COMMAND ${ARGN})
  list(APPEND PERF_TESTS perf_${name})
endmacro()

# Each binary on 2 local ranks: 13 columns, #wrong 0, footer OK, exit 0.
foreach(b all_reduce all_gather all_gatherv broadcast reduce reduce_scatter reduce_scatterv
          alltoall alltoallv scatter gather sendrecv)
  perf_test(${b} ${PERF_CHECK} -- $<TARGET_FILE:${b}_perf> -p 2 -b 8 -e 1M -f 32 -c 1)
endforeach()

# All-to-all with COLLIE_SHM_CMA=1, which reads ordinary buffers with process_vm_readv
# from 64 KiB, through the shared-memory collective and through messages: 10 checked
# operations a size. (Unset, the choice is measured: perf_cma_choice.)
perf_test(alltoall_cma_shm ${PERF_CHECK} -- $<TARGET_FILE:alltoall_perf> -p 2 -b 256K -e 4M -f 4 -c 10 -n 1 -w 0
          -A alltoall:shm)
perf_test(alltoall_cma_pairwise ${PERF_CHECK} -- $<TARGET_FILE:alltoall_perf> -p 2 -b 256K -e 4M -f 4 -c 10 -n 1
          -w 0 -A alltoall:pairwise)

# Broadcast with COLLIE_SHM_CMA=1 from 512 KiB: the root writes the first half of the
# receiver's buffer (process_vm_writev, or memcpy into collie_mem_alloc buffers) while the
# receiver reads the rest; both roots, in and out of place, sizes that are not multiples
# of 64 bytes, 5 checked operations a size.
perf_test(broadcast_split_cma ${PERF_CHECK} --rows 16 -- $<TARGET_FILE:broadcast_perf> -p 2 -b 524289 -e 2200000 -i 550001
          -d int8,float64 -r all -c 5 -n 1 -w 0)
perf_test(broadcast_split_register ${PERF_CHECK} --rows 4 -- $<TARGET_FILE:broadcast_perf> -p 2 -b 512K -e 4M -f 8 -r all
          -R 1 -c 5 -n 1 -w 0)
foreach(t alltoall_cma_shm alltoall_cma_pairwise broadcast_split_cma)
  set_tests_properties(perf_${t} PROPERTIES ENVIRONMENT "${PERF_ENV};COLLIE_SHM_CMA=1")
endforeach()
# COLLIE_SHM_CMA unset: the exchange timed at creation, its one log line, results either way.
perf_test(cma_choice bash ${CMAKE_CURRENT_LIST_DIR}/cma_choice_test.sh ${CMAKE_BINARY_DIR}/bin)

# Under collie-run with 3 ranks, all-reduce's busbw is algbw * 2(n-1)/n = 4/3: in the
# printed table (to its rounding) and exactly in the JSON.
perf_test(all_reduce_collie_run_3 ${PERF_CHECK} --ratio 1.3333333333 --json ${CMAKE_CURRENT_BINARY_DIR}/perf_ar3.json --
          $<TARGET_FILE:collie-run> -n 3 --timeout 90 $<TARGET_FILE:all_reduce_perf> -b 8 -e 1M -f 32
          -J ${CMAKE_CURRENT_BINARY_DIR}/perf_ar3.json)
# Every datatype with every op: 10 x 5 = 50 rows for one size.
perf_test(all_reduce_all_types_ops ${PERF_CHECK} --rows 50 --
          $<TARGET_FILE:all_reduce_perf> -p 2 -b 1K -e 1K -d all -o all -n 2 -w 1)
perf_test(reduce_scatter_all_types_ops ${PERF_CHECK} --rows 50 --
          $<TARGET_FILE:reduce_scatter_perf> -p 3 -b 1K -e 1K -d all -o all -n 2 -w 1)
# Rooted collectives with every root, on 3 ranks: 3 roots x 2 sizes.
perf_test(broadcast_all_roots ${PERF_CHECK} --rows 6 --
          $<TARGET_FILE:broadcast_perf> -p 3 -b 64 -e 64K -f 1024 -r all -n 5)
perf_test(gather_all_roots ${PERF_CHECK} --rows 6 --
          $<TARGET_FILE:gather_perf> -p 3 -b 64 -e 64K -f 1024 -r all -n 5)
# Nonblocking calls (-z 1) and aggregation (-m), with and without -z.
perf_test(alltoallv_nonblocking_agg ${PERF_CHECK} --
          $<TARGET_FILE:alltoallv_perf> -p 3 -b 8 -e 256K -f 64 -z 1 -m 3 -n 5)
perf_test(sendrecv_nonblocking ${PERF_CHECK} -- $<TARGET_FILE:sendrecv_perf> -p 3 -b 8 -e 256K -f 64 -z 1 -n 5)
perf_test(all_reduce_blocking_agg ${PERF_CHECK} -- $<TARGET_FILE:all_reduce_perf> -p 2 -b 8 -e 256K -f 64 -m 4 -n 5)
# Buffers from collie_mem_alloc (-R 1): single-copy messages (2 ranks) and the shared-memory
# collectives' single-copy path (3 ranks), results checked.
perf_test(sendrecv_register ${PERF_CHECK} -- $<TARGET_FILE:sendrecv_perf> -p 2 -b 64K -e 4M -f 8 -R 1 -n 5)
perf_test(broadcast_register ${PERF_CHECK} -- $<TARGET_FILE:broadcast_perf> -p 2 -b 8 -e 4M -f 32 -R 1 -n 5)
perf_test(all_reduce_register_3 ${PERF_CHECK} -- $<TARGET_FILE:all_reduce_perf> -p 3 -b 8 -e 4M -f 32 -R 1 -n 5)
# Layouts and outputs.
perf_test(hccl_format ${PERF_CHECK} --format hccl -- $<TARGET_FILE:all_reduce_perf> -p 2 -b 8 -e 1M -f 32 --format hccl)
perf_test(hccl_format_no_check ${PERF_CHECK} --format hccl --no-check --
          $<TARGET_FILE:all_gather_perf> -p 2 -b 8 -e 64K -f 32 --format hccl -c 0)
perf_test(csv_format ${PERF_CHECK} --format csv -- $<TARGET_FILE:reduce_perf> -p 2 -b 8 -e 64K -f 32 --format csv)
perf_test(json ${PERF_CHECK} --json ${CMAKE_CURRENT_BINARY_DIR}/perf_json.json --
          $<TARGET_FILE:all_gatherv_perf> -p 2 -b 8 -e 64K -f 32 -J ${CMAKE_CURRENT_BINARY_DIR}/perf_json.json)
perf_test(no_check ${PERF_CHECK} --no-check -- $<TARGET_FILE:scatter_perf> -p 2 -b 8 -e 64K -f 32 -c 0)
# One rank, no launcher and no -p.
perf_test(standalone_one_rank ${PERF_CHECK} -- $<TARGET_FILE:all_reduce_perf> -b 8 -e 64K -f 32)
# Forced algorithm and a timeout setting reach the library.
perf_test(algo_ring ${PERF_CHECK} -- $<TARGET_FILE:all_reduce_perf> -p 3 -b 8 -e 256K -f 64 -A ring -T 60)
# Errors: a bad flag is a usage error (2); a planted wrong element is counted and fails.
perf_test(bad_flag ${PERF_CHECK} --expect-usage -- $<TARGET_FILE:all_reduce_perf> -p 2 --no-such-flag)
perf_test(bad_value ${PERF_CHECK} --expect-usage -- $<TARGET_FILE:broadcast_perf> -d float128)
perf_test(planted_error ${PERF_CHECK} --expect-wrong -- $<TARGET_FILE:all_reduce_perf> -p 2 -b 8 -e 1K -f 32)
set_tests_properties(perf_planted_error PROPERTIES ENVIRONMENT "${PERF_ENV};COLLIE_PERF_PLANT_ERROR=1")

# Two host identities on this machine (COLLIE_HOST_ID, the library's own override): the
# header counts the hosts the library sees, and the transport across them (it counted host
# names: "hosts 1 ... transport shm" while half the ranks talked over TCP).
perf_test(header_hosts bash -c "out=$($<TARGET_FILE:collie-run> -n 4 sh -c 'COLLIE_HOST_ID=h$((COLLIE_RANK/2)) \
exec $<TARGET_FILE:all_reduce_perf> -b 1K -e 1K') && echo \"$out\" && echo \"$out\" | grep -q 'nranks 4 hosts 2 .*transport shm+tcp'")

# The scripts: perf-report on real results, quick-verify on 2 ranks, pre-test-check
# through collie-run (this host only).
perf_test(report bash ${CMAKE_CURRENT_LIST_DIR}/report_test.sh ${CMAKE_BINARY_DIR}/bin
          ${PROJECT_SOURCE_DIR}/scripts/perf-report ${COLLIE_PERF_PYTHON})
perf_test(quick_verify ${PROJECT_SOURCE_DIR}/scripts/quick-verify.sh 2 ${CMAKE_BINARY_DIR})
perf_test(pre_test_check ${PROJECT_SOURCE_DIR}/scripts/pre-test-check --build ${CMAKE_BINARY_DIR}
          $<TARGET_FILE:collie-run> -n 2)

# Other launchers, when installed (the foundation's tests require them anyway).
find_program(COLLIE_PERF_MPICH mpiexec.mpich)
if(COLLIE_PERF_MPICH)
  perf_test(mpich_2 ${PERF_CHECK} -- ${COLLIE_PERF_MPICH} -n 2 $<TARGET_FILE:alltoall_perf> -b 8 -e 256K -f 64)
endif()
find_program(COLLIE_PERF_OMPI mpirun.openmpi)
if(COLLIE_PERF_OMPI)
  perf_test(openmpi_3 ${PERF_CHECK} -- ${COLLIE_PERF_OMPI} --oversubscribe -n 3 $<TARGET_FILE:reduce_scatterv_perf>
            -b 8 -e 256K -f 64)
endif()

foreach(t ${PERF_TESTS})
  get_test_property(${t} ENVIRONMENT env)
  if(NOT env)
    set_tests_properties(${t} PROPERTIES ENVIRONMENT
      "${PERF_ENV};OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
  endif()
  set_tests_properties(${t} PROPERTIES TIMEOUT 120 LABELS perf)
endforeach()
