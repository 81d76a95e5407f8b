/* One orbit-train run: join the job, load data, build the model, train with DDP semantics,
 * evaluate, report. */
#ifndef ORB_TRAIN_TRAIN_H
#define ORB_TRAIN_TRAIN_H

#include "options.h"

/* Returns the process exit status. */
int orb_train_run(const orb_train_opts_t *o);

#endif
