/* Host identity: ranks with equal ids can share memory. */
#ifndef COLLIE_HOSTID_H
#define COLLIE_HOSTID_H

#include <stddef.h>

/* COLLIE_HOST_ID if set, else hostname + boot id + the identity of the /dev/shm this
 * process sees (so network namespaces with a private /dev/shm count as other hosts). */
void collie_host_id(char *out, size_t len);

#endif
