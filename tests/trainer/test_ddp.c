/* DDP equivalence: k steps on N ranks with global batch B end with the parameters of k
 * steps on 1 rank with batch B over the same samples, for N = 2, 3, 4, with and without
 * overlap and for several bucket sizes. ConvNet, so dropout is in play: its masks are keyed
 * by (step, dataset index), which is what makes the two runs comparable at all.
 * usage: test_trainer_ddp ORBIT_TRAIN ORBITRUN MPIRUN custom|mpi */
#include <string.h>
#include <unistd.h>

#include "tt_util.h"

#define BATCH "12" /* divisible by 2, 3 and 4 */
#define TRAIN_N 96 /* 8 steps, no padding on any world size */

static char *train_bin, *orbitrun, *mpirun, *kind, *dir;

static void train(int nranks, const char *backend, const char *bucket_mb, int overlap, const char *ckpt)
{
    char *argv[48], out[4200];
    int k = nranks > 1 ? tt_launch_prefix(kind, orbitrun, mpirun, nranks, argv) : 0;
    char *args[] = {train_bin, "--model", "convnet", "--data", dir, "--epochs", "1", "--batch-size", BATCH,
                    "--lr", "0.05", "--optimizer", "sgd", "--momentum", "0.9", "--seed", "3", "--backend",
                    (char *)backend, "--bucket-mb", (char *)bucket_mb, "--save", (char *)ckpt};
    for (size_t i = 0; i < sizeof args / sizeof args[0]; i++)
        argv[k++] = args[i];
    if (!overlap)
        argv[k++] = "--no-overlap";
    argv[k] = NULL;
    snprintf(out, sizeof out, "%s.log", ckpt);
    int rc = tt_run(argv, out, 120);
    char *log = tt_read_file(out, NULL);
    TT_CHECK(rc == 0, "%d ranks (%s, bucket %s MB, overlap %d) exited %d:\n%s", nranks, backend, bucket_mb, overlap,
             rc, log ? log : "");
    free(log);
}

int main(int argc, char **argv)
{
    tt_launch_t l;
    if (tt_launch_args(argc, argv, &l) != 0)
        return TT_SKIP;
    train_bin = l.train_bin, orbitrun = l.orbitrun, mpirun = l.mpirun, kind = l.kind;
    const char *backend = strcmp(kind, "mpi") == 0 ? "mpi" : "custom";
    dir = tt_mkdtemp("ddp");
    tt_write_synthetic(dir, "train", TRAIN_N, 21, 1);
    tt_write_synthetic(dir, "t10k", 20, 22, 0);

    char ref[4200], ck[4200];
    snprintf(ref, sizeof ref, "%s/ref.ckpt", dir);
    train(1, "none", "25", 1, ref);

    /* 0.001 MB: one bucket per tensor pair or so (fc1.weight alone is 4.7 MB);
     * 0.05: a few; 25: two (DDP caps the first at 1 MiB) */
    struct { const char *mb; int overlap; } cfg[] = {{"0.001", 1}, {"0.05", 1}, {"25", 1}, {"0.001", 0}, {"25", 0}};
    double worst = 0;
    for (int n = 2; n <= 4; n++) {
        for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
            snprintf(ck, sizeof ck, "%s/n%d_c%zu.ckpt", dir, n, c);
            train(n, backend, cfg[c].mb, cfg[c].overlap, ck);
            double sd = 0, d = tt_ckpt_maxdiff(ref, ck, &sd);
            printf("%d ranks, bucket %s MB, overlap %d: max |param diff| %.3g, momentum %.3g\n", n, cfg[c].mb,
                   cfg[c].overlap, d, sd);
            /* 8 SGD steps in float: only the order of the sums differs */
            TT_CHECK(d >= 0 && d < 2e-5 && sd < 2e-4, "%d ranks, bucket %s MB, overlap %d: parameters differ by %g",
                     n, cfg[c].mb, cfg[c].overlap, d);
            worst = d > worst ? d : worst;
        }
    }
    /* the comparison must be able to fail: another seed gives other parameters */
    snprintf(ck, sizeof ck, "%s/other.ckpt", dir);
    char *a[] = {train_bin, "--model", "convnet", "--data", dir, "--epochs", "1", "--batch-size", BATCH,
                 "--lr", "0.05", "--seed", "4", "--backend", "none", "--save", ck, NULL};
    char out[4300];
    snprintf(out, sizeof out, "%s.log", ck);
    TT_CHECK(tt_run(a, out, 60) == 0, "reference run with another seed");
    TT_CHECK(tt_ckpt_maxdiff(ref, ck, NULL) > 1e-3, "a different seed should change the parameters");
    printf("ddp equivalence (%s): worst difference %.3g\n", kind, worst);
    tt_rmtree(dir);
    return 0;
}
