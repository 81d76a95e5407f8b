/* Errors at the comm boundary and the registry of live communicators.
 *
 * One convention: a failing public call leaves its text where orb_comm_last_error finds it:
 * on the communicator (orb_comm_fail, which also copies it to the thread) when there is one,
 * else on the calling thread (orb_set_thread_error). Inner layers report through err/errlen
 * out-parameters that the comm layer wraps into one of the two. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "comm/comm_impl.h"
#include "core/log.h"

static _Thread_local char thread_error[ORB_ERRMSG_BYTES];

char *orb_thread_error(void) { return thread_error; }

void orb_set_thread_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(thread_error, sizeof thread_error, fmt, ap);
    va_end(ap);
    ORB_WARN("%s", thread_error);
}

void orb_set_thread_error_fixed(const char *msg)
{
    size_t i = 0;
    for (; msg[i] && i < sizeof thread_error - 1; i++)
        thread_error[i] = msg[i];
    thread_error[i] = 0;
}

orb_status_t orb_comm_fail(struct orb_comm *c, orb_status_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->last_error, sizeof c->last_error, fmt, ap);
    va_end(ap);
    snprintf(thread_error, sizeof thread_error, "%s", c->last_error);
    ORB_WARN("%s: %s", orb_status_name(st), c->last_error);
    return st;
}

/* ---- live communicators: lets every call reject a destroyed or bogus handle ------------ */

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct orb_comm **live;
static size_t nlive, caplive;
/* Moves on every removal. A thread remembers the last handle it found live and the epoch it
 * found it in: while no communicator was destroyed since, that handle is still live, and every
 * call is spared the global lock (about a tenth of an 8-byte call's time on the front end). */
static _Atomic unsigned long live_epoch;
static _Thread_local const struct orb_comm *seen_live;
static _Thread_local unsigned long seen_epoch;

int orb_comm_live_add(struct orb_comm *c)
{
    pthread_mutex_lock(&live_lock);
    if (nlive == caplive) {
        size_t n = caplive ? 2 * caplive : 8;
        struct orb_comm **p = realloc(live, n * sizeof *p);
        if (!p) {
            pthread_mutex_unlock(&live_lock);
            return -1;
        }
        live = p;
        caplive = n;
    }
    live[nlive++] = c;
    pthread_mutex_unlock(&live_lock);
    return 0;
}

void orb_comm_live_remove(struct orb_comm *c)
{
    pthread_mutex_lock(&live_lock);
    for (size_t i = 0; i < nlive; i++)
        if (live[i] == c) {
            live[i] = live[--nlive];
            break;
        }
    atomic_fetch_add_explicit(&live_epoch, 1, memory_order_release);
    pthread_mutex_unlock(&live_lock);
}

void orb_comm_live_each(void (*fn)(struct orb_comm *c))
{
    pthread_mutex_lock(&live_lock);
    for (size_t i = 0; i < nlive; i++)
        fn(live[i]);
    pthread_mutex_unlock(&live_lock);
}

static int is_live(const struct orb_comm *c)
{
    if (c == seen_live && atomic_load_explicit(&live_epoch, memory_order_acquire) == seen_epoch)
        return 1;
    int found = 0;
    pthread_mutex_lock(&live_lock);
    for (size_t i = 0; i < nlive && !found; i++)
        found = live[i] == c;
    if (found) {
        seen_live = c;
        seen_epoch = atomic_load_explicit(&live_epoch, memory_order_relaxed);
    }
    pthread_mutex_unlock(&live_lock);
    return found;
}

orb_status_t orb_comm_check_handle(struct orb_comm *c, const char *fn)
{
    if (!c) {
        orb_set_thread_error("%s: comm is NULL: pass a communicator from orb_comm_init_rank/_env", fn);
        return ORB_ERR_INVALID_ARG;
    }
    if (!is_live(c)) {
        orb_set_thread_error("%s: comm %p is not a live communicator (used after orb_comm_destroy?)", fn, (void *)c);
        return ORB_ERR_INVALID_ARG;
    }
    return ORB_OK;
}

const char *orb_comm_last_error(orb_comm_t comm)
{
    if (!comm)
        return thread_error;
    return is_live(comm) ? comm->last_error : thread_error;
}
