/* Named POSIX shared-memory segments of this host's ranks: mapping the one a peer made
 * (its box, its shared-memory FIFOs). */
#ifndef ORB_TRANSPORT_SEGMENT_H
#define ORB_TRANSPORT_SEGMENT_H

#include <stddef.h>

#include "orbit.h"

/* Maps bytes of the segment name that rank peer made: ORB_ERR_SYSTEM when it cannot be
 * opened, ORB_ERR_NO_MEMORY when it cannot be mapped, with err saying so. */
orb_status_t orb_segment_map_peer(const char *name, int peer, size_t bytes, void **out, char *err, size_t errlen);

#endif
