# The multi-process correctness matrix of every collective (coll_check.c): launchers,
# transports, rank counts, every forced algorithm, nonblocking, mismatch detection.
# `ctest -L coll` runs them all.
add_executable(coll_check ${CMAKE_CURRENT_LIST_DIR}/coll_check.c ${CMAKE_CURRENT_LIST_DIR}/coll_ref.c
                          ${CMAKE_CURRENT_LIST_DIR}/../common/signal_storm.c)
target_include_directories(coll_check PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../common)
target_link_libraries(coll_check PRIVATE collie_static m Threads::Threads)
# The reference computation is most of the checker's own work: optimise it even in Debug
# (sanitizer) builds, where it would otherwise dominate the big-count tests.
target_compile_options(coll_check PRIVATE -O2)

set(COLL_CHECK $<TARGET_FILE:coll_check>)
set(COLL_RUN $<TARGET_FILE:collie-run>)
set(COLL_ENV "COLLIE_SOCKET_IFNAME=lo;COLLIE_EXEC_TIMEOUT=60;COLLIE_CONNECT_TIMEOUT=30")

# add_coll_test(NAME TIMEOUT ENV COMMAND...): ENV is appended to COLL_ENV ("" for none).
function(add_coll_test name timeout extra_env)
  add_test(NAME ${name} COMMAND ${ARGN})
  set(env "${COLL_ENV}")
  if(extra_env)
    set(env "${env};${extra_env}")
  endif()
  set_tests_properties(${name} PROPERTIES TIMEOUT ${timeout} LABELS coll ENVIRONMENT "${env}")
endfunction()

# Shared memory (the default between local ranks): every datatype, op, collective.
foreach(n 1 2 3 4 5 8)
  add_coll_test(coll_shm_${n} 300 "" ${COLL_RUN} -n ${n} --timeout 280 ${COLL_CHECK})
endforeach()
# The large count (65536+13: several pipelined chunks and shared-memory slots), a few datatypes;
# local copies write with streaming stores (COLLIE_STREAM_BYTES=1).
add_coll_test(coll_shm_big_4 300 "COLLIE_STREAM_BYTES=1" ${COLL_RUN} -n 4 --timeout 280 ${COLL_CHECK} --dtypes quick --big)
# Tiny chunks and shared-memory slots: every message is cut into many pieces.
add_coll_test(coll_shm_small_slots_4 300 "COLLIE_CHUNK_SIZE=1024;COLLIE_SHM_SLOT_SIZE=4K;COLLIE_SHM_NSLOTS=2"
              ${COLL_RUN} -n 4 --timeout 280 ${COLL_CHECK})

# COLLIE_PROTO forced: ll carries every call of up to 488 bytes per rank in the inline lines, a
# broadcast up to 4136 (auto too where every rank has a CPU, but a broadcast only up to 1064;
# where the ranks outnumber the CPUs it stops at 232 for all-gather, all-to-all and reduce-scatter), simple stages
# every call, even the smallest (auto never does); 4 ranks on 2 cores also take the
# crowded host's paths.
foreach(n 2 4)
  add_coll_test(coll_proto_ll_${n} 300 "COLLIE_PROTO=ll" ${COLL_RUN} -n ${n} --timeout 280 ${COLL_CHECK} --dtypes quick)
endforeach()
foreach(n 3 4)
  add_coll_test(coll_proto_simple_${n} 300 "COLLIE_PROTO=simple" ${COLL_RUN} -n ${n} --timeout 280 ${COLL_CHECK}
                --dtypes quick)
endforeach()

# Random sequences of collectives (coll_check --fuzz): sizes on a log scale up to 4 MiB a
# buffer, so that consecutive calls cross every protocol boundary, on three communicators
# (the world, a copy, its halves), point to point among them, up to 8 in flight, each rank
# waiting in its own order; blocking calls, alone or in groups, check that what their
# communicator issued before them has completed. Over shared memory (streaming stores from the smallest size in one), as
# threads, over TCP, with the progress thread, and on two "hosts".
# Runs of repeated small all-reduces, all-gathers, reduce-scatters, all-to-alls, broadcasts
# and barriers among the rest: their repeats take the fast lane
# (src/coll/fast_lane.c) wherever nothing else is in flight on their communicator.
add_coll_test(coll_fuzz_repeat_4 300 "" ${COLL_RUN} -n 4 --timeout 280 ${COLL_CHECK} --fuzz 500 --fuzz-bytes 1M
              --fuzz-repeat)
