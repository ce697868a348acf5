# Multi-process and multi-thread tests of the foundation (transports, bootstrap, launchers).
add_executable(p2p_check ${CMAKE_CURRENT_LIST_DIR}/p2p_check.c ${CMAKE_CURRENT_LIST_DIR}/../common/signal_storm.c)
target_include_directories(p2p_check PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../common)
target_link_libraries(p2p_check PRIVATE collie_static)

# Every multi-rank test runs under these: loopback only, short timeouts so a bug fails fast.
set(COLLIE_TEST_ENV "COLLIE_SOCKET_IFNAME=lo;COLLIE_CONNECT_TIMEOUT=30;COLLIE_EXEC_TIMEOUT=60;OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
set(P2P $<TARGET_FILE:p2p_check>)
set(RUN $<TARGET_FILE:collie-run>)

foreach(n 1 2 3 4 8)
  add_test(NAME p2p_threads_${n} COMMAND ${P2P} --threads ${n})
  add_test(NAME p2p_collie_run_shm_${n} COMMAND ${RUN} -n ${n} --timeout 120 ${P2P})
  add_test(NAME p2p_collie_run_tcp_${n} COMMAND ${RUN} -n ${n} --timeout 120 ${P2P})
  set_tests_properties(p2p_threads_${n} p2p_collie_run_shm_${n} PROPERTIES TIMEOUT 150 ENVIRONMENT "${COLLIE_TEST_ENV}")
  set_tests_properties(p2p_collie_run_tcp_${n} PROPERTIES TIMEOUT 150 ENVIRONMENT "${COLLIE_TEST_ENV};COLLIE_TRANSPORT=tcp")
endforeach()
# COLLIE_RUN_GRACE in decimals, as collie-run takes it: the ranks inherit it, and creation
# refused it as not an integer on every rank.
add_test(NAME collie_run_grace_decimal COMMAND ${RUN} -n 2 --timeout 60 ${P2P})
set_tests_properties(collie_run_grace_decimal PROPERTIES TIMEOUT 90 ENVIRONMENT "${COLLIE_TEST_ENV};COLLIE_RUN_GRACE=1.5")
add_test(NAME p2p_threads_tcp_4 COMMAND ${P2P} --threads 4)
add_test(NAME p2p_progress_thread_4 COMMAND ${RUN} -n 4 --timeout 120 ${P2P})
set_tests_properties(p2p_progress_thread_4 PROPERTIES TIMEOUT 150 ENVIRONMENT "${COLLIE_TEST_ENV};COLLIE_PROGRESS_THREAD=1")
set_tests_properties(p2p_threads_tcp_4 PROPERTIES TIMEOUT 150 ENVIRONMENT "${COLLIE_TEST_ENV};COLLIE_TRANSPORT=tcp")

# Signals interrupting the library: p2p_check --signal-storm fires SIGALRM and SIGPROF every
# 20 to 500 us through handlers without SA_RESTART, as a profiler or a timer would, so any
# blocking call may return EINTR (a rank's connect to rank 0 or to a TCP peer once failed
# with "Interrupted system call"). A short --grace: a failing rank stops the job at once.
add_test(NAME p2p_signal_storm_shm_4 COMMAND ${RUN} -n 4 --timeout 60 --grace 5 ${P2P} --signal-storm)
add_test(NAME p2p_signal_storm_tcp_4 COMMAND ${RUN} -n 4 --timeout 60 --grace 5 ${P2P} --signal-storm)
add_test(NAME p2p_signal_storm_threads_4 COMMAND ${P2P} --threads 4 --signal-storm)
set_tests_properties(p2p_signal_storm_shm_4 p2p_signal_storm_threads_4 PROPERTIES TIMEOUT 90 ENVIRONMENT "${COLLIE_TEST_ENV}")
set_tests_properties(p2p_signal_storm_tcp_4 PROPERTIES TIMEOUT 90 ENVIRONMENT "${COLLIE_TEST_ENV};COLLIE_TRANSPORT=tcp")

find_program(OMPI_RUN mpirun.openmpi)
find_program(MPICH_RUN mpiexec.mpich)
if(NOT OMPI_RUN OR NOT MPICH_RUN)
  message(FATAL_ERROR "mpirun.openmpi and mpiexec.mpich are needed by the tests: run scripts/install-deps.sh")
endif()
add_test(NAME p2p_openmpi_3 COMMAND ${OMPI_RUN} --oversubscribe -n 3 ${P2P})
add_test(NAME p2p_mpich_2 COMMAND ${MPICH_RUN} -n 2 ${P2P})
add_test(NAME p2p_mpich_4_tcp COMMAND ${MPICH_RUN} -n 4 -genv COLLIE_TRANSPORT tcp ${P2P})
set_tests_properties(p2p_openmpi_3 p2p_mpich_2 p2p_mpich_4_tcp PROPERTIES TIMEOUT 150 ENVIRONMENT "${COLLIE_TEST_ENV}")

# One message above 4 GiB, over shared memory and over TCP (8 GiB of memory; not under ASan).
add_executable(big_message ${CMAKE_CURRENT_LIST_DIR}/big_message.c)
target_link_libraries(big_message PRIVATE collie_static Threads::Threads)
add_test(NAME big_message_shm COMMAND big_message)
add_test(NAME big_message_tcp COMMAND big_message)
set_tests_properties(big_message_shm PROPERTIES TIMEOUT 240 LABELS noasan RUN_SERIAL TRUE ENVIRONMENT "${COLLIE_TEST_ENV}")
set_tests_properties(big_message_tcp PROPERTIES TIMEOUT 240 LABELS noasan RUN_SERIAL TRUE ENVIRONMENT "${COLLIE_TEST_ENV};COLLIE_TRANSPORT=tcp")

# A second collie_comm_init_env in one job under collie-run: the inherited listening socket
# is adopted once, and the root port can be bound again (init_twice.c says why).
add_executable(init_twice ${CMAKE_CURRENT_LIST_DIR}/init_twice.c)
target_link_libraries(init_twice PRIVATE collie_static)
foreach(n 2 3)
  add_test(NAME collie_run_init_twice_${n} COMMAND ${RUN} -n ${n} --timeout 60 --grace 5 $<TARGET_FILE:init_twice>)
  set_tests_properties(collie_run_init_twice_${n} PROPERTIES TIMEOUT 90
                       ENVIRONMENT "${COLLIE_TEST_ENV};COLLIE_CONNECT_TIMEOUT=10")
endforeach()

# Two "hosts" on this machine (COLLIE_HOST_ID per rank pair): shared memory inside a pair,
# TCP between pairs, in one communicator.
add_test(NAME p2p_two_hosts_4 COMMAND ${RUN} -n 4 --timeout 120 sh -c "COLLIE_HOST_ID=host$((COLLIE_RANK / 2)) exec ${P2P}")
set_tests_properties(p2p_two_hosts_4 PROPERTIES TIMEOUT 150 ENVIRONMENT "${COLLIE_TEST_ENV}")

# Two real hosts: network namespaces on a bridge, each with its own /dev/shm and
# /etc/hosts; interface auto-selection (no COLLIE_SOCKET_IFNAME), a root name that is
# loopback on its own host, a black-holed root address, an unreachable rank and a host
# that drops off the network mid-collective. Needs root, ip and unshare:
# fails (does not skip) without them.
add_test(NAME netns_two_hosts COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/netns_hosts_test.sh $<TARGET_FILE:coll_check>
         $<TARGET_FILE:all_reduce_perf>)
set_tests_properties(netns_two_hosts PROPERTIES TIMEOUT 150 LABELS fault)
# Slurm for real: a private slurmctld and a slurmd on each of two network-namespace hosts;
# srun on one host and on two (COLLIE_ROOT_ADDR), without an address, with --mpi=pmi2, two
# steps at once, and pre-test-check through srun. Needs root: fails (does not skip) without.
add_test(NAME slurm_two_hosts COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/slurm_test.sh ${CMAKE_BINARY_DIR}/bin
                                      ${PROJECT_SOURCE_DIR})
set_tests_properties(slurm_two_hosts PROPERTIES TIMEOUT 240)
# mpirun (Open MPI) and mpiexec (MPICH) across two network-namespace hosts, their daemons
# reaching the second host through a stand-in for ssh. Needs root: fails without.
add_test(NAME mpi_two_hosts COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/mpi_hosts_test.sh ${CMAKE_BINARY_DIR}/bin
                                    ${PROJECT_SOURCE_DIR})
set_tests_properties(mpi_two_hosts PROPERTIES TIMEOUT 240)
# Ranks started the torchrun way: collie meets beside the port torchrun's store holds.
add_test(NAME torchrun_env COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/torchrun_env_test.sh $<TARGET_FILE:coll_check>)
set_tests_properties(torchrun_env PROPERTIES TIMEOUT 120 ENVIRONMENT "${COLLIE_TEST_ENV}")
# Ranks bound to a core each are not oversubscribed; bound to one core together, they are.
add_test(NAME bound_ranks COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/bound_ranks_test.sh $<TARGET_FILE:collie-run>
                                  $<TARGET_FILE:all_reduce_perf>)
set_tests_properties(bound_ranks PROPERTIES TIMEOUT 120 ENVIRONMENT "${COLLIE_TEST_ENV}")

# Many communicators at once, and what each costs in /dev/shm (shm_footprint_test.sh).
add_executable(comm_many ${CMAKE_CURRENT_LIST_DIR}/comm_many.c)
target_link_libraries(comm_many PRIVATE collie_static)
add_test(NAME comm_many_8 COMMAND ${RUN} -n 8 --timeout 150 $<TARGET_FILE:comm_many> 24 65536)
add_test(NAME comm_many_tcp_4 COMMAND ${RUN} -n 4 --timeout 150 $<TARGET_FILE:comm_many> 8 300000)
add_test(NAME shm_footprint_8 COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/shm_footprint_test.sh ${RUN} $<TARGET_FILE:comm_many>)
set_tests_properties(comm_many_8 comm_many_tcp_4 shm_footprint_8 PROPERTIES TIMEOUT 240 ENVIRONMENT "${COLLIE_TEST_ENV}")
set_tests_properties(comm_many_tcp_4 PROPERTIES ENVIRONMENT "${COLLIE_TEST_ENV};COLLIE_TRANSPORT=tcp")
