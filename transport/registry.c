#include "transport/endpoint.h"

/* In order of preference: the first that reaches a pair connects it. */
const orb_transport_t *const orb_transports[] = {&orb_shm_transport,
#ifdef ORB_HAVE_IB
                                                 &orb_ib_transport,
#endif
                                                 &orb_tcp_transport, NULL};