add_coll_test(coll_fuzz_4 300 "" ${COLL_RUN} -n 4 --timeout 280 ${COLL_CHECK} --fuzz 1000 --fuzz-bytes 4M)
# Two ranks with a CPU each: the staged all-reduce, all-gather, reduce-scatter and
# all-to-all take the area's slots there (shm_native.c, layout), the staged reduce its two
# buffers, so consecutive calls switch between the layouts.
add_coll_test(coll_fuzz_2 300 "" ${COLL_RUN} -n 2 --timeout 280 ${COLL_CHECK} --fuzz 1000 --fuzz-bytes 4M --seed 4)
add_coll_test(coll_fuzz_stream_3 300 "COLLIE_STREAM_BYTES=1" ${COLL_RUN} -n 3 --timeout 280 ${COLL_CHECK}
              --fuzz 600 --fuzz-bytes 4M --seed 2)
add_coll_test(coll_fuzz_threads_4 300 "" ${COLL_CHECK} --threads 4 --fuzz 600 --fuzz-bytes 2M --seed 3)
add_coll_test(coll_fuzz_tcp_3 300 "COLLIE_TRANSPORT=tcp" ${COLL_RUN} -n 3 --timeout 280 ${COLL_CHECK} --fuzz 600
              --fuzz-bytes 2M --seed 4)
add_coll_test(coll_fuzz_progress_thread_5 300 "COLLIE_PROGRESS_THREAD=1" ${COLL_RUN} -n 5 --timeout 280 ${COLL_CHECK}
              --fuzz 600 --fuzz-bytes 2M --seed 5)
# ... with communicators split off (and destroyed) while operations are in flight.
add_coll_test(coll_fuzz_split_4 300 "" ${COLL_RUN} -n 4 --timeout 280 ${COLL_CHECK} --fuzz 600 --fuzz-bytes 1M
              --fuzz-split --seed 9)
add_coll_test(coll_fuzz_split_tcp_3 300 "COLLIE_TRANSPORT=tcp" ${COLL_RUN} -n 3 --timeout 280 ${COLL_CHECK} --fuzz 500
              --fuzz-bytes 1M --fuzz-split --seed 10)
# ... and three sequences at once in each process, a thread and a communicator each.
add_coll_test(coll_fuzz_multithread_3 300 "" ${COLL_RUN} -n 3 --timeout 280 ${COLL_CHECK} --fuzz 400 --fuzz-bytes 1M
              --fuzz-threads 3 --seed 7)
add_coll_test(coll_fuzz_hosts_5 300 "" ${COLL_RUN} -n 5 --timeout 280
              sh -c "COLLIE_HOST_ID=host$((COLLIE_RANK % 2)) exec \"$0\" \"$@\"" ${COLL_CHECK} --fuzz 600
              --fuzz-bytes 2M --seed 6)

# A rank killed in the middle of such a sequence (coll_check --fuzz-kill R:K): every other
# rank must stop with an error naming it (or the abort of a survivor that saw it first),
# within collie-run's grace of 20 s, and at least one must name it; collie-run then exits
# with the victim's status (137).
function(add_fuzz_kill_test name nranks victim_at extra_env)
  add_coll_test(${name} 120 "${extra_env}" bash ${CMAKE_CURRENT_LIST_DIR}/fuzz_kill_test.sh ${COLL_RUN} ${COLL_CHECK}
                ${nranks} ${victim_at} ${ARGN})
endfunction()
add_fuzz_kill_test(coll_fuzz_kill_4 4 2:150 "")
add_fuzz_kill_test(coll_fuzz_kill_root_3 3 0:60 "")
add_fuzz_kill_test(coll_fuzz_kill_tcp_3 3 1:100 "COLLIE_TRANSPORT=tcp")
add_fuzz_kill_test(coll_fuzz_kill_progress_thread_5 5 3:200 "COLLIE_PROGRESS_THREAD=1")
add_fuzz_kill_test(coll_fuzz_kill_multithread_4 4 1:100 "" --fuzz-threads 3)
# killed inside a run of repeated small all-reduces (operation 44 is one, of 32 calls),
# where the others are in the fast lane (src/coll/fast_lane.c)
add_fuzz_kill_test(coll_fuzz_kill_repeat_4 4 3:44 "" --fuzz-repeat)

# A rank frozen (SIGSTOP) in the middle of such a sequence (coll_check --fuzz-stop R:K):
# every other rank must stop within COLLIE_EXEC_TIMEOUT (6 s here) with an error naming it,
# at the end of a chain of waits if need be (core/own_waits.h), or the abort of a survivor
# that saw it first; then the frozen rank, resumed, must fail too, saying why.
function(add_fuzz_stop_test name nranks victim_at extra_env)
  set(env "COLLIE_EXEC_TIMEOUT=6")
  if(extra_env)
    list(APPEND env ${extra_env})
  endif()
  add_coll_test(${name} 120 "${env}" bash ${CMAKE_CURRENT_LIST_DIR}/fuzz_stop_test.sh
                ${COLL_RUN} ${COLL_CHECK} ${nranks} ${victim_at} ${ARGN})
