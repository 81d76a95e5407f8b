/* orbit-train: data-parallel training of LeNet or the PyTorch MNIST ConvNet on CPU over
 * orbit (or MPI), measured against PyTorch DDP (bench/ddp_torch.py). See docs/trainer.md. */
#include <stdio.h>

#include "blas.h"
#include "error.h"
#include "options.h"
#include "train.h"

int main(int argc, char **argv)
{
    /* first: it may re-execute the program */
    orb_train_blas_prepare(argc, argv);
    orb_train_opts_t opts;
    int exit_now;
    if (orb_train_opts_parse(argc, argv, &opts, &exit_now) != ORB_OK) {
        fprintf(stderr, "orbit-train: %s\n", orb_train_last_error());
        return 2;
    }
    if (exit_now) {
        orb_train_opts_usage(argv[0]);
        return 0;
    }
    return orb_train_run(&opts);
}
