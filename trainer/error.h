/* Error detail for the trainer: the function that first finds a problem records one line
 * saying what and where (file, rank, argument); callers pass the status up and the top
 * level prints the line once. */
#ifndef ORB_TRAIN_ERROR_H
#define ORB_TRAIN_ERROR_H

#include "orbit.h"

/* Records the message (printf format) for this thread and returns status. */
orb_status_t orb_train_fail(orb_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The last recorded message of this thread ("" if none). Never NULL. */
const char *orb_train_last_error(void);
void orb_train_clear_error(void);

#define ORB_TRAIN_CHECK(expr)                 \
    do {                                      \
        orb_status_t st_ = (expr);            \
        if (st_ != ORB_OK)                    \
            return st_;                       \
    } while (0)

#endif