endfunction()
add_fuzz_stop_test(coll_fuzz_stop_5 5 4:163 "COLLIE_PROTO=simple" --seed 28605)
add_fuzz_stop_test(coll_fuzz_stop_root_4 4 0:120 "")
add_fuzz_stop_test(coll_fuzz_stop_tcp_3 3 1:100 "COLLIE_TRANSPORT=tcp")
add_fuzz_stop_test(coll_fuzz_stop_tcp_root_4 4 0:11 "COLLIE_TRANSPORT=tcp" --seed 30526)
add_fuzz_stop_test(coll_fuzz_stop_progress_thread_4 4 2:150 "COLLIE_PROGRESS_THREAD=1")
add_fuzz_stop_test(coll_fuzz_stop_multithread_3 3 1:160 "" --fuzz-threads 2 --seed 22637)
# frozen inside a run of repeated barriers (operation 41 is one, of 14), and of small
# all-reduces (as coll_fuzz_kill_repeat_4)
add_fuzz_stop_test(coll_fuzz_stop_repeat_3 3 1:41 "" --fuzz-repeat)
add_fuzz_stop_test(coll_fuzz_stop_repeat_4 4 2:44 "" --fuzz-repeat)
# Rank 3 blocked in a collective on one communicator, whose wait also moves its operation
# on another (stuck on the frozen rank): asked what it waits for, it named the first (a
# cycle back to the asker) until the other's idle time was kept too (core/progress_others.c).
# The answers travel one rank a report interval (2 s): 10 s leave the chain room, where 6
# failed about one run in 6 (a rank asked just as its own wait began).
add_fuzz_stop_test(coll_fuzz_stop_split_6 6 5:198 "COLLIE_EXEC_TIMEOUT=10" --fuzz-split --seed 761315764)
# Over TCP: rank 2's all-to-all on one communicator, moved only while it waited on
# another, stalled for 6 s without asking anything; when that wait failed and the test
# waited on the all-to-all, it timed out at once naming only the peer (1 run in 3). Now
# such a communicator asks each report interval, as a wait on it would.
add_fuzz_stop_test(coll_fuzz_stop_split_tcp_5 5 4:29 "COLLIE_TRANSPORT=tcp" --fuzz-split --seed 303904592)
# Rank 0, which passes failure notices on, frozen, with the ranks on two fake hosts: rank 1
# times out on it and fails, and rank 3, on rank 1's host, waiting for rank 1, heard nothing
# and timed out naming only rank 1; local peers now read a failure in its segment
# (collie_shm_post_failure).
add_fuzz_stop_test(coll_fuzz_stop_hosts_root_4 4 0:67 "COLL_FAKE_HOSTS=2" --seed 192786954)
# The same, with a chain across the hosts: rank 3 waits for rank 1 (its host), which waits
# for rank 2 (the other host), which waits for frozen rank 0; every question went through
# rank 0, so rank 3 timed out saying only that rank 1 "did not answer". Now a stalled rank
# posts its answer in its segments too, and rank 0 acknowledges each stall report, so that
# the chain ends at "rank 0 ..., which passes on the question ..., has not acknowledged it".
add_fuzz_stop_test(coll_fuzz_stop_hosts_chain_4 4 0:126 "COLL_FAKE_HOSTS=2;COLLIE_PROGRESS_THREAD=1" --seed 3271428458)
# Two processes waiting for each other across communicators, the cause behind another wait
# of one of them: rank 2 waited in a reduce on the world for rank 4, which waited for rank
# 2 in an all-gather on another communicator, while its own reduce waited for frozen rank
# 0; the chain's answers went round the pair and no error named rank 0 (fault campaign,
# 2 runs of 2). An answer now prefers a wait whose chain does not come back to its process.
add_fuzz_stop_test(coll_fuzz_stop_cycle_5 5 0:168 "COLLIE_PROGRESS_THREAD=1" --seed 283961115)

# TCP between local ranks.
foreach(n 2 3 5)
  add_coll_test(coll_tcp_${n} 300 "COLLIE_TRANSPORT=tcp" ${COLL_RUN} -n ${n} --timeout 280 ${COLL_CHECK})
endforeach()
# Large messages striped over several sockets.
add_coll_test(coll_tcp_big_striped_3 300 "COLLIE_TRANSPORT=tcp;COLLIE_TCP_NSOCKS=3;COLLIE_TCP_STRIPE_MIN=4K"
              ${COLL_RUN} -n 3 --timeout 280 ${COLL_CHECK} --dtypes quick --big)
# Striped messages shorter than 64 bytes a socket, whose rounded part boundaries leave
# some sockets nothing (they once waited for those empty parts forever).
add_coll_test(coll_tcp_tiny_stripes_3 300 "COLLIE_TRANSPORT=tcp;COLLIE_TCP_NSOCKS=8;COLLIE_TCP_STRIPE_MIN=1;COLLIE_EXEC_TIMEOUT=20"
              ${COLL_RUN} -n 3 --timeout 280 ${COLL_CHECK} --dtypes quick)

