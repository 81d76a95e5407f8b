/* Single-copy reads between ranks on one host (Linux cross-memory attach,
 * process_vm_readv): a sender posts a large piece as the address of its own buffer instead
 * of copying it into the slot, and the receiver reads it from there straight into its
 * output: one copy instead of two, as Open MPI's vader does. Only where a probe read of the
 * peer's token succeeded at init (ptrace rules, containers and PID namespaces can forbid
 * it); the communicator sets that up (comm_cma.c). */
#ifndef ORB_TRANSPORT_CMA_H
#define ORB_TRANSPORT_CMA_H

#include <stddef.h>
#include <stdint.h>

#include "orbit.h"

/* Where this process keeps its probe token, and the token (random per process). */
uint64_t orb_cma_token_addr(void);
uint64_t orb_cma_token(void);

/* 1 when pid's token at addr reads back as token: a single-copy read of that process works. */
int orb_cma_probe(int32_t pid, uint64_t addr, uint64_t token);

/* Read bytes from addr in process pid into dst. ORB_ERR_PEER_LOST when the process is gone,
 * ORB_ERR_INTERNAL otherwise (the message says which errno). */
orb_status_t orb_cma_read(int32_t pid, void *dst, uint64_t addr, size_t bytes, char *err, size_t errlen);

#endif
