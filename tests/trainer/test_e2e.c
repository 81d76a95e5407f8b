/* A tiny end-to-end run (a few hundred synthetic images, 2 ranks) that must learn: the final
 * loss below a threshold, the test accuracy high, the output in the documented format, the
 * profile written. And data errors through the program: a missing or corrupt file stops
 * every rank with a message naming the file.
 * usage: test_trainer_e2e ORBIT_TRAIN ORBITRUN MPIRUN custom|mpi */
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tt_util.h"

static char *train_bin, *orbitrun, *mpirun, *kind;

static int run(int nranks, const char *data, const char *json, const char *profile, const char *logpath, char **log)
{
    char *argv[48];
    int k = tt_launch_prefix(kind, orbitrun, mpirun, nranks, argv);
    char *args[] = {train_bin, "--model", "lenet", "--data", (char *)data, "--epochs", "6", "--batch-size", "32",
                    "--lr", "0.02", "--backend", strcmp(kind, "mpi") == 0 ? "mpi" : "custom", "--bucket-mb", "0.1",
                    "--json", (char *)json, "--profile", (char *)profile};
    for (size_t i = 0; i < sizeof args / sizeof args[0]; i++)
        argv[k++] = args[i];
    argv[k] = NULL;
    int rc = tt_run(argv, logpath, 120);
    *log = tt_read_file(logpath, NULL);
    return rc;
}

static double json_number(const char *json, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    return tt_json_after(json, pat);
}

int main(int argc, char **argv)
{
    tt_launch_t l;
    if (tt_launch_args(argc, argv, &l) != 0)
        return TT_SKIP;
    train_bin = l.train_bin, orbitrun = l.orbitrun, mpirun = l.mpirun, kind = l.kind;
    char *dir = tt_mkdtemp("e2e");
    tt_write_synthetic(dir, "train", 400, 41, 1);
    tt_write_synthetic(dir, "t10k", 100, 42, 0);
    char json[4200], prof[4200], logp[4200], *log;
    snprintf(json, sizeof json, "%s/run.json", dir);
    snprintf(prof, sizeof prof, "%s/trace.json", dir);
    snprintf(logp, sizeof logp, "%s/run.log", dir);
    int rc = run(2, dir, json, prof, logp, &log);
    TT_CHECK(rc == 0, "training run exited %d:\n%s", rc, log);
    double loss = json_number(json, "final_loss"), acc = json_number(json, "accuracy");
    printf("final loss %.4f, test accuracy %.2f%%\n", loss, acc);
    TT_CHECK(loss < 0.15, "final loss %.4f not below 0.15:\n%s", loss, log);
    TT_CHECK(acc >= 90.0, "test accuracy %.2f%% below 90%%", acc);
    TT_CHECK(json_number(json, "test_images") == 100, "every test image evaluated once");
    const char *lines[] = {"Epoch [1/6], Loss: ", "Epoch [6/6], Loss: ", ", Dur: ", "Total training time: ",
                           "Accuracy of the network on the 100 test images: ", "Accuracy of class 0: ",
                           "Accuracy of class 9: ", "exposed"};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        TT_CHECK(strstr(log, lines[i]) != NULL, "output lacks '%s':\n%s", lines[i], log);
    char *trace = tt_read_file(prof, NULL);
    TT_CHECK(trace && strstr(trace, "\"traceEvents\"") && strstr(trace, "\"forward\"") &&
                 strstr(trace, "\"backward\"") && strstr(trace, "\"optimizer\"") && strstr(trace, "allreduce bucket 0") &&
                 strstr(trace, "\"pid\": 1"),
             "trace %s lacks events", prof);
    free(trace);
    if (strcmp(kind, "mpi") != 0) { /* orbit's own tracer timed the calls: its files are there */
        char tdir[4300], path[4600];
        snprintf(tdir, sizeof tdir, "%s.orbit", prof);
        for (int r = 0; r < 2; r++) {
            DIR *d = opendir(tdir);
            TT_CHECK(d != NULL, "--profile %s left no orbit trace directory %s", prof, tdir);
            struct dirent *e;
            char suffix[32];
            snprintf(suffix, sizeof suffix, "-r%d.trace", r);
            int found = 0;
            while ((e = readdir(d)))
                if (!strncmp(e->d_name, "orbit-", 6) && strlen(e->d_name) > strlen(suffix) &&
                    !strcmp(e->d_name + strlen(e->d_name) - strlen(suffix), suffix)) {
                    snprintf(path, sizeof path, "%s/%s", tdir, e->d_name);
                    found++;
                }
            closedir(d);
            TT_CHECK(found == 1, "%d trace files of rank %d in %s, expected 1", found, r, tdir);
            char *t = tt_read_file(path, NULL);
            TT_CHECK(t && strstr(t, " allreduce ") && strstr(t, "\nend\n"), "%s lacks all-reduce calls or its end", path);
            free(t);
        }
    }
    free(log);

    /* missing file: every rank stops, the message names it */
    char empty[4200], img[4300];
    snprintf(empty, sizeof empty, "%s/empty", dir);
    TT_CHECK(mkdir(empty, 0755) == 0, "mkdir");
    rc = run(2, empty, json, prof, logp, &log);
    snprintf(img, sizeof img, "%s/train-images-idx3-ubyte.gz", empty);
    TT_CHECK(rc > 0 && strstr(log, img), "missing data: exit %d, output:\n%s", rc, log);
    free(log);
    /* corrupt file: a gzip stream cut short */
    snprintf(img, sizeof img, "%s/train-images-idx3-ubyte.gz", dir);
    size_t len;
    char *gz = tt_read_file(img, &len);
    FILE *f = fopen(img, "wb");
    fwrite(gz, 1, len - 100, f);
    fclose(f);
    free(gz);
    rc = run(2, dir, json, prof, logp, &log);
    TT_CHECK(rc > 0 && strstr(log, img), "corrupt data: exit %d, output:\n%s", rc, log);
    printf("data errors name the file: ok\n");
    free(log);
    tt_rmtree(dir);
    free(dir);
    return 0;
}