# Ranks as threads of one process (collie_comm_init_all), over shared memory and TCP.
add_coll_test(coll_threads_4 300 "" ${COLL_CHECK} --threads 4)
add_coll_test(coll_threads_tcp_3 300 "COLLIE_TRANSPORT=tcp" ${COLL_CHECK} --threads 3 --dtypes quick)

# Open MPI and MPICH as launchers.
find_program(COLL_OMPI_RUN mpirun.openmpi)
if(COLL_OMPI_RUN)
  add_coll_test(coll_openmpi_3 300 "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
                ${COLL_OMPI_RUN} --oversubscribe -n 3 ${COLL_CHECK})
endif()
find_program(COLL_MPICH_RUN mpiexec.mpich)
if(COLL_MPICH_RUN)
  add_coll_test(coll_mpich_2 300 "" ${COLL_MPICH_RUN} -n 2 ${COLL_CHECK} --dtypes quick)
endif()

# Shared memory and TCP mixed in one communicator: two "hosts" (COLLIE_HOST_ID) with
# interleaved ranks, so that every algorithm crosses both transports.
add_coll_test(coll_mixed_hosts_5 300 "" ${COLL_RUN} -n 5 --timeout 280
              sh -c "COLLIE_HOST_ID=host$((COLLIE_RANK % 2)) exec \"$0\" \"$@\"" ${COLL_CHECK})
# The hierarchical allreduce and broadcast (inside each host, then between hosts): two
# hosts of three ranks, interleaved, with tiny chunks so that every phase pipelines; and
# two hosts of two with the automatic choice, which takes them for the larger vectors
# (--big).
add_coll_test(coll_hier_hosts_6 300 "COLLIE_ALGO=hier;COLLIE_CHUNK_SIZE=1024" ${COLL_RUN} -n 6 --timeout 280
              sh -c "COLLIE_HOST_ID=host$((COLLIE_RANK % 2)) exec \"$0\" \"$@\"" ${COLL_CHECK}
              --coll allreduce,broadcast,determinism,nonblocking)
add_coll_test(coll_hier_auto_4 300 "" ${COLL_RUN} -n 4 --timeout 280
              sh -c "COLLIE_HOST_ID=host$((COLLIE_RANK / 2)) exec \"$0\" \"$@\"" ${COLL_CHECK} --dtypes quick --big
              --coll allreduce,broadcast,determinism)
# A rank alone on its host beside a host of several: creation once hung there (the lone
# rank skipped a barrier the others made).
add_coll_test(coll_lone_host_3 300 "COLLIE_CONNECT_TIMEOUT=10" ${COLL_RUN} -n 3 --timeout 280
              sh -c "COLLIE_HOST_ID=host$((COLLIE_RANK == 2)) exec \"$0\" \"$@\"" ${COLL_CHECK} --dtypes quick)

# The portable reduction kernels (the default uses AVX2 where the CPU has it).
add_coll_test(coll_portable_kernels_3 300 "COLLIE_REDUCE_ISA=portable" ${COLL_RUN} -n 3 --timeout 280 ${COLL_CHECK})

# The background progress thread.
add_coll_test(coll_progress_thread_3 300 "COLLIE_PROGRESS_THREAD=1" ${COLL_RUN} -n 3 --timeout 280 ${COLL_CHECK})
# ... moves nonblocking operations while the ranks sleep, and stands aside while they wait
# (progress_overlap_check.c): 2 ranks (a rank and its thread per core) and 4 (four threads
# per core), over shared memory and TCP.
add_executable(progress_overlap_check ${CMAKE_CURRENT_LIST_DIR}/progress_overlap_check.c)
target_link_libraries(progress_overlap_check PRIVATE collie_static)
foreach(n 2 4)
  add_coll_test(coll_progress_overlap_${n} 120 "COLLIE_PROGRESS_THREAD=1" ${COLL_RUN} -n ${n} --timeout 100
                $<TARGET_FILE:progress_overlap_check>)
endforeach()
add_coll_test(coll_progress_overlap_tcp_3 120 "COLLIE_PROGRESS_THREAD=1;COLLIE_TRANSPORT=tcp" ${COLL_RUN} -n 3
              --timeout 100 $<TARGET_FILE:progress_overlap_check>)

# Signals interrupting the library (coll_check --signal-storm: SIGALRM and SIGPROF every 20
# to 500 us through handlers without SA_RESTART, as a profiler or a timer would): shared
# memory with large counts, TCP, threads, and process_vm_readv with a progress thread. A
# short --grace: a failing rank stops the job at once.
add_coll_test(coll_signal_storm_shm_4 120 "" ${COLL_RUN} -n 4 --timeout 100 --grace 5 ${COLL_CHECK} --signal-storm
              --dtypes quick --big)
