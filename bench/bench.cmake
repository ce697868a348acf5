# Benchmarks (not tests): probes of the machine's limits, compared against in bench/ scripts.
add_executable(memcpy_probe ${CMAKE_CURRENT_LIST_DIR}/memcpy_probe.c)
add_executable(cma_probe ${CMAKE_CURRENT_LIST_DIR}/cma_probe.c)
add_executable(tcp_probe ${CMAKE_CURRENT_LIST_DIR}/tcp_probe.c)
add_executable(exchange_probe ${CMAKE_CURRENT_LIST_DIR}/exchange_probe.c)
add_executable(yield_probe ${CMAKE_CURRENT_LIST_DIR}/yield_probe.c)
find_package(Threads REQUIRED)
target_link_libraries(tcp_probe PRIVATE Threads::Threads)
target_link_libraries(exchange_probe PRIVATE Threads::Threads)
