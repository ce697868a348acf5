# collie-tune: measures alpha/beta (shm, tcp), the oversubscription penalty, gamma and
# delta on this machine and writes a tuning file for COLLIE_TUNING_FILE (docs/tuning.md).
add_executable(collie-tune ${CMAKE_CURRENT_LIST_DIR}/collie-tune.c)
target_link_libraries(collie-tune PRIVATE collie_internal m)
install(TARGETS collie-tune)