add_coll_test(coll_signal_storm_tcp_3 120 "COLLIE_TRANSPORT=tcp" ${COLL_RUN} -n 3 --timeout 100 --grace 5 ${COLL_CHECK}
              --signal-storm --dtypes quick)
add_coll_test(coll_signal_storm_threads_3 120 "" ${COLL_CHECK} --threads 3 --signal-storm --dtypes quick)
# (Under ASan+UBSan the last took 27 to 72 s in four clean clones: its limits are twice the
# others'.)
add_coll_test(coll_signal_storm_cma_progress_3 240 "COLLIE_SHM_CMA=2;COLLIE_PROGRESS_THREAD=1" ${COLL_RUN} -n 3
              --timeout 200 --grace 5 ${COLL_CHECK} --signal-storm --dtypes quick --big)

# Every algorithm forced on 5 ranks (not a power of two), for the collectives that have it;
# the others stay automatic. Small chunks so that moderate counts are pipelined too.
set(COLL_ALGOS ring tree mesh rd hd bruck binomial chain scatter_allgather rs_gather pairwise linear dissemination shm)
set(COLL_OF_ring allreduce,allgather,allgatherv,reduce_scatter,reduce_scatterv)
set(COLL_OF_tree allreduce)
set(COLL_OF_mesh allreduce,allgather,allgatherv,reduce_scatter,reduce_scatterv,alltoall,alltoallv)
set(COLL_OF_rd allreduce,allgather,allgatherv)
set(COLL_OF_hd allreduce,reduce_scatter,reduce_scatterv)
set(COLL_OF_bruck allgather,allgatherv,alltoall,alltoallv)
set(COLL_OF_binomial broadcast,reduce,scatter,gather)
set(COLL_OF_chain broadcast,reduce)
set(COLL_OF_scatter_allgather broadcast)
set(COLL_OF_rs_gather reduce)
set(COLL_OF_pairwise alltoall,alltoallv)
set(COLL_OF_linear scatter,gather)
set(COLL_OF_dissemination barrier)
set(COLL_OF_shm allreduce,reduce,broadcast,allgather,reduce_scatter,alltoall,barrier)
foreach(a ${COLL_ALGOS})
  add_coll_test(coll_algo_${a}_5 300 "COLLIE_ALGO=${a};COLLIE_CHUNK_SIZE=1024"
                ${COLL_RUN} -n 5 --timeout 280 ${COLL_CHECK} --dtypes quick --coll ${COLL_OF_${a}},nonblocking)
endforeach()
# The power-of-two paths of the logarithmic algorithms.
foreach(a rd hd bruck binomial dissemination)
  add_coll_test(coll_algo_${a}_4 300 "COLLIE_ALGO=${a};COLLIE_CHUNK_SIZE=1024"
                ${COLL_RUN} -n 4 --timeout 280 ${COLL_CHECK} --dtypes quick --coll ${COLL_OF_${a}},nonblocking)
endforeach()
# The shared-memory collectives with a tiny staging area: every collective takes many
# rounds, the two staging buffers alternate, large reductions take the two-phase path;
# every receive buffer is written with streaming stores (COLLIE_STREAM_BYTES=1).
add_coll_test(coll_algo_shm_small_area_4 300 "COLLIE_ALGO=shm;COLLIE_SHM_COLL_SIZE=4K;COLLIE_STREAM_BYTES=1"
              ${COLL_RUN} -n 4 --timeout 280 ${COLL_CHECK} --dtypes quick --big)
add_coll_test(coll_algo_shm_threads_3 300 "COLLIE_ALGO=shm;COLLIE_SHM_COLL_SIZE=4K" ${COLL_CHECK} --threads 3 --dtypes quick)
# The shared-memory collectives at their size boundaries, on either side of each, for
# elements of 1, 2, 4 and 8 bytes: a round in the first inline line (40 bytes), in two
# (96), in all eight (432; per block of 3 ranks for reduce_scatter and alltoall: 144), a
# broadcast's 17 lines (1064 bytes: a CPU per rank) and 65 (4136: ranks outnumbering the CPUs),
# and the largest reduction every rank folds whole (16 KiB).
set(COLL_SHM_EDGES 5 6 10 11 20 21 40 41 12 13 24 25 48 49 96 97 54 55 108 109 216 217 432 433
                   18 19 36 37 72 73 144 145 133 134 266 267 532 533 1064 1065 517 518 1034 1035 2068 2069
                   4136 4137 2048 2049 4096 4097 8192 8193 16384 16385)
string(JOIN "," COLL_SHM_EDGES ${COLL_SHM_EDGES})
add_coll_test(coll_shm_edges_3 300 "COLLIE_ALGO=shm" ${COLL_RUN} -n 3 --timeout 280 ${COLL_CHECK} --dtypes quick
              --coll allreduce,reduce,broadcast,allgather,reduce_scatter,alltoall --counts ${COLL_SHM_EDGES})
