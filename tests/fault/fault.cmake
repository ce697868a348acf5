# Failure scenarios: killed peers, timeouts, strangers, bad arguments, abort.
add_executable(fault_rank ${CMAKE_CURRENT_LIST_DIR}/fault_rank.c)
target_link_libraries(fault_rank PRIVATE collie_static)
set(FAULT_SH ${CMAKE_CURRENT_LIST_DIR}/fault_test.sh)
set(FAULT_BIN $<TARGET_FILE:fault_rank>)

foreach(tr shm tcp)
  add_test(NAME fault_kill_rank2_of4_${tr} COMMAND bash ${FAULT_SH} ${FAULT_BIN} kill 4 2 ${tr} ring)
  add_test(NAME fault_kill_root_of4_${tr} COMMAND bash ${FAULT_SH} ${FAULT_BIN} kill 4 0 ${tr} ring)
  set_tests_properties(fault_kill_rank2_of4_${tr} fault_kill_root_of4_${tr} PROPERTIES TIMEOUT 90 LABELS fault)
endforeach()
add_test(NAME fault_exec_timeout COMMAND bash ${FAULT_SH} ${FAULT_BIN} exec-timeout)
add_test(NAME fault_test_timeout COMMAND bash ${FAULT_SH} ${FAULT_BIN} test-timeout)
add_test(NAME fault_connect_timeout COMMAND bash ${FAULT_SH} ${FAULT_BIN} connect-timeout)
add_test(NAME fault_junk_on_bootstrap COMMAND bash ${FAULT_SH} ${FAULT_BIN} junk)
# A rank of another build of the same version (a greeting of another size).
add_executable(other_build_rank ${CMAKE_CURRENT_LIST_DIR}/other_build_rank.c)
target_link_libraries(other_build_rank PRIVATE collie_static)
target_include_directories(other_build_rank PRIVATE ${PROJECT_SOURCE_DIR}/src)
add_test(NAME fault_other_build COMMAND bash ${FAULT_SH} ${FAULT_BIN} other-build $<TARGET_FILE:other_build_rank>)
set_tests_properties(fault_other_build PROPERTIES TIMEOUT 60 LABELS fault ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo")
add_test(NAME fault_slow_destroy COMMAND bash ${FAULT_SH} ${FAULT_BIN} slow-destroy)
add_test(NAME fault_bad_args COMMAND ${FAULT_BIN} bad-args)
# A rank that dies while the others are in their destroy, rank 0 or another: the others
# waited for its goodbye until COLLIE_EXEC_TIMEOUT, and never named it.
add_test(NAME fault_dead_in_destroy_shm COMMAND bash ${FAULT_SH} ${FAULT_BIN} dead-in-destroy 3 1 shm)
add_test(NAME fault_dead_root_in_destroy_tcp COMMAND bash ${FAULT_SH} ${FAULT_BIN} dead-in-destroy 3 0 tcp)
set_tests_properties(fault_dead_in_destroy_shm fault_dead_root_in_destroy_tcp PROPERTIES TIMEOUT 60 LABELS fault)
# A count of 0 on one rank only (its call completes at once) in a shared-memory all-to-all,
# then an all-reduce as messages: the others waited in the all-to-all until
# COLLIE_EXEC_TIMEOUT, rank 1 in the all-reduce; the stall reports now find it.
add_test(NAME fault_zero_count_4 COMMAND $<TARGET_FILE:collie-run> -n 4 --timeout 50 ${FAULT_BIN} zero-count)
set_tests_properties(fault_zero_count_4 PROPERTIES TIMEOUT 60 LABELS fault
                     ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo;COLLIE_EXEC_TIMEOUT=40;COLLIE_ALGO=ring")
# A scenario of fault_rank on N ranks, over shared memory and over TCP (fault_NAME_N_shm,
# fault_NAME_N_tcp), with the environment ENV.
function(add_fault_both_transports name nranks scenario env)
  foreach(tr shm tcp)
    add_test(NAME fault_${name}_${nranks}_${tr} COMMAND $<TARGET_FILE:collie-run> -n ${nranks} --timeout 50
             ${FAULT_BIN} ${scenario})
    set(e "COLLIE_SOCKET_IFNAME=lo;${env}")
    if(tr STREQUAL tcp)
      set(e "${e};COLLIE_TRANSPORT=tcp")
    endif()
    set_tests_properties(fault_${name}_${nranks}_${tr} PROPERTIES TIMEOUT 60 LABELS fault ENVIRONMENT "${e}")
  endforeach()
endfunction()
# Blocking calls that are not waits must move this thread's other communicators too, where
# a peer may wait for this rank first: collie_comm_synchronize of two communicators in
# opposite orders, a destroy (which waits for the other ranks' destroys) against a wait, and
# a creation from a unique id against a wait: all three waited until a timeout.
add_fault_both_transports(cross_blocking 3 cross-blocking "COLLIE_EXEC_TIMEOUT=20;COLLIE_CONNECT_TIMEOUT=20")
# A rank busy outside collie past the others' timeout: their sentence named only the rank
# each waited for, which in a ring may be another waiting rank; now it names the late one.
# The answers travel one rank further each stall report (2 s): 10 s see the ring's 3 hops.
add_fault_both_transports(late_rank 4 late-rank "COLLIE_EXEC_TIMEOUT=10;COLLIE_ALGO=allreduce:ring")
# The peer a rank waits for said, at its first stall report, that it had not reached the
# operation; it reached it later and waited there for a third rank, busy elsewhere. At the
# timeout that answer was stale, and the sentence named no third rank (fault campaign:
# no error named a frozen rank): the timeout asks once more.
add_fault_both_transports(late_chain 3 late-chain "COLLIE_EXEC_TIMEOUT=4")
# A chain of 4 waits ending at a rank busy elsewhere: each stall report's question reached
# one rank further, every 2 s, and a timeout of 4 s named only the second; a rank asked
# what it waits for now asks its own peer at once.
add_fault_both_transports(long_chain 5 long-chain "COLLIE_EXEC_TIMEOUT=4")
# A small reduce's non-root returns at once and compares its call with the root's once the
# root enters it; with no operation left, a synchronize waiting for that comparison had no
# timeout and waited for a frozen root for good (coll_fuzz_stop_hosts_root_4 under ASan).
add_test(NAME fault_late_root_shm COMMAND $<TARGET_FILE:collie-run> -n 2 --timeout 50 ${FAULT_BIN} late-root)
set_tests_properties(fault_late_root_shm PROPERTIES TIMEOUT 60 LABELS fault
                     ENVIRONMENT "COLLIE_EXEC_TIMEOUT=2;COLLIE_ALGO=reduce:shm")
# Nonblocking all-reduces on two communicators, waited for in opposite orders: a wait moved
# only its own communicator, and both ranks waited until COLLIE_EXEC_TIMEOUT.
add_test(NAME fault_cross_wait_tcp COMMAND $<TARGET_FILE:collie-run> -n 2 --timeout 50 ${FAULT_BIN} cross-wait)
set_tests_properties(fault_cross_wait_tcp PROPERTIES TIMEOUT 60 LABELS fault
                     ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo;COLLIE_EXEC_TIMEOUT=20;COLLIE_TRANSPORT=tcp")
# The same after 8 other communicators were used: the list of communicators a wait moves
# kept them while idle, and shut these two out.
add_test(NAME fault_cross_wait_busy_tcp COMMAND $<TARGET_FILE:collie-run> -n 2 --timeout 50 ${FAULT_BIN} cross-wait-busy)
set_tests_properties(fault_cross_wait_busy_tcp PROPERTIES TIMEOUT 60 LABELS fault
                     ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo;COLLIE_EXEC_TIMEOUT=20;COLLIE_TRANSPORT=tcp")
# The same with loops of collie_test, as programs that poll wait: a test moved only its own
# communicator, and both ranks spun until COLLIE_EXEC_TIMEOUT.
add_test(NAME fault_cross_test_tcp COMMAND $<TARGET_FILE:collie-run> -n 2 --timeout 50 ${FAULT_BIN} cross-test)
set_tests_properties(fault_cross_test_tcp PROPERTIES TIMEOUT 60 LABELS fault
                     ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo;COLLIE_EXEC_TIMEOUT=20;COLLIE_TRANSPORT=tcp")
# A thread in collie_comm_synchronize while another aborts the communicator and waits for
# its last request: the synchronize held no reference, and the last release unmapped the
# segments it slept on (a NULL segment state after the sleep). One CPU (taskset) makes the
# sleeper lose the race every time.
add_test(NAME fault_sync_abort_2 COMMAND taskset -c 0 $<TARGET_FILE:collie-run> -n 2 --timeout 100 ${FAULT_BIN} sync-abort)
set_tests_properties(fault_sync_abort_2 PROPERTIES TIMEOUT 120 LABELS fault ENVIRONMENT "COLLIE_EXEC_TIMEOUT=20")
# Communicators destroyed with a request nobody waited for: their segments (about 1 MB
# each) stayed mapped for good, since the request held the communicator.
add_test(NAME fault_unwaited_destroy_3 COMMAND $<TARGET_FILE:collie-run> -n 3 --timeout 100 ${FAULT_BIN} unwaited-destroy)
set_tests_properties(fault_unwaited_destroy_3 PROPERTIES TIMEOUT 120 LABELS fault ENVIRONMENT "COLLIE_EXEC_TIMEOUT=20")
# A small send that is never received completes at once on both sides, and a shared-memory
# all-reduce after it reads no message: the destroys must say so (the message was lost
# without a word). (Over TCP the all-reduce's messages find it at once.)
add_test(NAME fault_unmatched_send_shm COMMAND $<TARGET_FILE:collie-run> -n 2 --timeout 50 ${FAULT_BIN} unmatched-send)
set_tests_properties(fault_unmatched_send_shm PROPERTIES TIMEOUT 60 LABELS fault
                     ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo;COLLIE_EXEC_TIMEOUT=20")
# One thread destroying the ranks of collie_comm_init_all one after another: the first
# waits out COLLIE_EXEC_TIMEOUT (2 s here), and must say why halfway.
add_test(NAME fault_one_thread_destroy COMMAND bash -c "out=$(\"$0\" one-thread-destroy 2>&1); rc=$?; echo \"$out\"; test $rc = 0 && grep -q 'call each rank.s collie_comm_destroy from its own thread' <<<\"$out\"" ${FAULT_BIN})
set_tests_properties(fault_one_thread_destroy PROPERTIES TIMEOUT 60 LABELS fault
                     ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo;COLLIE_EXEC_TIMEOUT=2")
# A rank that gives up (destroys) while the others wait for it in a later collective: they
# fail at once naming it, where they waited until COLLIE_EXEC_TIMEOUT (30 s here).
foreach(tr auto tcp)
  add_test(NAME fault_early_destroy_${tr} COMMAND $<TARGET_FILE:collie-run> -n 3 --timeout 25 ${FAULT_BIN} early-destroy)
  set_tests_properties(fault_early_destroy_${tr} PROPERTIES TIMEOUT 60 LABELS fault
                       ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo;COLLIE_EXEC_TIMEOUT=30;COLLIE_TRANSPORT=${tr}")
endforeach()
# A rank that destroys without sending (or receiving) a point-to-point message its peer
# waits for: the peer fails at once naming it, where it waited until COLLIE_EXEC_TIMEOUT;
# messages it did send before still arrive.
foreach(tr auto tcp)
  add_test(NAME fault_p2p_left_${tr} COMMAND $<TARGET_FILE:collie-run> -n 3 --timeout 25 ${FAULT_BIN} p2p-left)
  set_tests_properties(fault_p2p_left_${tr} PROPERTIES TIMEOUT 60 LABELS fault
                       ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo;COLLIE_EXEC_TIMEOUT=30;COLLIE_TRANSPORT=${tr}")
endforeach()
add_test(NAME fault_abort COMMAND ${FAULT_BIN} abort)
set_tests_properties(fault_exec_timeout fault_test_timeout fault_connect_timeout fault_slow_destroy fault_junk_on_bootstrap fault_bad_args fault_abort
                     PROPERTIES TIMEOUT 60 LABELS fault ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo")
# A late rank in a shared-memory collective (algorithm shm, 3 ranks as threads).
add_test(NAME fault_shm_timeout COMMAND ${FAULT_BIN} shm-timeout)
set_tests_properties(fault_shm_timeout PROPERTIES TIMEOUT 60 LABELS fault
                     ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo;COLLIE_EXEC_TIMEOUT=2;COLLIE_ALGO=shm")
# Rank 0 of 3 completes an allreduce of 0 elements that the others call with 4, and
# destroys: they must be told that it destroyed its communicator, not that it died.
add_test(NAME fault_uneven_destroy COMMAND ${FAULT_BIN} uneven-destroy)
set_tests_properties(fault_uneven_destroy PROPERTIES TIMEOUT 60 LABELS fault ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo")
# Two threads of one rank calling collectives on one communicator at once.
add_test(NAME fault_two_threads COMMAND ${FAULT_BIN} two-threads)
set_tests_properties(fault_two_threads PROPERTIES TIMEOUT 60 LABELS fault ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo")
# Requests and communicators used after they were freed; an abort during a destroy.
add_test(NAME fault_stale_handles COMMAND ${FAULT_BIN} stale-handles)
set_tests_properties(fault_stale_handles PROPERTIES TIMEOUT 60 LABELS fault ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo")
# A signal handler aborting a communicator that a thread is using (40 repetitions).
add_test(NAME fault_signal_abort COMMAND ${FAULT_BIN} signal-abort)
set_tests_properties(fault_signal_abort PROPERTIES TIMEOUT 60 LABELS fault ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo")
# Timeouts with a progress thread. Whichever thread finds one holds the lock when it fails
# the communicator: these hung while the failure's wake-up took that lock. In exec-timeout and
# shm-timeout the waiting thread or the progress thread may find it; in test-timeout only
# the progress thread can (collie_test leaves progress to it).
add_test(NAME fault_exec_timeout_progress_thread COMMAND bash ${FAULT_SH} ${FAULT_BIN} exec-timeout)
add_test(NAME fault_test_timeout_progress_thread COMMAND bash ${FAULT_SH} ${FAULT_BIN} test-timeout)
add_test(NAME fault_shm_timeout_progress_thread COMMAND ${FAULT_BIN} shm-timeout)
set_tests_properties(fault_exec_timeout_progress_thread fault_test_timeout_progress_thread PROPERTIES TIMEOUT 60 LABELS fault
                     ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo;COLLIE_PROGRESS_THREAD=1")
set_tests_properties(fault_shm_timeout_progress_thread PROPERTIES TIMEOUT 60 LABELS fault
                     ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo;COLLIE_EXEC_TIMEOUT=2;COLLIE_ALGO=shm;COLLIE_PROGRESS_THREAD=1")
add_test(NAME fault_kill_rank1_allreduce_shm COMMAND bash ${FAULT_SH} ${FAULT_BIN} kill 4 1 shm allreduce)
set_tests_properties(fault_kill_rank1_allreduce_shm PROPERTIES TIMEOUT 90 LABELS fault)
# The 2-rank broadcast of 1 MiB: the root writes half of the receiver's buffer
# (process_vm_writev) while the receiver reads the other half; either may die mid-copy.
add_test(NAME fault_kill_root_broadcast_shm COMMAND bash ${FAULT_SH} ${FAULT_BIN} kill 2 0 shm broadcast)
add_test(NAME fault_kill_receiver_broadcast_shm COMMAND bash ${FAULT_SH} ${FAULT_BIN} kill 2 1 shm broadcast)
set_tests_properties(fault_kill_root_broadcast_shm fault_kill_receiver_broadcast_shm PROPERTIES TIMEOUT 90 LABELS fault)
# Ranks in different PID namespaces sharing /dev/shm: single copy turns itself off.
add_test(NAME fault_single_copy_other_pid_namespace COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/pidns_test.sh $<TARGET_FILE:coll_check>)
set_tests_properties(fault_single_copy_other_pid_namespace PROPERTIES TIMEOUT 150 LABELS fault)
# A /dev/shm too small for the segments (a private tmpfs in a mount namespace): a sentence
# with the remedies on every rank, not a SIGBUS, at creation or at the send that needs more
# of a ring; tcp and a large enough /dev/shm work.
add_test(NAME fault_shm_full COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/shm_full_test.sh $<TARGET_FILE:collie-run> $<TARGET_FILE:coll_check>
         $<TARGET_FILE:comm_many>)
set_tests_properties(fault_shm_full PROPERTIES TIMEOUT 240 LABELS fault ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo")
# Too few open files allowed (ulimit -n) for 8 ranks over TCP: the rank that runs out names
# the limit and how to raise it, instead of spinning on a pending connection until the
# connect timeout.
add_test(NAME fault_fd_limit COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/fd_limit_test.sh $<TARGET_FILE:collie-run> $<TARGET_FILE:all_reduce_perf>
         $<TARGET_FILE:comm_many>)
set_tests_properties(fault_fd_limit PROPERTIES TIMEOUT 120 LABELS fault ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo")
# Too low a limit of processes and threads (a cgroup's pids.max): the rank whose thread
# cannot start names the limit; every rank fails the split.
add_test(NAME fault_pids_limit COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/pids_limit_test.sh $<TARGET_FILE:collie-run>
         $<TARGET_FILE:comm_many>)
set_tests_properties(fault_pids_limit PROPERTIES TIMEOUT 150 LABELS fault ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo")
# The victim has forked a child that lives on with copies of its sockets (a data-loader
# worker): its death must still be seen at once, not after COLLIE_EXEC_TIMEOUT.
foreach(tr shm tcp)
  add_test(NAME fault_kill_forked_rank1_of3_${tr} COMMAND bash ${FAULT_SH} ${FAULT_BIN} kill 3 1 ${tr} ring forked)
  set_tests_properties(fault_kill_forked_rank1_of3_${tr} PROPERTIES TIMEOUT 90 LABELS fault)
endforeach()
# Settings the ranks must share (COLLIE_ALGO, COLLIE_TUNING_FILE, COLLIE_CHUNK_SIZE, ...)
# set differently on some ranks: creation fails on every rank with a sentence naming the
# variable, instead of a hang until COLLIE_EXEC_TIMEOUT.
add_test(NAME fault_settings_mismatch COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/settings_mismatch_test.sh $<TARGET_FILE:collie-run> $<TARGET_FILE:coll_check>)
set_tests_properties(fault_settings_mismatch PROPERTIES TIMEOUT 240 LABELS fault ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo")
# COLLIE_PORT_RANGE malformed (refused everywhere) and too small (every rank names it at once).
add_test(NAME fault_port_range COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/port_range_test.sh $<TARGET_FILE:collie-run> $<TARGET_FILE:coll_check>
                                 ${FAULT_BIN})
set_tests_properties(fault_port_range PROPERTIES TIMEOUT 120 LABELS fault ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo")
# Out of memory: one allocation of libcollie fails (alloc_fail_shim, preloaded), in one
# rank of 3, at every place the library allocates: rank 1 or rank 0, shared memory or TCP,
# from creation on or once the communicator exists. Each run must end at once with
# sentences naming that rank, no timeout, no crash, nothing left in /dev/shm. Before, a
# failure while posting an operation, or before a rank joined, left the others waiting
# until COLLIE_EXEC_TIMEOUT or COLLIE_CONNECT_TIMEOUT. Not under ASan, which must be the
# first library loaded. The _tuned variant: with a tuning file, COLLIE_ALGO=ring and a
# progress thread.
add_library(alloc_fail_shim MODULE ${CMAKE_CURRENT_LIST_DIR}/alloc_fail_shim.c)
target_link_libraries(alloc_fail_shim PRIVATE ${CMAKE_DL_LIBS})
add_executable(alloc_fail_rank ${CMAKE_CURRENT_LIST_DIR}/alloc_fail_rank.c)
target_link_libraries(alloc_fail_rank PRIVATE collie)
# One script, its scenarios split over three tests rather than one of 80 s, so that a
# parallel run can spread them.
set(ALLOC_FAIL_TEST bash ${CMAKE_CURRENT_LIST_DIR}/alloc_fail_test.sh $<TARGET_FILE:collie-run>
                    $<TARGET_FILE:alloc_fail_rank> $<TARGET_FILE:alloc_fail_shim>)
add_test(NAME fault_alloc_fail_shm COMMAND ${ALLOC_FAIL_TEST} shm:1 shm:0 shm:0:after-init)
add_test(NAME fault_alloc_fail_tcp COMMAND ${ALLOC_FAIL_TEST} tcp:1 tcp:0:after-init)
add_test(NAME fault_alloc_fail_threads COMMAND ${ALLOC_FAIL_TEST} threads)
add_test(NAME fault_alloc_fail_tuned COMMAND ${ALLOC_FAIL_TEST} shm:1 shm:0:after-init)
set_tests_properties(fault_alloc_fail_shm fault_alloc_fail_tcp fault_alloc_fail_threads PROPERTIES TIMEOUT 300 LABELS "fault;noasan")
set_tests_properties(fault_alloc_fail_tuned PROPERTIES TIMEOUT 300 LABELS "fault;noasan"
                     ENVIRONMENT "ALLOC_FAIL_TUNED=1;COLLIE_PROGRESS_THREAD=1")

# A meeting file (/tmp/collie-UID-KEY.id) left by a killed rank 0 and found by the next job
# of the same key: its rank 1 joined the dead address and failed; it now waits past it.
add_test(NAME fault_stale_meeting_file COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/stale_meeting_test.sh
         $<TARGET_FILE:p2p_check>)
set_tests_properties(fault_stale_meeting_file PROPERTIES TIMEOUT 90 LABELS fault ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo")
# Rank 0, which passes failure notices on, stopped: a rank that aborted told its TCP peers
# nothing but the connection's close ("died or destroyed its communicator early"); its last
# words on the connection now say why (transport/tcp.c).
add_test(NAME fault_frozen_relay_tcp_3 COMMAND $<TARGET_FILE:collie-run> -n 3 --timeout 50 ${FAULT_BIN} frozen-relay)
set_tests_properties(fault_frozen_relay_tcp_3 PROPERTIES TIMEOUT 60 LABELS fault
                     ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo;COLLIE_TRANSPORT=tcp;COLLIE_EXEC_TIMEOUT=30")
