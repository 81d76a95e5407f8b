/* orb_comm_init_env: rank, size and rendezvous from the environment launchers already set
 * (torchrun, orbitrun, mpirun, srun), and the job's secret from ORBIT_SECRET or derived. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_impl.h"
#include "comm/cuda_hooks.h"
#include "core/log.h"
#include "core/param.h"
#include "core/proc.h"

static const char *env_first(const char *const *names, const char **which)
{
    for (; *names; names++) {
        const char *v = getenv(*names);
        if (v && *v) {
            if (which)
                *which = *names;
            return v;
        }
    }
    return NULL;
}

static int parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

orb_status_t orb_comm_init_env(orb_comm_t *comm)
{
    static const char *const rank_vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID", NULL};
    static const char *const size_vars[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", NULL};
    if (!comm) {
        orb_set_thread_error("orb_comm_init_env: comm (the output pointer) is NULL");
        return ORB_ERR_INVALID_ARG;
    }
    *comm = NULL;
    const char *rv = NULL, *sv = NULL;
    const char *rs = env_first(rank_vars, &rv), *ss = env_first(size_vars, &sv);
    if (!rs || !ss) {
        orb_set_thread_error("orb_comm_init_env: no launcher environment: set RANK and WORLD_SIZE (torchrun), or run "
                             "under orbitrun, mpirun (OMPI_COMM_WORLD_*) or srun (SLURM_PROCID/SLURM_NTASKS)");
        return ORB_ERR_INVALID_ARG;
    }
    long rank, size, port = 29500;
    if (parse_int(ss, 1, ORB_MAX_RANKS, &size) != 0) {
        orb_set_thread_error("orb_comm_init_env: %s=\"%s\" is not a world size in 1..%d", sv, ss, ORB_MAX_RANKS);
        return ORB_ERR_INVALID_ARG;
    }
    if (parse_int(rs, 0, size - 1, &rank) != 0) {
        orb_set_thread_error("orb_comm_init_env: %s=\"%s\" is not a rank in 0..%ld", rv, rs, size - 1);
        return ORB_ERR_INVALID_ARG;
    }
    const int local = orb_env_local_rank();
    const char *addr = getenv("MASTER_ADDR");
    if (!addr || !*addr) {
        /* One-host jobs need no address: everybody is on loopback. */
        const char *lsize = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
        const char *nnodes = getenv("SLURM_NNODES");
        if ((lsize && !strcmp(lsize, ss)) || (nnodes && !strcmp(nnodes, "1")) || size == 1) {
            addr = "127.0.0.1";
        } else {
            orb_set_thread_error("orb_comm_init_env: rank %ld: MASTER_ADDR is not set: export MASTER_ADDR=<host of rank "
                                 "0> (and MASTER_PORT) on every rank (mpirun -x MASTER_ADDR -x MASTER_PORT)", rank);
            return ORB_ERR_INVALID_ARG;
        }
    }
    const char *ps = getenv("MASTER_PORT");
    if (ps && *ps && parse_int(ps, 1, 65535, &port) != 0) {
        orb_set_thread_error("orb_comm_init_env: rank %ld: MASTER_PORT=\"%s\" is not a port number", rank, ps);
        return ORB_ERR_INVALID_ARG;
    }
    orb_sockaddr_t a;
    if (orb_sockaddr_resolve(addr, (int)port, &a) != ORB_OK) {
        orb_set_thread_error("orb_comm_init_env: rank %ld: cannot resolve MASTER_ADDR=\"%s\"", rank, addr);
        return ORB_ERR_INVALID_ARG;
    }
    uint8_t secret[ORB_SECRET_BYTES];
    const char *sec = orb_param_str(ORB_PARAM_S_SECRET);
    if (*sec) {
        if (orb_comm_parse_hex(sec, secret, sizeof secret) != 0) {
            orb_set_thread_error("orb_comm_init_env: rank %ld: ORBIT_SECRET must be 32 hex digits", rank);
            return ORB_ERR_INVALID_ARG;
        }
    } else {
        /* No shared secret: derive one every rank can compute. Anyone who can reach the port
         * could join, so launchers should set ORBIT_SECRET (orbitrun does). */
        char buf[512];
        const char *job = getenv("SLURM_JOB_ID");
        if (!job)
            job = getenv("OMPI_MCA_ess_base_jobid");
        int n = snprintf(buf, sizeof buf, "%s:%ld:%ld:%s", addr, port, size, job ? job : "");
        uint64_t h1 = orb_hash64(buf, (size_t)n, 1), h2 = orb_hash64(buf, (size_t)n, 2);
        memcpy(secret, &h1, 8);
        memcpy(secret + 8, &h2, 8);
        ORB_INFO("ORBIT_SECRET is not set: the bootstrap secret is derived from MASTER_ADDR/MASTER_PORT");
    }
    orb_unique_id_t id;
    orb_id_encode(&id, &a, secret);
    orb_status_t st = orb_comm_init_rank(comm, (int)size, id, (int)rank);
    if (st == ORB_OK) {
        (*comm)->local_rank = local >= 0 ? local : 0;
        if (local >= 0)
            orb_cuda_comm_bind_local_rank(*comm, local); /* no CUDA call until a device buffer shows up */
    }
    return st;
}