# The single-copy path: buffers from collie_mem_alloc, mapped by the other processes
# (--big: 64 KiB and more), on the automatic choice and with shm forced on 2 ranks; and
# ranks as threads, whose buffers are all reachable (written with streaming stores).
add_coll_test(coll_register_3 300 "" ${COLL_RUN} -n 3 --timeout 280 ${COLL_CHECK} --dtypes quick --big --register)
add_coll_test(coll_register_shm_2 300 "COLLIE_ALGO=shm" ${COLL_RUN} -n 2 --timeout 280 ${COLL_CHECK} --dtypes quick --big --register)
add_coll_test(coll_direct_threads_4 300 "COLLIE_ALGO=shm;COLLIE_STREAM_BYTES=1" ${COLL_CHECK} --threads 4 --dtypes quick --big)
# Some buffers from collie_mem_alloc and some not, at random on each rank (--register
# mixed): a collective meets peers with and without reachable buffers, with the automatic
# choice, with chunked rings, and in a random sequence of operations.
add_coll_test(coll_register_mixed_4 300 "" ${COLL_RUN} -n 4 --timeout 280 ${COLL_CHECK} --dtypes quick --big
              --register mixed --seed 3)
add_coll_test(coll_register_mixed_ring_3 300 "COLLIE_ALGO=ring;COLLIE_CHUNK_SIZE=65536;COLLIE_STREAM_BYTES=1" ${COLL_RUN}
              -n 3 --timeout 280 ${COLL_CHECK} --dtypes quick --big --register mixed --seed 5
              --coll allreduce,allgather,reduce_scatter,alltoall,p2p)
add_coll_test(coll_fuzz_register_mixed_3 300 "" ${COLL_RUN} -n 3 --timeout 280 ${COLL_CHECK} --fuzz 400 --fuzz-bytes 2M
              --register mixed --seed 8)
# Single-copy messages (rings carry where the data is): the ring and pairwise schedules,
# receive-reduce included, with collie_mem_alloc buffers; plain receives write with
# streaming stores (COLLIE_STREAM_BYTES=1).
add_coll_test(coll_register_ring_4 300 "COLLIE_ALGO=ring;COLLIE_CHUNK_SIZE=65536;COLLIE_STREAM_BYTES=1" ${COLL_RUN} -n 4 --timeout 280
              ${COLL_CHECK} --dtypes quick --big --register --coll allreduce,allgather,reduce_scatter)
add_coll_test(coll_register_pairwise_3 300 "COLLIE_ALGO=pairwise;COLLIE_CHUNK_SIZE=65536;COLLIE_STREAM_BYTES=1" ${COLL_RUN} -n 3
              --timeout 280 ${COLL_CHECK} --dtypes quick --big --register --coll alltoall,alltoallv,p2p)
# Messages read with process_vm_readv from ordinary buffers (COLLIE_SHM_CMA=2: every
# message of 64 KiB and more, --big), every collective and point to point, through the
# message algorithms (no shared-memory collectives: about 500 reads).
add_coll_test(coll_cma_3 300 "COLLIE_SHM_CMA=2;COLLIE_SHM_COLL_SIZE=0" ${COLL_RUN} -n 3 --timeout 280 ${COLL_CHECK} --dtypes quick --big)
add_coll_test(coll_cma_pairwise_4 300 "COLLIE_SHM_CMA=2;COLLIE_ALGO=pairwise;COLLIE_CHUNK_SIZE=65536" ${COLL_RUN}
              -n 4 --timeout 280 ${COLL_CHECK} --dtypes quick --big --coll alltoall,alltoallv,p2p)
# The shared-memory collectives reading ordinary buffers with process_vm_readv, forced
# (COLLIE_SHM_CMA=2) for all-to-all, all-gather and broadcast (about 160 reads); with
# COLLIE_SHM_CMA=1 and unset (measured) in the perf tests (perf_alltoall_cma_*, perf_cma_choice).
add_coll_test(coll_cma_shm_3 300 "COLLIE_SHM_CMA=2;COLLIE_ALGO=shm" ${COLL_RUN} -n 3 --timeout 280 ${COLL_CHECK}
              --dtypes quick --big --coll allgather,alltoall,broadcast,allreduce)
# A communicator created between collie_group_start and collie_group_end (as NCCL allows):
# the exchange at creation that chooses between process_vm_readv and the ring
# (COLLIE_SHM_CMA unset) must not be deferred to the group's end, or the ranks would choose
# differently (2 ranks: the broadcast's algorithm from 512 KiB).
add_coll_test(coll_init_in_group_2 300 "" ${COLL_RUN} -n 2 --timeout 280 ${COLL_CHECK} --dtypes quick --big
              --init-in-group --coll broadcast,alltoall,allgather)
