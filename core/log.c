#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "param.h"

static _Thread_local int log_rank = -1;
static int log_level_cached = -1;

orb_log_level_t orb_log_level(void)
{
    int lvl = __atomic_load_n(&log_level_cached, __ATOMIC_RELAXED);
    if (lvl >= 0)
        return (orb_log_level_t)lvl;
    /* param.c logs through here (a number that does not parse), and we read ORBIT_DEBUG
     * through it: no loop, because orb_param_str never logs. */
    const char *s = orb_param_str(ORB_PARAM_S_DEBUG);
    lvl = ORB_LOG_WARN;
    if (!strcasecmp(s, "NONE") || !strcmp(s, "0"))
        lvl = ORB_LOG_NONE;
    else if (!strcasecmp(s, "INFO"))
        lvl = ORB_LOG_INFO;
    else if (!strcasecmp(s, "TRACE"))
        lvl = ORB_LOG_TRACE;
    __atomic_store_n(&log_level_cached, lvl, __ATOMIC_RELAXED);
    return (orb_log_level_t)lvl;
}

void orb_log_set_rank(int rank) { log_rank = rank; }

void orb_log_write(orb_log_level_t level, const char *file, int line, const char *fmt, ...)
{
    static const char *const tags[] = {"", "WARN", "INFO", "TRACE"};
    char buf[2048];
    int n;
    if (log_rank >= 0)
        n = snprintf(buf, sizeof buf, "orbit[%d] rank %d %s: ", (int)getpid(), log_rank, tags[level]);
    else
        n = snprintf(buf, sizeof buf, "orbit[%d] %s: ", (int)getpid(), tags[level]);
    va_list ap;
    va_start(ap, fmt);
    n += vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof buf - 2)
        n = (int)sizeof buf - 2;
    if (level >= ORB_LOG_TRACE)
        n += snprintf(buf + n, sizeof buf - (size_t)n, " (%s:%d)", file, line);
    if (n >= (int)sizeof buf - 1)
        n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    /* One write per line so ranks' lines do not interleave mid-line. */
    ssize_t w = write(STDERR_FILENO, buf, (size_t)n);
    (void)w;
}
