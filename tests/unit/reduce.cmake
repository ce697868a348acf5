# Reduction kernels (src/reduce). The test compiles those sources directly, so it builds
# and runs even while the rest of the library does not.
file(GLOB COLLIE_REDUCE_SRCS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/reduce/*.c)
add_executable(test_reduce ${CMAKE_CURRENT_LIST_DIR}/test_reduce.c ${COLLIE_REDUCE_SRCS})
target_include_directories(test_reduce PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(test_reduce PRIVATE m)
add_test(NAME reduce_kernels COMMAND test_reduce)
# The same checks with dispatch forced to the portable kernels.
add_test(NAME reduce_kernels_portable COMMAND test_reduce)
set_tests_properties(reduce_kernels PROPERTIES TIMEOUT 120 LABELS unit)
set_tests_properties(reduce_kernels_portable PROPERTIES TIMEOUT 120 LABELS unit
                     ENVIRONMENT COLLIE_REDUCE_ISA=portable)