# The same with the single-copy path off: everything staged.
add_coll_test(coll_register_staged_3 300 "COLLIE_SHM_DIRECT=0" ${COLL_RUN} -n 3 --timeout 280 ${COLL_CHECK} --dtypes quick --big --register)
# Without the shared area (COLLIE_SHM_COLL_SIZE=0) the schedules serve every rank count.
add_coll_test(coll_shm_no_area_4 300 "COLLIE_SHM_COLL_SIZE=0" ${COLL_RUN} -n 4 --timeout 280 ${COLL_CHECK} --dtypes quick)
# A per-collective specification, in the documented ';'-separated form.
add_test(NAME coll_algo_mixed_4 COMMAND ${COLL_RUN} -n 4 --timeout 280 ${COLL_CHECK} --dtypes quick
         --coll allreduce,allgather,broadcast,alltoall,nonblocking)
set_tests_properties(coll_algo_mixed_4 PROPERTIES TIMEOUT 300 LABELS coll ENVIRONMENT
                     "${COLL_ENV};COLLIE_ALGO=allreduce:tree\\;allgather:bruck\\;broadcast:chain\\;alltoall:bruck;COLLIE_CHUNK_SIZE=1024")

# A send through the shared-memory ring that also writes its bytes to the receive buffer
# (the own block of an out-of-place all-gather, a broadcast root's; executor.c, pair_tee):
# 2 ranks, message algorithms forced, blocks from 16 KiB past the ring's 1 MiB.
add_test(NAME coll_tee_2 COMMAND ${COLL_RUN} -n 2 --timeout 280 ${COLL_CHECK} --dtypes quick --coll allgather,broadcast
         --counts 0,4099,65549,262147)
set_tests_properties(coll_tee_2 PROPERTIES TIMEOUT 300 LABELS coll ENVIRONMENT
                     "${COLL_ENV};COLLIE_ALGO=allgather:rd\\;broadcast:chain")

