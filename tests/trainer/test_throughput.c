/* A throughput run through the program: 2 ranks on generated data (--data synthetic), --steps
 * bounding each epoch (counted in the report and, independently, in the profile's trace), the
 * images/s and scaling-efficiency lines in their documented format and consistent with the
 * JSON report; --no-sync moving no gradient; and the errors: bad specs, and a shape LeNet
 * cannot take.
 * usage: test_trainer_throughput ORBIT_TRAIN ORBITRUN MPIRUN custom|mpi */
#include <math.h>
#include <string.h>

#include "tt_util.h"

static char *train_bin, *orbitrun, *mpirun, *kind;
static char logp[4200];

/* nranks 0: the program alone, no launcher. extra: NULL-terminated. */
static int run(int nranks, char **extra, char **log)
{
    char *argv[64];
    int k = nranks ? tt_launch_prefix(kind, orbitrun, mpirun, nranks, argv) : 0;
    argv[k++] = train_bin;
    argv[k++] = "--backend";
    argv[k++] = strcmp(kind, "mpi") == 0 ? "mpi" : "custom";
    for (int i = 0; extra[i]; i++)
        argv[k++] = extra[i];
    argv[k] = NULL;
    /* the synthetic training set has 1.28M samples: a run that ignores --steps is an hour,
     * so a minute is a clear verdict */
    int rc = tt_run(argv, logp, 60);
    *log = tt_read_file(logp, NULL);
    TT_CHECK(*log != NULL, "no output in %s", logp);
    return rc;
}

static double json_number(const char *json, const char *pattern)
{
    return tt_json_after(json, pattern);
}

/* The numbers of rank 0's "Throughput [e/E]: X images/s on rank 0, Y images/s on N ranks,
 * scaling efficiency Z% (baseline B images/s on 1 rank)" line. */
static void throughput_line(const char *log, int epoch, int epochs, double *rank0, double *total, double *eff)
{
    char head[64];
    snprintf(head, sizeof head, "Throughput [%d/%d]: ", epoch, epochs);
    const char *p = strstr(log, head);
    TT_CHECK(p != NULL, "output lacks '%s':\n%s", head, log);
    int world = 0;
    double base = 0;
    int got = sscanf(p + strlen(head),
                     "%lf images/s on rank 0, %lf images/s on %d ranks, scaling efficiency %lf%% (baseline %lf "
                     "images/s on 1 rank)",
                     rank0, total, &world, eff, &base);
    TT_CHECK(got == 5 && world == 2 && base == 1000.0, "line '%.160s' is not in the documented format", p);
}

