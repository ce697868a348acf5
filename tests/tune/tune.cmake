# The tuning part (src/tune/, tools/collie-tune.c, docs/tuning.md): the tuning-file parser,
# the cost model's choice, COLLIE_PROTO, COLLIE_TUNING_FILE at communicator creation; and
# end to end: collie-tune writes a file that all_reduce_perf then runs with.
add_executable(test_tune ${CMAKE_CURRENT_LIST_DIR}/test_tune.c)
target_link_libraries(test_tune PRIVATE collie_internal m)
add_test(NAME tune_unit COMMAND test_tune)
set_tests_properties(tune_unit PROPERTIES TIMEOUT 60 LABELS unit
                     ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo;COLLIE_CONNECT_TIMEOUT=30;COLLIE_EXEC_TIMEOUT=60")

add_test(NAME tune_end_to_end
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/tune_e2e.sh $<TARGET_FILE:collie-tune> $<TARGET_FILE:all_reduce_perf>)
set_tests_properties(tune_end_to_end PROPERTIES TIMEOUT 180 LABELS tune
                     ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo;COLLIE_CONNECT_TIMEOUT=30;COLLIE_EXEC_TIMEOUT=60")
