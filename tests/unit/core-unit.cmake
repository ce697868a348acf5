# Unit tests of the core: parameters, unique ids, public API errors, socket helpers, the
# shared-memory ring, the copies and their choice of stores, the usable CPUs (cgroup quotas); collie-info and
# the generated docs/environment.md; installing the package and building examples/hello.c against it.
foreach(t params unique_id api_errors socket shm_ring copy store_choice cpus)
  add_executable(test_core_${t} ${CMAKE_CURRENT_LIST_DIR}/test_core_${t}.c)
  target_link_libraries(test_core_${t} PRIVATE collie_internal)
endforeach()

add_test(NAME unit_params COMMAND test_core_params)
add_test(NAME unit_unique_id COMMAND test_core_unique_id)
add_test(NAME unit_api_errors COMMAND test_core_api_errors)
add_test(NAME unit_socket_helpers COMMAND test_core_socket)
add_test(NAME shm_ring_boundaries COMMAND test_core_shm_ring)
add_test(NAME unit_copy COMMAND test_core_copy)
add_test(NAME unit_store_choice COMMAND test_core_store_choice)
add_test(NAME unit_usable_cpus COMMAND test_core_cpus)
set_tests_properties(unit_params unit_unique_id unit_api_errors unit_socket_helpers unit_copy unit_store_choice
                     unit_usable_cpus
                     PROPERTIES TIMEOUT 30 LABELS unit ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo")
# The same with a progress thread moving the transfers while the ranks wait.
add_test(NAME shm_ring_boundaries_progress_thread COMMAND test_core_shm_ring)
set_tests_properties(shm_ring_boundaries PROPERTIES TIMEOUT 120 LABELS unit
                     ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo;COLLIE_CONNECT_TIMEOUT=30;COLLIE_EXEC_TIMEOUT=60")
set_tests_properties(shm_ring_boundaries_progress_thread PROPERTIES TIMEOUT 120 LABELS unit
                     ENVIRONMENT "COLLIE_SOCKET_IFNAME=lo;COLLIE_CONNECT_TIMEOUT=30;COLLIE_EXEC_TIMEOUT=60;COLLIE_PROGRESS_THREAD=1")

add_test(NAME collie_info_cli COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/collie_info_test.sh $<TARGET_FILE:collie-info>)
set_tests_properties(collie_info_cli PROPERTIES TIMEOUT 30 LABELS unit)

add_test(NAME docs_environment_current
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/docs_env_test.sh ${PROJECT_SOURCE_DIR} $<TARGET_FILE:collie-info>)
set_tests_properties(docs_environment_current PROPERTIES TIMEOUT 30 LABELS unit)

add_test(NAME clang_warnings COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/clang_warnings_test.sh ${PROJECT_SOURCE_DIR})
# Not about memory: once, in the plain suite.
set_tests_properties(clang_warnings PROPERTIES TIMEOUT 120 LABELS "unit;noasan")

add_test(NAME install_package
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/install_test.sh ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR})
# Packaging, not memory: an ASan-built static library cannot link into a plain program.
set_tests_properties(install_package PROPERTIES TIMEOUT 300 LABELS "install;noasan")
