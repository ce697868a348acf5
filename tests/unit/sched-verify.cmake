# Symbolic verification of every algorithm's schedules (tests/unit/sched_verify.h).
# Compiles the schedule builder and the algorithms directly rather than linking the
# library, so it builds even while other parts of the library are in flux.
file(GLOB COLLIE_ALGO_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/algo/*.c)
# (src/algo/native/ is left out: the shared-memory collectives are not schedules.)
add_executable(test_sched_verify
  ${CMAKE_CURRENT_LIST_DIR}/test_sched_verify.c
  ${CMAKE_CURRENT_LIST_DIR}/sched_verify.c
  ${CMAKE_CURRENT_LIST_DIR}/sched_verify_selftest.c
  ${PROJECT_SOURCE_DIR}/src/sched/sched.c
  ${COLLIE_ALGO_SOURCES})
target_include_directories(test_sched_verify PRIVATE
  ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include ${CMAKE_CURRENT_LIST_DIR})
find_package(Threads REQUIRED)
target_link_libraries(test_sched_verify PRIVATE Threads::Threads)
add_test(NAME sched_verify COMMAND test_sched_verify)
set_tests_properties(sched_verify PROPERTIES TIMEOUT 300 LABELS "unit")
