#include "transport/endpoint.h"

/* In order of preference: the first that reaches a pair connects it. */
const orb_transport_t *const orb_transports[] = {&orb_shm_transport, &orb_tcp_transport, NULL};