# Mismatched arguments: every rank gets COLLIE_ERR_MISMATCH, nobody hangs.
add_test(NAME coll_mismatch_4 COMMAND ${COLL_RUN} -n 4 --timeout 100 ${COLL_CHECK} --mismatch)
set_tests_properties(coll_mismatch_4 PROPERTIES TIMEOUT 120 LABELS coll
                     ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo;COLLIE_EXEC_TIMEOUT=20;COLLIE_CONNECT_TIMEOUT=30")
# Two processes, automatic choice: a 4 MiB broadcast whose two ranks both believe they are
# its root goes as messages, and each waits for the other to receive (bootstrap/stall.c).
add_test(NAME coll_mismatch_2 COMMAND ${COLL_RUN} -n 2 --timeout 100 ${COLL_CHECK} --mismatch)
set_tests_properties(coll_mismatch_2 PROPERTIES TIMEOUT 120 LABELS coll
                     ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo;COLLIE_EXEC_TIMEOUT=20;COLLIE_CONNECT_TIMEOUT=30")
# The same with the ranks as threads of one process.
add_test(NAME coll_mismatch_threads_4 COMMAND ${COLL_CHECK} --threads 4 --mismatch)
set_tests_properties(coll_mismatch_threads_4 PROPERTIES TIMEOUT 120 LABELS coll
                     ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo;COLLIE_EXEC_TIMEOUT=20;COLLIE_CONNECT_TIMEOUT=30")
# Mismatches caught by the shared-memory collectives' call fingerprints.
add_test(NAME coll_mismatch_shm_2 COMMAND ${COLL_RUN} -n 2 --timeout 100 ${COLL_CHECK} --mismatch)
set_tests_properties(coll_mismatch_shm_2 PROPERTIES TIMEOUT 120 LABELS coll
                     ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo;COLLIE_EXEC_TIMEOUT=20;COLLIE_CONNECT_TIMEOUT=30;COLLIE_ALGO=shm")

# Ranks drifting apart: small broadcasts whose root runs ahead through the inline slots,
# reduces, allreduces and staged all-gathers in between (runahead_check.c).
add_executable(runahead_check ${CMAKE_CURRENT_LIST_DIR}/runahead_check.c)
target_link_libraries(runahead_check PRIVATE collie_static)
# Forced to the shared-memory collectives (the cost model may send small rooted calls as
# messages from 3 ranks), and the automatic choice on 2 ranks.
add_coll_test(coll_runahead_2 300 "" ${COLL_RUN} -n 2 --timeout 280 $<TARGET_FILE:runahead_check> 3000 5)
# 2 ranks on 2 or more CPUs, the area unset: buffers of 1 MiB and rounds of 256 KiB, all-gathers
# of one round in 8 slots like the broadcasts, larger ones in the two halves.
add_coll_test(coll_runahead_shm_2 300 "COLLIE_ALGO=shm" ${COLL_RUN} -n 2 --timeout 280
              $<TARGET_FILE:runahead_check> 3000 3)
add_coll_test(coll_runahead_shm_3 300 "COLLIE_ALGO=shm" ${COLL_RUN} -n 3 --timeout 280 $<TARGET_FILE:runahead_check> 3000 7)
add_coll_test(coll_runahead_shm_4 300 "COLLIE_ALGO=shm" ${COLL_RUN} -n 4 --timeout 280 $<TARGET_FILE:runahead_check> 3000 11)
# A 1 MiB area (the default where ranks outnumber cores): a large broadcast stages in 8
# slots, other collectives in two halves, and a root switching between them must wait.
add_coll_test(coll_runahead_shm_area_4 300 "COLLIE_ALGO=shm;COLLIE_SHM_COLL_SIZE=1M" ${COLL_RUN} -n 4 --timeout 280
              $<TARGET_FILE:runahead_check> 3000 17)
# An area of 64 slots of 256 KiB for a broadcast: more than the 32 inline slots whose
# lines also hold every first round's key and fingerprint.
add_coll_test(coll_runahead_shm_area_8m_2 300 "COLLIE_ALGO=shm;COLLIE_SHM_COLL_SIZE=8M" ${COLL_RUN} -n 2 --timeout 280
              $<TARGET_FILE:runahead_check> 3000 19)

# The fast lane of the blocking small all-reduce, reduce, all-gather, reduce-scatter, all-to-all
# and broadcast (src/coll/fast_lane.c) among late ranks,
# pending and rooted calls, and calls that differ or never come (fast_lane_check.c). Forced
# to the shared-memory collectives, where small rooted calls from 3 ranks may go as messages.
add_executable(fast_lane_check ${CMAKE_CURRENT_LIST_DIR}/fast_lane_check.c)
target_link_libraries(fast_lane_check PRIVATE collie_static)
set(FAST_LANE $<TARGET_FILE:fast_lane_check>)
add_coll_test(coll_fast_lane_2 300 "" ${COLL_RUN} -n 2 --timeout 280 ${FAST_LANE} run 8000 5)
foreach(n 2 3 4 8)
  add_coll_test(coll_fast_lane_shm_${n} 300 "COLLIE_ALGO=shm" ${COLL_RUN} -n ${n} --timeout 280 ${FAST_LANE} run 4000 ${n})
endforeach()
foreach(what op count dtype barrier barrier-count gather-count gather-alltoall broadcast-root reduce-root
            reduce-noroot)
  add_coll_test(coll_fast_lane_mismatch_${what}_3 60 "COLLIE_EXEC_TIMEOUT=20" ${COLL_RUN} -n 3 --timeout 50
                ${FAST_LANE} mismatch ${what})
endforeach()
add_coll_test(coll_fast_lane_late_3 60 "COLLIE_EXEC_TIMEOUT=2" ${COLL_RUN} -n 3 --timeout 50 ${FAST_LANE} late)

# Buffers whose page offsets differ by 1 to 63 bytes, where memcpy and process_vm_readv /
# writev are slow and collie copies another way (page_offset_check.c): by CMA wherever it
# applies (messages, and the shared-memory all-to-all, all-gather and broadcast), and
# through the shared-memory rings and staging without it.
add_executable(page_offset_check ${CMAKE_CURRENT_LIST_DIR}/page_offset_check.c)
target_link_libraries(page_offset_check PRIVATE collie_static)
add_coll_test(coll_page_offset_cma_2 200 "COLLIE_SHM_CMA=2" ${COLL_RUN} -n 2 --timeout 180
              $<TARGET_FILE:page_offset_check>)
add_coll_test(coll_page_offset_cma_shm_3 200 "COLLIE_SHM_CMA=2;COLLIE_ALGO=shm" ${COLL_RUN} -n 3 --timeout 180
              $<TARGET_FILE:page_offset_check>)
add_coll_test(coll_page_offset_ring_3 200 "COLLIE_SHM_CMA=0;COLLIE_ALGO=ring" ${COLL_RUN} -n 3 --timeout 180
              $<TARGET_FILE:page_offset_check>)

# Streaming stores into the staging buffers and ring slots (COLLIE_SHM_STORES), which the
# automatic choice takes only while the ranks sit on distant cores: every shared-memory
# collective, and the message algorithms through the rings. With COLLIE_STREAM_BYTES=1 the
# shared-memory collectives' copies out of staging into the receive buffers stream too.
add_coll_test(coll_shm_streaming_stores_4 300 "COLLIE_SHM_STORES=streaming;COLLIE_STREAM_BYTES=1;COLLIE_ALGO=shm" ${COLL_RUN} -n 4
              --timeout 280 ${COLL_CHECK} --dtypes quick --big)
add_coll_test(coll_ring_streaming_stores_3 300 "COLLIE_SHM_STORES=streaming;COLLIE_SHM_CMA=0;COLLIE_ALGO=ring"
              ${COLL_RUN} -n 3 --timeout 280 ${COLL_CHECK} --dtypes quick --big)
