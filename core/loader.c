#include "core/loader.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <string.h>

/* The object that ended the loader's list at the last mark: never unloaded (the main program,
 * or one pinned with RTLD_NODELETE), so its l_next may be read at any time. glibc appends every
 * object it loads into the base namespace at the list's end, and unlinks it when it unloads:
 * l_next is NULL exactly when nothing loaded since the mark is still there. */
static struct link_map *marked;
static unsigned long long tried_gen = ~0ull; /* the generation the last mark was tried at */
static pthread_mutex_t mark_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct {
    unsigned long long adds;
    struct link_map *tail;
    char name[4096];
} loader_state_t;

/* Called with the loader's write lock held (dl_iterate_phdr takes it, and so do loading and
 * unloading when they change the list): the list walked here cannot change under it. */
static int state_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    loader_state_t *s = data;
    s->adds = info->dlpi_adds;
    s->tail = NULL;
    s->name[0] = 0;
    for (struct link_map *l = _r_debug.r_map; l; l = l->l_next)
        s->tail = l;
    if (s->tail && s->tail->l_name) {
        strncpy(s->name, s->tail->l_name, sizeof s->name - 1);
        s->name[sizeof s->name - 1] = 0;
    }
    return 1; /* the first object carries the counter; the walk above saw the rest */
}

static void loader_state(loader_state_t *s)
{
    s->adds = 0;
    s->tail = NULL;
    s->name[0] = 0;
    dl_iterate_phdr(state_cb, s);
}

static int adds_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    *(unsigned long long *)data = info->dlpi_adds;
    return 1;
}

unsigned long long orb_loader_generation(void)
{
    unsigned long long adds = 0;
    dl_iterate_phdr(adds_cb, &adds);
    return adds;
}

/* Make the list's last object one that stays: the main program does (empty name); any other
 * is pinned by name, and only if the name still finds that very object. */
static int pin(const loader_state_t *s)
{
    if (!s->tail)
        return 0;
    if (!s->name[0])
        return s->tail == _r_debug.r_map;
    void *h = dlopen(s->name, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
    if (!h)
        return 0;
    struct link_map *lm = NULL;
    const int same = dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm == s->tail;
    dlclose(h); /* the reference dlopen took; RTLD_NODELETE keeps the object */
    return same;
}

int orb_loader_mark(unsigned long long gen)
{
    if (__atomic_load_n(&tried_gen, __ATOMIC_RELAXED) == gen) /* tried already: the answer stands */
        return __atomic_load_n(&marked, __ATOMIC_RELAXED) != NULL;
    if (pthread_mutex_trylock(&mark_lock) != 0)
        return 0; /* another thread is marking: never wait here (dlopen below takes the loader's lock) */
    int ok = 0;
    if (gen != tried_gen) {
        __atomic_store_n(&tried_gen, gen, __ATOMIC_RELAXED);
        loader_state_t s;
        loader_state(&s);
        if (s.adds == gen && pin(&s)) {
            /* Loaded since the walk (and perhaps unloaded again, freeing the address the walk
             * saw)? Then that object was not pinned: no mark. */
            unsigned long long now = orb_loader_generation();
            if (now == gen) {
                __atomic_store_n(&marked, s.tail, __ATOMIC_RELEASE);
                ok = 1;
            }
        }
        if (!ok)
            __atomic_store_n(&marked, NULL, __ATOMIC_RELEASE);
    } else {
        ok = __atomic_load_n(&marked, __ATOMIC_RELAXED) != NULL;
    }
    pthread_mutex_unlock(&mark_lock);
    return ok;
}

int orb_loader_unchanged(void)
{
    struct link_map *m = __atomic_load_n(&marked, __ATOMIC_ACQUIRE);
    return m && !__atomic_load_n(&m->l_next, __ATOMIC_ACQUIRE);
}
