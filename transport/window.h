/* Windows: host memory orb_mem_alloc hands out (ncclMemAlloc's habit), which same-host peers
 * map and read in place with ordinary loads: no kernel copy per piece (process_vm_readv pins
 * and copies 4 KiB page by page, 11-13 GB/s on a Zen 4 VM where memcpy from a shared mapping
 * ran 46-49), and a reduction reads the peer's block where it lies instead of the slot.
 *
 * Each window is a memfd this process keeps open. The process lists its live windows in a
 * table in one more memfd, which a peer maps read-only at init (comm_cma.c) through
 * /proc/<pid>/fd/<n> (the same ptrace rule as a single-copy read). A sender posts a piece
 * from a window as its address (ORB_PIECE_REMOTE, as cma.h); the receiver finds the window
 * in the sender's table, maps it once (cached by the window's serial and inode), and reads.
 * A window is freed only when no call uses it (the caller's promise, as for any buffer), so
 * the entry a receiver finds for a piece in flight is live. */
#ifndef ORB_TRANSPORT_WINDOW_H
#define ORB_TRANSPORT_WINDOW_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "orbit.h"

/* Windows a process holds at once. */
#define ORB_WINDOWS_MAX 250

typedef struct {
    uint64_t serial; /* never reused in this process (0: a free entry) */
    uint64_t base, len;
    uint64_t ino; /* the memfd's inode: a peer checks the file it opened is this one */
    int32_t fd;
    uint32_t pad;
} orb_window_entry_t;

/* The table a peer maps: entries change under a sequence count (odd while being written). */
typedef struct {
    uint64_t magic;
    _Atomic uint64_t version;
    orb_window_entry_t entry[ORB_WINDOWS_MAX];
} orb_window_table_t;

#define ORB_WINDOW_MAGIC 0x6f726277696e3031ull /* "orbwin01" */

/* Whether [addr, addr + bytes) lies inside [base, base + len) (no overflow on either end). */
static inline int orb_window_spans(uint64_t base, uint64_t len, uint64_t addr, uint64_t bytes)
{
    return addr >= base && bytes <= len && addr - base <= len - bytes;
}

/* How a reader passes over the table, in this process or a peer's: v = orb_window_read_begin
 * (odd: an entry is being written, begin again), orb_window_entry_load each entry it needs,
 * then orb_window_read_valid(t, v): 0 when the table moved under it (pass again). */
static inline uint64_t orb_window_read_begin(const orb_window_table_t *t)
{
    return atomic_load_explicit(&t->version, memory_order_acquire);
}

/* (acquire loads, not a fence: ThreadSanitizer builds refuse fences; on x86 both are plain
 * loads. They keep the closing look at the version after every field read.) */
static inline orb_window_entry_t orb_window_entry_load(const orb_window_entry_t *e)
{
    return (orb_window_entry_t){.serial = __atomic_load_n(&e->serial, __ATOMIC_ACQUIRE),
                                .base = __atomic_load_n(&e->base, __ATOMIC_ACQUIRE),
                                .len = __atomic_load_n(&e->len, __ATOMIC_ACQUIRE),
                                .ino = __atomic_load_n(&e->ino, __ATOMIC_ACQUIRE),
                                .fd = __atomic_load_n(&e->fd, __ATOMIC_ACQUIRE)};
}

static inline int orb_window_read_valid(const orb_window_table_t *t, uint64_t v)
{
    return atomic_load_explicit(&t->version, memory_order_acquire) == v;
}

/* This process: allocate / free a window (err says why on failure). */
orb_status_t orb_window_alloc(size_t bytes, void **ptr, char *err, size_t errlen);
orb_status_t orb_window_free(void *ptr, char *err, size_t errlen);
/* 1 when [p, p + bytes) lies inside one live window of this process. Free of cost while the
 * process has none. */
int orb_window_holds(const void *p, size_t bytes);
/* The fd of this process's table, made at the first call; -1 when it cannot be (err says). */
int orb_window_table_fd(char *err, size_t errlen);

/* A peer's windows, as this process sees them. */
typedef struct orb_peer_windows orb_peer_windows_t;
/* Map process pid's table (its fd table_fd); NULL with err on failure. */
orb_peer_windows_t *orb_peer_windows_open(int32_t pid, int32_t table_fd, char *err, size_t errlen);
/* Where [addr, addr + bytes) of the peer's address space lies in this one, when it is inside
 * one of the peer's windows (mapped at the first such piece and kept); NULL when it is not, or
 * the window cannot be mapped (the caller falls back to a single-copy read). Not thread-safe:
 * one caller at a time per handle (a communicator's executor). */
const void *orb_peer_windows_find(orb_peer_windows_t *w, uint64_t addr, size_t bytes);
void orb_peer_windows_close(orb_peer_windows_t *w);

#endif
