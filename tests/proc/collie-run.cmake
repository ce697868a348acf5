# collie-run, the local launcher: environment, rendezvous socket, exit statuses,
# timeouts, signal forwarding and --tag-output, with shell scripts as ranks.
add_test(NAME collie_run COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/collie_run_test.sh $<TARGET_FILE:collie-run>)
set_tests_properties(collie_run PROPERTIES TIMEOUT 60)
