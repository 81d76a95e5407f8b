#include "error.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char orb_train_err_buf[512];

orb_status_t orb_train_fail(orb_status_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(orb_train_err_buf, sizeof orb_train_err_buf, fmt, ap);
    va_end(ap);
    return status;
}

const char *orb_train_last_error(void)
{
    return orb_train_err_buf;
}

void orb_train_clear_error(void)
{
    orb_train_err_buf[0] = '\0';
}
