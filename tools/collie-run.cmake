# collie-run, the local launcher. It uses only libc and does not link libcollie, so it
# builds (and its tests run) even while the library does not compile.
add_executable(collie-run
  ${CMAKE_CURRENT_LIST_DIR}/collie-run.c
  ${CMAKE_CURRENT_LIST_DIR}/collie-run-options.c
  ${CMAKE_CURRENT_LIST_DIR}/collie-run-spawn.c
  ${CMAKE_CURRENT_LIST_DIR}/collie-run-supervise.c
  ${CMAKE_CURRENT_LIST_DIR}/collie-run-relay.c)
target_include_directories(collie-run PRIVATE ${PROJECT_SOURCE_DIR}/src) # headers only
install(TARGETS collie-run)
