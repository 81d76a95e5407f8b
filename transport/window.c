/* This process's windows and the table its peers read (window.h). */
#include "transport/window.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static orb_window_table_t *table; /* mapped read-write here, read-only by peers */
static int table_fd = -1;
static uint64_t next_serial = 1;
static _Atomic int live; /* windows now: orb_window_holds looks no further while 0 */
static _Atomic int top;  /* entries from here on are free: what orb_window_holds scans */

/* Under lock. */
static int table_open(char *err, size_t errlen)
{
    if (table)
        return 0;
    int fd = memfd_create("orbit-windows", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)sizeof *table) != 0) {
        snprintf(err, errlen, "cannot make the window table (memfd_create/ftruncate: %s)", strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    void *m = mmap(NULL, sizeof *table, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        snprintf(err, errlen, "cannot map the window table: %s", strerror(errno));
        close(fd);
        return -1;
    }
    table = m; /* zeroed by ftruncate */
    table->magic = ORB_WINDOW_MAGIC;
    table_fd = fd;
    return 0;
}

/* Under lock: an entry changes between two odd/even steps of the version (release stores,
 * not a fence, as window.h reads: each field is seen only after the odd count). */
static void table_write(int i, const orb_window_entry_t *e)
{
    atomic_fetch_add_explicit(&table->version, 1, memory_order_acq_rel);
    orb_window_entry_t *d = &table->entry[i];
    __atomic_store_n(&d->base, e->base, __ATOMIC_RELEASE);
    __atomic_store_n(&d->len, e->len, __ATOMIC_RELEASE);
    __atomic_store_n(&d->ino, e->ino, __ATOMIC_RELEASE);
    __atomic_store_n(&d->fd, e->fd, __ATOMIC_RELEASE);
    __atomic_store_n(&d->serial, e->serial, __ATOMIC_RELEASE);
    atomic_fetch_add_explicit(&table->version, 1, memory_order_release);
}

int orb_window_table_fd(char *err, size_t errlen)
{
    pthread_mutex_lock(&lock);
    const int fd = table_open(err, errlen) == 0 ? table_fd : -1;
    pthread_mutex_unlock(&lock);
    return fd;
}

orb_status_t orb_window_alloc(size_t bytes, void **ptr, char *err, size_t errlen)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (bytes > SIZE_MAX - page) {
        snprintf(err, errlen, "%zu bytes is more than any process can map", bytes);
        return ORB_ERR_INVALID_ARG;
    }
    const size_t len = (bytes + page - 1) / page * page;
    pthread_mutex_lock(&lock);
    int slot = -1;
    if (table_open(err, errlen) != 0) {
        pthread_mutex_unlock(&lock);
        return ORB_ERR_SYSTEM;
    }
    for (int i = 0; i < ORB_WINDOWS_MAX && slot < 0; i++)
        if (!table->entry[i].serial)
            slot = i;
    if (slot < 0) {
        pthread_mutex_unlock(&lock);
        snprintf(err, errlen, "this process holds %d windows already, the most it can; free some with "
                 "orb_mem_free, or allocate fewer, larger ones", ORB_WINDOWS_MAX);
        return ORB_ERR_NO_MEMORY;
    }
    int fd = memfd_create("orbit-window", MFD_CLOEXEC);
    struct stat sb;
    if (fd < 0 || ftruncate(fd, (off_t)len) != 0 || fstat(fd, &sb) != 0) {
        const int e = errno;
        if (fd >= 0)
            close(fd);
        pthread_mutex_unlock(&lock);
        snprintf(err, errlen, "cannot make a shared window of %zu bytes: %s", len, strerror(e));
        return e == ENOMEM || e == ENOSPC || e == EFBIG ? ORB_ERR_NO_MEMORY : ORB_ERR_SYSTEM;
    }
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        const int e = errno;
        close(fd);
        pthread_mutex_unlock(&lock);
        snprintf(err, errlen, "cannot map a shared window of %zu bytes: %s", len, strerror(e));
        return e == ENOMEM ? ORB_ERR_NO_MEMORY : ORB_ERR_SYSTEM;
    }
    const orb_window_entry_t e = {.serial = next_serial++, .base = (uint64_t)(uintptr_t)m, .len = len,
                                  .ino = (uint64_t)sb.st_ino, .fd = fd};
    table_write(slot, &e);
    if (slot >= atomic_load(&top))
        atomic_store(&top, slot + 1);
    atomic_fetch_add(&live, 1);
    pthread_mutex_unlock(&lock);
    *ptr = m;
    return ORB_OK;
}

orb_status_t orb_window_free(void *ptr, char *err, size_t errlen)
{
    const uint64_t p = (uint64_t)(uintptr_t)ptr;
    pthread_mutex_lock(&lock);
    for (int i = 0; table && i < ORB_WINDOWS_MAX; i++) {
        const orb_window_entry_t e = table->entry[i];
        if (!e.serial || e.base != p)
            continue;
        table_write(i, &(orb_window_entry_t){0});
        atomic_fetch_sub(&live, 1);
        pthread_mutex_unlock(&lock);
        munmap(ptr, e.len); /* peers that mapped it keep their mapping until they drop it */
        close(e.fd);
        return ORB_OK;
    }
    pthread_mutex_unlock(&lock);
    snprintf(err, errlen, "%p is not the start of a window of this process (a pointer orb_mem_alloc returned "
             "and orb_mem_free has not freed yet)", ptr);
    return ORB_ERR_INVALID_ARG;
}

int orb_window_holds(const void *ptr, size_t bytes)
{
    if (!atomic_load_explicit(&live, memory_order_acquire) || !ptr) /* then table is set */
        return 0;
    const uint64_t p = (uint64_t)(uintptr_t)ptr;
    for (;;) { /* read as a peer reads it (no lock on a call's path): a consistent pass */
        const uint64_t v = orb_window_read_begin(table);
        if (v & 1)
            continue;
        int in = 0;
        const int n = atomic_load_explicit(&top, memory_order_relaxed);
        for (int i = 0; i < n && !in; i++) {
            const orb_window_entry_t e = orb_window_entry_load(&table->entry[i]);
            in = e.serial && orb_window_spans(e.base, e.len, p, bytes);
        }
        if (orb_window_read_valid(table, v))
            return in;
    }
}
