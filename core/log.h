/* Logging: ORBIT_DEBUG=WARN|INFO|TRACE (default WARN). Lines carry the rank. */
#ifndef ORB_CORE_LOG_H
#define ORB_CORE_LOG_H

typedef enum { ORB_LOG_NONE = 0, ORB_LOG_WARN, ORB_LOG_INFO, ORB_LOG_TRACE } orb_log_level_t;

orb_log_level_t orb_log_level(void);
/* The rank shown in log lines of this thread (-1: none yet). */
void orb_log_set_rank(int rank);
void orb_log_write(orb_log_level_t level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define ORB_LOG(level, ...)                                          \
    do {                                                             \
        if (orb_log_level() >= (level))                              \
            orb_log_write((level), __FILE__, __LINE__, __VA_ARGS__); \
    } while (0)
#define ORB_WARN(...) ORB_LOG(ORB_LOG_WARN, __VA_ARGS__)
#define ORB_INFO(...) ORB_LOG(ORB_LOG_INFO, __VA_ARGS__)
#define ORB_TRACE(...) ORB_LOG(ORB_LOG_TRACE, __VA_ARGS__)

#endif
