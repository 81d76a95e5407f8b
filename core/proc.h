/* Process and host identity: is a peer process still alive, which host are we on. */
#ifndef ORB_CORE_PROC_H
#define ORB_CORE_PROC_H
#include <stdint.h>
#include <sys/types.h>

/* Start time of pid (clock ticks since boot, /proc/pid/stat field 22), 0 if unknown. */
uint64_t orb_proc_start_time(pid_t pid);
/* 1 if pid runs and started at start (0: do not check), 0 if it is gone or a zombie. */
int orb_proc_alive(pid_t pid, uint64_t start);
/* Ranks with equal host ids share memory: hostname, boot id and network namespace
 * (so network namespaces act as separate hosts), or ORBIT_HOSTID when set. */
uint64_t orb_host_id(void);
/* This boot's id (/proc/sys/kernel/random/boot_id, without its newline): 0, or -1 when unknown. */
int orb_boot_id(char *buf, size_t len);
uint64_t orb_hash64(const void *data, size_t len, uint64_t seed);
/* This process's rank on its host as the launcher says it (LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK,
 * SLURM_LOCALID, MPI_LOCALRANKID: the first set), or -1 when none is set to a number >= 0. */
int orb_env_local_rank(void);
#endif
