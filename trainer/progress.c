#include "progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "trace.h"

#define PROGRESS_PERIOD_NS 250000000

int orb_train_progress_wanted(void)
{
    const char *force = getenv("ORB_TRAIN_PROGRESS");
    if (force)
        return atoi(force) != 0;
    /* mpirun gives every rank a pseudo-terminal whatever its own stdout is: no guessing there */
    if (getenv("OMPI_COMM_WORLD_SIZE"))
        return 0;
    return isatty(STDOUT_FILENO);
}

void orb_train_progress_begin(orb_train_progress_t *p, int enabled, int epoch, int epochs, int64_t steps,
                              int64_t samples_per_step)
{
    p->enabled = enabled;
    p->epoch = epoch;
    p->epochs = epochs;
    p->steps = steps;
    p->samples_per_step = samples_per_step;
    p->t0 = p->last = orb_train_now_ns();
}

void orb_train_progress_update(orb_train_progress_t *p, int64_t done)
{
    if (!p->enabled)
        return;
    int64_t now = orb_train_now_ns();
    if (now - p->last < PROGRESS_PERIOD_NS && done < p->steps)
        return;
    p->last = now;
    double el = (double)(now - p->t0) * 1e-9;
    double rate = el > 0 ? (double)(done * p->samples_per_step) / el : 0.0;
    double eta = done > 0 ? el * (double)(p->steps - done) / (double)done : 0.0;
    printf("\rEpoch [%d/%d] %lld/%lld batches, %.0f samples/s, ETA %.1f s\033[K", p->epoch, p->epochs,
           (long long)done, (long long)p->steps, rate, eta);
    fflush(stdout);
}

void orb_train_progress_end(orb_train_progress_t *p)
{
    if (!p->enabled)
        return;
    printf("\r\033[K");
    fflush(stdout);
}
