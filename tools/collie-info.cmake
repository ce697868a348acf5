# collie-info: version, parameters with their values and sources, transports available on
# this machine, reduction ISA; --markdown prints the parameter table (docs/environment.md).
add_executable(collie-info ${CMAKE_CURRENT_LIST_DIR}/collie-info.c)
target_link_libraries(collie-info PRIVATE collie_internal)
install(TARGETS collie-info)
