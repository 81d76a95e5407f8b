/* The in-epoch progress line (batches done, samples/s, ETA), only when stdout is a
 * terminal: logs and pipes get the plain per-epoch lines alone. */
#ifndef ORB_TRAIN_PROGRESS_H
#define ORB_TRAIN_PROGRESS_H

#include <stdint.h>

typedef struct {
    int enabled;
    int epoch, epochs;
    int64_t steps, samples_per_step;
    int64_t t0, last;
} orb_train_progress_t;

/* stdout is a terminal (ORB_TRAIN_PROGRESS=0/1 overrides; off under mpirun, which hands
 * every rank a pseudo-terminal). */
int orb_train_progress_wanted(void);
/* enabled: this rank prints (rank 0) and stdout is a terminal. */
void orb_train_progress_begin(orb_train_progress_t *p, int enabled, int epoch, int epochs, int64_t steps,
                              int64_t samples_per_step);
void orb_train_progress_update(orb_train_progress_t *p, int64_t done);
void orb_train_progress_end(orb_train_progress_t *p);

#endif
