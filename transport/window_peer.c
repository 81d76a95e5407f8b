/* A peer's windows as this process maps them (window.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "transport/window.h"

/* Windows of one peer kept mapped; the least recently used goes when a new one needs room. */
#define PEER_MAPS 16

typedef struct {
    uint64_t serial, base, len;
    const char *map;
    uint64_t used; /* tick of the last find that hit it */
} peer_map_t;

struct orb_peer_windows {
    int32_t pid;
    const orb_window_table_t *table;
    uint64_t checked; /* the table's version when every kept map was last found live in it */
    uint64_t tick;
    peer_map_t map[PEER_MAPS];
};

static void *map_fd_of(int32_t pid, int32_t fd, size_t len, uint64_t ino)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, (int)fd);
    const int f = open(path, O_RDONLY | O_CLOEXEC);
    if (f < 0)
        return NULL;
    struct stat sb;
    void *m = MAP_FAILED;
    /* the file must be the one the table names and at least that long: an fd number the peer
     * closed and reused since would otherwise map something else */
    if (fstat(f, &sb) == 0 && (!ino || (uint64_t)sb.st_ino == ino) && (uint64_t)sb.st_size >= len)
        m = mmap(NULL, len, PROT_READ, MAP_SHARED, f, 0);
    close(f);
    return m == MAP_FAILED ? NULL : m;
}

orb_peer_windows_t *orb_peer_windows_open(int32_t pid, int32_t table_fd, char *err, size_t errlen)
{
    const orb_window_table_t *t = map_fd_of(pid, table_fd, sizeof *t, 0);
    if (!t) {
        snprintf(err, errlen, "cannot map the window table of pid %d (/proc/%d/fd/%d): %s", (int)pid, (int)pid,
                 (int)table_fd, strerror(errno));
        return NULL;
    }
    if (t->magic != ORB_WINDOW_MAGIC) {
        snprintf(err, errlen, "pid %d's window table has another layout (another orbit version?)", (int)pid);
        munmap((void *)t, sizeof *t);
        return NULL;
    }
    orb_peer_windows_t *w = calloc(1, sizeof *w);
    if (!w) {
        munmap((void *)t, sizeof *t);
        snprintf(err, errlen, "no memory for a peer's window handle");
        return NULL;
    }
    w->pid = pid;
    w->table = t;
    return w;
}

static void drop(peer_map_t *m)
{
    munmap((void *)m->map, m->len);
    *m = (peer_map_t){0};
}

/* A consistent copy of the table's entry holding [addr, addr + bytes) (serial 0: none), and
 * the version it was read at; keeps only the maps whose windows are still live. */
static orb_window_entry_t lookup(orb_peer_windows_t *w, uint64_t addr, size_t bytes, uint64_t *version)
{
    orb_window_table_t *t = (orb_window_table_t *)w->table;
    /* a peer killed between its two steps of the count leaves it odd for good: give up after
     * far longer than a writer takes, and the piece is read single-copy (or the call fails) */
    for (long tries = 0; tries < (1L << 22); tries++) {
        const uint64_t v = orb_window_read_begin(t);
        if (v & 1)
            continue; /* the peer is writing an entry: a few stores */
        orb_window_entry_t hit = {0};
        uint8_t alive[PEER_MAPS] = {0};
        for (int i = 0; i < ORB_WINDOWS_MAX; i++) {
            const orb_window_entry_t e = orb_window_entry_load(&t->entry[i]);
            if (!e.serial)
                continue;
            for (int k = 0; k < PEER_MAPS; k++)
                alive[k] |= w->map[k].serial == e.serial;
            if (orb_window_spans(e.base, e.len, addr, bytes))
                hit = e;
        }
        if (!orb_window_read_valid(t, v))
            continue;
        for (int k = 0; k < PEER_MAPS; k++)
            if (w->map[k].serial && !alive[k])
                drop(&w->map[k]); /* freed by the peer: its pages go once no one maps them */
        *version = v;
        return hit;
    }
    *version = 0; /* (never a version seen: the next piece reads the table again) */
    return (orb_window_entry_t){0};
}

const void *orb_peer_windows_find(orb_peer_windows_t *w, uint64_t addr, size_t bytes)
{
    w->tick++;
    uint64_t v = orb_window_read_begin(w->table);
    orb_window_entry_t e = {0};
    const int looked = v != w->checked;
    if (looked) { /* windows came or went: drop the maps of those gone first (and find it) */
        e = lookup(w, addr, bytes, &v);
        w->checked = v;
    }
    for (int k = 0; k < PEER_MAPS; k++) {
        peer_map_t *m = &w->map[k];
        if (m->serial && orb_window_spans(m->base, m->len, addr, bytes)) {
            m->used = w->tick;
            return m->map + (addr - m->base);
        }
    }
    if (!looked) { /* (the table has not moved: the entry was never mapped) */
        e = lookup(w, addr, bytes, &v);
        w->checked = v;
    }
    if (!e.serial)
        return NULL;
    const char *m = map_fd_of(w->pid, e.fd, e.len, e.ino);
    if (!m)
        return NULL;
    int k = 0;
    for (int i = 1; i < PEER_MAPS; i++)
        if (w->map[i].used < w->map[k].used)
            k = i; /* a free entry has used 0 */
    if (w->map[k].serial)
        drop(&w->map[k]);
    w->map[k] = (peer_map_t){.serial = e.serial, .base = e.base, .len = e.len, .map = m, .used = w->tick};
    return m + (addr - e.base);
}

void orb_peer_windows_close(orb_peer_windows_t *w)
{
    if (!w)
        return;
    for (int k = 0; k < PEER_MAPS; k++)
        if (w->map[k].serial)
            drop(&w->map[k]);
    munmap((void *)w->table, sizeof *w->table);
    free(w);
}
