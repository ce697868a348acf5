# Benchmarks (not tests): probes of the machine's limits, compared against in bench/ scripts.
add_executable(memcpy_probe ${CMAKE_CURRENT_LIST_DIR}/memcpy_probe.c)
add_executable(cma_probe ${CMAKE_CURRENT_LIST_DIR}/cma_probe.c)
add_executable(tcp_probe ${CMAKE_CURRENT_LIST_DIR}/tcp_probe.c)
add_executable(exchange_probe ${CMAKE_CURRENT_LIST_DIR}/exchange_probe.c)
add_executable(yield_probe ${CMAKE_CURRENT_LIST_DIR}/yield_probe.c)
add_executable(line_probe ${CMAKE_CURRENT_LIST_DIR}/line_probe.c)
# collie's own streaming copy, so that the floor is measured with the copy collie uses.
add_executable(copy_pair_probe ${CMAKE_CURRENT_LIST_DIR}/copy_pair_probe.c ${PROJECT_SOURCE_DIR}/src/core/copy.c)
target_include_directories(copy_pair_probe PRIVATE ${PROJECT_SOURCE_DIR}/src)
# memcpy against collie's copy where memcpy has its page-offset slow path.
add_executable(page_offset_probe ${CMAKE_CURRENT_LIST_DIR}/page_offset_probe.c ${PROJECT_SOURCE_DIR}/src/core/copy.c)
target_include_directories(page_offset_probe PRIVATE ${PROJECT_SOURCE_DIR}/src)
find_package(Threads REQUIRED)
target_link_libraries(tcp_probe PRIVATE Threads::Threads)
target_link_libraries(exchange_probe PRIVATE Threads::Threads)
target_link_libraries(copy_pair_probe PRIVATE Threads::Threads)