int main(int argc, char **argv)
{
    tt_launch_t l;
    if (tt_launch_args(argc, argv, &l) != 0)
        return TT_SKIP;
    train_bin = l.train_bin, orbitrun = l.orbitrun, mpirun = l.mpirun, kind = l.kind;
    char *dir = tt_mkdtemp("throughput");
    char json[4200], prof[4200], *log;
    snprintf(json, sizeof json, "%s/run.json", dir);
    snprintf(prof, sizeof prof, "%s/trace.json", dir);
    snprintf(logp, sizeof logp, "%s/run.log", dir);

    char *good[] = {"--data", "synthetic:1,28,28,10", "--steps", "5", "--epochs", "2", "--batch-size", "32",
                    "--baseline-ips", "1000", "--json", json, "--profile", prof, NULL};
    int rc = run(2, good, &log);
    TT_CHECK(rc != -1, "the 2 x 5-step run did not end within 60 s: --steps not honoured?\n%s", log);
    TT_CHECK(rc == 0, "synthetic run exited %d:\n%s", rc, log);
    /* 5 steps of 16 per rank per epoch: counted by the loop (report) and by the trace (profile) */
    const char *epochs[] = {"{\"epoch\": 1, ", "{\"epoch\": 2, "};
    char *js = tt_read_file(json, NULL);
    TT_CHECK(js != NULL, "no %s", json);
    for (int e = 0; e < 2; e++) {
        const char *rec = strstr(js, epochs[e]);
        TT_CHECK(rec && strstr(rec, "\"steps\": 5, \"images\": 160, "), "epoch %d: not 5 steps of 160 images:\n%s",
                 e + 1, js);
    }
    free(js);
    TT_CHECK(json_number(json, "\"profile\": {\"steps\": ") == 10, "the trace saw %g steps, not 2 x 5",
             json_number(json, "\"profile\": {\"steps\": "));
    TT_CHECK(json_number(json, "\"steps_per_epoch\": ") == 5, "steps_per_epoch");
    TT_CHECK(strstr(log, "data synthetic:1,28,28,10 (1281167 train / 1000 test, mean 0.0000 std 1.0000)"),
             "header line:\n%s", log);
    const char *lines[] = {"Epoch [1/2], Loss: ", "Epoch [2/2], Loss: ", "Total training time: ",
                           "Accuracy of the network on the 1000 test images: "};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        TT_CHECK(strstr(log, lines[i]) != NULL, "output lacks '%s':\n%s", lines[i], log);
    TT_CHECK(!strstr(log, "Epoch [3/"), "a third epoch:\n%s", log);
    for (int e = 1; e <= 2; e++) {
        double r0, tot, eff;
        throughput_line(log, e, 2, &r0, &tot, &eff);
        printf("epoch %d: %.1f images/s on rank 0, %.1f on 2 ranks, efficiency %.1f%%\n", e, r0, tot, eff);
        /* no tighter bound: a rank's figure includes waiting for the other at the first step,
         * which on a loaded machine can be most of 5 steps */
        TT_CHECK(r0 > 0 && tot > r0, "total %.1f is not rank 0's %.1f plus rank 1's", tot, r0);
        TT_CHECK(fabs(eff - 100.0 * tot / 2000.0) < 0.06, "efficiency %.1f%% is not %.1f / (2 x 1000)", eff, tot);
    }
    /* the report's figures are the last epoch's, the printed ones rounded */
    double r0, tot, eff;
    throughput_line(log, 2, 2, &r0, &tot, &eff);
    TT_CHECK(fabs(json_number(json, "\n  \"images_per_s\": ") - tot) < 0.06 &&
                 fabs(json_number(json, "\n  \"images_per_s_rank0\": ") - r0) < 0.06 &&
                 fabs(100 * json_number(json, "\n  \"scaling_efficiency\": ") - eff) < 0.06,
             "JSON throughput differs from the printed line");
    free(log);
    printf("5 steps per epoch, throughput lines: ok\n");

    /* --no-sync (DDP's no_sync(), the step without communication): the same run moves no
     * gradient; the normal one above moved every step's buckets */
    char *t = tt_read_file(prof, NULL);
    TT_CHECK(t && strstr(t, "\"allreduce bucket 0 "), "the normal run's trace has no bucket all-reduce");
    free(t);
    TT_CHECK(json_number(json, "\"bytes\": ") > 0, "the normal run reduced no bytes");
    char *nosync[] = {"--data", "synthetic:1,28,28,10", "--steps", "3", "--epochs", "1", "--batch-size", "32",
                      "--no-sync", "--json", json, "--profile", prof, NULL};
    rc = run(2, nosync, &log);
    TT_CHECK(rc == 0, "--no-sync run exited %d:\n%s", rc, log);
    TT_CHECK(strstr(log, "(no sync: gradients not all-reduced)"), "--no-sync header line:\n%s", log);
    free(log);
    t = tt_read_file(prof, NULL);
    TT_CHECK(t && !strstr(t, "\"allreduce bucket "), "--no-sync: a bucket was all-reduced");
    free(t);
    js = tt_read_file(json, NULL);
    TT_CHECK(js && strstr(js, "\"no_sync\": true,"), "--no-sync: the report says no \"no_sync\": true");
    free(js);
    TT_CHECK(json_number(json, "\"bytes\": ") == 0, "--no-sync reduced %g bytes", json_number(json, "\"bytes\": "));
    printf("--no-sync: no gradient all-reduced: ok\n");

    /* bad specs stop at the command line, naming --data and what to write */
    const char *bad[] = {"synthetic:3,0,4,10", "synthetic:abc", "synthetic:1,28,28"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *args[] = {"--data", (char *)bad[i], "--steps", "1", "--epochs", "1", NULL};
        rc = run(0, args, &log);
        char want[128];
        snprintf(want, sizeof want, "--data %s: ", bad[i]);
        TT_CHECK(rc == 2 && strstr(log, want) && strstr(log, "write synthetic:C,H,W,CLASSES"),
                 "%s: exit %d, output:\n%s", bad[i], rc, log);
        free(log);
    }
    /* a shape LeNet cannot take: every rank stops, naming --data, the model and what it takes */
    char *shape[] = {"--data", "synthetic:3,32,32,10", "--steps", "1", "--epochs", "1", NULL};
    rc = run(2, shape, &log);
    TT_CHECK(rc > 0 && strstr(log, "--data synthetic:3,32,32,10: model lenet takes 1x28x28 samples, not 3x32x32") &&
                 strstr(log, "synthetic:1,28,28,10"),
             "wrong shape for lenet: exit %d, output:\n%s", rc, log);
    free(log);
    char *steps0[] = {"--data", "synthetic:1,28,28,10", "--steps", "0", NULL};
    rc = run(0, steps0, &log);
    TT_CHECK(rc == 2 && strstr(log, "--steps: '0'"), "--steps 0: exit %d, output:\n%s", rc, log);
    free(log);
    printf("synthetic data errors: ok\n");
    tt_rmtree(dir);
    free(dir);
    return 0;
}
