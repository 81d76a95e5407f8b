/* cuda_ipc: the memory behind the device executor's FIFOs (kernels/exec_cuda.h).
 *
 * Every rank owns two regions with the same layout: device memory (cudaMalloc, exported with
 * cudaIpcGetMemHandle) and a POSIX shared-memory segment registered with CUDA as mapped host
 * memory. A rank's region holds the receive FIFOs of every (sender, channel) and the done
 * words of its own sends; the host segment starts with the rank's control page (error record,
 * abort word), which every peer maps too. For each pair of ranks:
 *   - same GPU, one process (orb_comm_init_all): the peer's device pointer as is;
 *   - same GPU, two processes: cudaIpcOpenMemHandle;
 *   - two GPUs with peer access both ways (cudaDeviceCanAccessPeer): the same, with peer
 *     access enabled;
 *   - two GPUs that cannot reach each other: the FIFOs live in host shared memory instead
 *     (every piece crosses PCIe twice), and init says so.
 * Only ranks on one host: the device executor has no network proxy. */
#ifndef ORB_TRANSPORT_CUDA_IPC_H
#define ORB_TRANSPORT_CUDA_IPC_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/exec_cuda.h"
#include "orbit.h"
#include "transport/bootstrap.h"

typedef struct {
    int rank, nranks, nchannels;
    uint32_t nslots;
    size_t stride[ORB_CUDA_NPROTOS]; /* bytes per slot of each protocol */
    int device;                      /* this rank's CUDA device (current on the calling thread) */
    const char *shm_name;            /* unique on the host for this rank and communicator */
    double deadline;                 /* for the bootstrap exchanges */
    cudaStream_t stream; /* the communicator's own non-blocking stream, for setup's device work */
} orb_cuda_ipc_args_t;

typedef enum {
    ORB_CUDA_LINK_SELF = 0,
    ORB_CUDA_LINK_SAME_GPU_THREADS, /* same GPU, same process */
    ORB_CUDA_LINK_SAME_GPU_IPC,     /* same GPU, two processes */
    ORB_CUDA_LINK_P2P,              /* two GPUs, peer access */
    ORB_CUDA_LINK_HOST,             /* two GPUs, staged through host shared memory */
} orb_cuda_link_t;

typedef struct {
    orb_cuda_ipc_args_t a;
    size_t region_bytes; /* full layout */
    size_t host_bytes;   /* this rank's segment: the control page, or the full layout when staged */
    char *dev;           /* this rank's device region */
    char **peer_dev;     /* [nranks] each rank's device region as mapped here, NULL if not */
    uint8_t *ipc_opened; /* [nranks] peer_dev came from cudaIpcOpenMemHandle */
    char **host;         /* [nranks] each rank's segment, host pointers */
    char **host_dev;     /* [nranks] the same, device pointers */
    size_t *host_len;    /* [nranks] */
    uint8_t *registered; /* [nranks] host[] is registered with CUDA */
    uint8_t *link;       /* [nranks] orb_cuda_link_t */
    int shm_linked;      /* our segment's name still exists */
    char shm_name[96];
} orb_cuda_ipc_t;

/* Collective over bs: every rank calls it with the same nranks/nchannels/nslots/stride. On
 * failure every rank fails (an ok flag travels with each exchange) and err says why. */
orb_status_t orb_cuda_ipc_setup(orb_cuda_ipc_t *x, const orb_cuda_ipc_args_t *args, orb_bootstrap_t *bs,
                                const orb_card_t *cards, char *err, size_t errlen);

/* The connection table the kernels use: conns[peer * nchannels + ch], positions zero. */
void orb_cuda_ipc_conns(const orb_cuda_ipc_t *x, orb_cuda_conn_t *conns);

/* Rank r's control page: as the host sees it, and as this rank's kernels see it. */
orb_cuda_ctrl_t *orb_cuda_ipc_ctrl(const orb_cuda_ipc_t *x, int r);
orb_cuda_ctrl_t *orb_cuda_ipc_ctrl_dev(const orb_cuda_ipc_t *x, int r);

const char *orb_cuda_link_name(orb_cuda_link_t link);

/* Unmap, close and free everything (also after a failed setup). No kernel may still run. */
void orb_cuda_ipc_close(orb_cuda_ipc_t *x);

#endif
