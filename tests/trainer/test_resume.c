/* --resume continues bit for bit: E epochs in one go and 1 epoch + resume to E give the
 * same parameters and optimiser state to the last bit (Adam, StepLR and dropout all depend
 * on the position in the run), on 1 rank and on 2. A corrupt checkpoint is refused by name.
 * usage: test_trainer_resume ORBIT_TRAIN ORBITRUN MPIRUN custom|mpi */
#include <string.h>
#include <unistd.h>

#include "tt_util.h"

static char *train_bin, *orbitrun, *mpirun, *kind, *dir;

static int train(int nranks, const char *epochs, const char *save, const char *resume, const char *json,
                 char **log)
{
    char *argv[48], out[4200];
    int k = nranks > 1 ? tt_launch_prefix(kind, orbitrun, mpirun, nranks, argv) : 0;
    const char *backend = nranks == 1 ? "none" : strcmp(kind, "mpi") == 0 ? "mpi" : "custom";
    char *args[] = {train_bin, "--model", "convnet", "--data", dir, "--epochs", (char *)epochs, "--batch-size",
                    "16", "--optimizer", "adam", "--lr", "0.002", "--lr-step", "1", "--lr-gamma", "0.5",
                    "--seed", "5", "--backend", (char *)backend, "--save", (char *)save, "--json", (char *)json};
    for (size_t i = 0; i < sizeof args / sizeof args[0]; i++)
        argv[k++] = args[i];
    if (resume) {
        argv[k++] = "--resume";
        argv[k++] = (char *)resume;
    }
    argv[k] = NULL;
    snprintf(out, sizeof out, "%s.log", save);
    int rc = tt_run(argv, out, 120);
    *log = tt_read_file(out, NULL);
    return rc;
}

/* "loss" of epoch e in a --json file */
static double epoch_loss(const char *json, int e)
{
    char key[64];
    snprintf(key, sizeof key, "{\"epoch\": %d, \"loss\": ", e);
    return tt_json_after(json, key);
}

static void check(int nranks)
{
    char a[4200], b[4200], ja[4200], jb[4200], *log;
    snprintf(a, sizeof a, "%s/straight%d.ckpt", dir, nranks);
    snprintf(b, sizeof b, "%s/resumed%d.ckpt", dir, nranks);
    snprintf(ja, sizeof ja, "%s/straight%d.json", dir, nranks);
    snprintf(jb, sizeof jb, "%s/resumed%d.json", dir, nranks);
    TT_CHECK(train(nranks, "3", a, NULL, ja, &log) == 0, "straight run:\n%s", log);
    free(log);
    TT_CHECK(train(nranks, "1", b, NULL, jb, &log) == 0, "first epoch:\n%s", log);
    free(log);
    TT_CHECK(train(nranks, "3", b, b, jb, &log) == 0, "resumed run:\n%s", log);
    TT_CHECK(strstr(log, "Resuming after epoch 1") != NULL, "resume not announced:\n%s", log);
    TT_CHECK(strstr(log, "Epoch [1/3]") == NULL && strstr(log, "Epoch [3/3]") != NULL, "resumed epochs:\n%s", log);
    free(log);
    double sd = -1, d = tt_ckpt_maxdiff(a, b, &sd);
    TT_CHECK(d == 0.0 && sd == 0.0, "%d rank(s): resumed run differs: params %g, optimiser state %g", nranks, d, sd);
    for (int e = 2; e <= 3; e++)
        TT_CHECK(epoch_loss(ja, e) == epoch_loss(jb, e), "%d rank(s): epoch %d loss %.6f vs %.6f", nranks, e,
                 epoch_loss(ja, e), epoch_loss(jb, e));
    printf("%d rank(s): resumed run identical to the straight one\n", nranks);
}

int main(int argc, char **argv)
{
    tt_launch_t l;
    if (tt_launch_args(argc, argv, &l) != 0)
        return TT_SKIP;
    train_bin = l.train_bin, orbitrun = l.orbitrun, mpirun = l.mpirun, kind = l.kind;
    dir = tt_mkdtemp("resume");
    tt_write_synthetic(dir, "train", 64, 31, 1);
    tt_write_synthetic(dir, "t10k", 16, 32, 1);
    /* the single-rank case needs no launcher: run it once, in the custom variant */
    if (strcmp(kind, "custom") == 0)
        check(1);
    check(2);

    /* a damaged checkpoint is refused, naming the file */
    char ck[4200], bad[4200], j[4200], *log;
    snprintf(ck, sizeof ck, "%s/straight2.ckpt", dir);
    snprintf(bad, sizeof bad, "%s/bad.ckpt", dir);
    snprintf(j, sizeof j, "%s/bad.json", dir);
    size_t len;
    char *data = tt_read_file(ck, &len);
    TT_CHECK(data && len > 1000, "read %s", ck);
    data[len / 2] ^= 1;
    FILE *f = fopen(bad, "wb");
    fwrite(data, 1, len, f);
    fclose(f);
    free(data);
    char out_ck[4200];
    snprintf(out_ck, sizeof out_ck, "%s/after_bad.ckpt", dir);
    int rc = train(2, "3", out_ck, bad, j, &log);
    TT_CHECK(rc != 0 && rc != -1 && strstr(log, bad) && strstr(log, "CRC"), "corrupt checkpoint accepted (rc %d):\n%s",
             rc, log);
    printf("corrupt checkpoint refused: ok\n");
    free(log);
    tt_rmtree(dir);
    return 0;
}
