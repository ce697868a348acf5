/* What travels in front of every message, on every transport: enough to match it against
 * what the receiver expects and, when ranks disagree, to say exactly how. */
#ifndef COLLIE_WIRE_H
#define COLLIE_WIRE_H

#include <stdint.h>

#define COLLIE_WIRE_MAGIC 0x434c4d53u /* "CLMS" */
/* A rank's last words before it closes a TCP connection after its communicator failed
 * (transport/tcp.c): this header, with the failure's result in `seq` and its sentence, of
 * `nbytes` bytes, behind it. */
#define COLLIE_WIRE_FAIL_MAGIC 0x434c4641u /* "CLFA" */

typedef struct {
  uint32_t magic;
  uint8_t coll;   /* collie_coll_t of the operation (SEND for point to point) */
  uint8_t dtype;
  uint8_t redop;
  uint8_t flags;
  int32_t root;
  int32_t src_rank;
  uint64_t seq;    /* collective number on the communicator (0 for point to point) */
  uint64_t count;  /* the operation's signature count (elements)                  */
  uint64_t nbytes; /* this message's payload                                      */
  uint64_t counts_hash; /* allgatherv, reduce_scatterv: a hash of recvcounts, which every
                        * rank passes alike (the count above is only their sum); else 0 */
} collie_wire_hdr_t;

_Static_assert(sizeof(collie_wire_hdr_t) == 48, "wire header is 48 bytes");

#endif
