#include "tt_util.h"

#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "checkpoint.h"
#include "rng.h"

extern char **environ;

char *tt_mkdtemp(const char *tag)
{
    const char *base = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/orbit-train-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    char *d = mkdtemp(tmpl);
    TT_CHECK(d != NULL, "mkdtemp %s: %s", tmpl, strerror(errno));
    return strdup(d);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

void tt_rmtree(const char *dir)
{
    if (getenv("TT_KEEP"))
        return;
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int tt_write_idx(const char *path, int gz, int ndims, const int *dims, const uint8_t *data)
{
    uint8_t hdr[4 + 4 * 4] = {0, 0, 0x08, (uint8_t)ndims};
    size_t count = 1;
    for (int i = 0; i < ndims; i++) {
        hdr[4 + 4 * i] = (uint8_t)(dims[i] >> 24);
        hdr[5 + 4 * i] = (uint8_t)(dims[i] >> 16);
        hdr[6 + 4 * i] = (uint8_t)(dims[i] >> 8);
        hdr[7 + 4 * i] = (uint8_t)dims[i];
        count *= (size_t)dims[i];
    }
    size_t hlen = 4 + 4 * (size_t)ndims;
    if (gz) {
        gzFile f = gzopen(path, "wb");
        if (!f)
            return -1;
        int ok = gzwrite(f, hdr, (unsigned)hlen) == (int)hlen && gzwrite(f, data, (unsigned)count) == (int)count;
        return gzclose(f) == Z_OK && ok ? 0 : -1;
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int ok = fwrite(hdr, 1, hlen, f) == hlen && fwrite(data, 1, count, f) == count;
    return fclose(f) == 0 && ok ? 0 : -1;
}

void tt_write_synthetic(const char *dir, const char *split, int n, uint64_t seed, int gz)
{
    uint8_t *img = malloc((size_t)n * 784), *lbl = malloc((size_t)n);
    TT_CHECK(img && lbl, "out of memory");
    orb_train_rng_t rng;
    orb_train_rng_seed(&rng, seed);
    for (int i = 0; i < n; i++) {
        int c = (int)orb_train_rng_below(&rng, 10);
        lbl[i] = (uint8_t)c;
        for (int p = 0; p < 784; p++) {
            int y = p / 28, x = p % 28;
            int v = (int)orb_train_rng_below(&rng, 70);
            if (y >= 2 * c && y < 2 * c + 6 && x >= 4 && x < 24)
                v += 150;
            img[(size_t)i * 784 + (size_t)p] = (uint8_t)v;
        }
    }
    char path[4096];
    int idims[3] = {n, 28, 28}, ldims[1] = {n};
    snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte%s", dir, split, gz ? ".gz" : "");
    TT_CHECK(tt_write_idx(path, gz, 3, idims, img) == 0, "writing %s", path);
    snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte%s", dir, split, gz ? ".gz" : "");
    TT_CHECK(tt_write_idx(path, gz, 1, ldims, lbl) == 0, "writing %s", path);
    free(img);
    free(lbl);
}

int tt_run(char *const argv[], const char *out_path, int timeout_s)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
    posix_spawnattr_init(&at);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    TT_CHECK(rc == 0, "cannot start %s: %s", argv[0], strerror(rc));
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        int status;
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec >= timeout_s) {
            kill(-pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        usleep(5000);
    }
}

char *tt_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n - 1 == 0) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb)
                free(buf);
            buf = nb;
        }
    }
    fclose(f);
    if (buf)
        buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

double tt_ckpt_maxdiff(const char *a, const char *b, double *state_diff)
{
    void *ba, *bb;
    size_t la, lb;
    if (orb_train_ckpt_read(a, &ba, &la) != ORB_OK)
        return -1;
    if (orb_train_ckpt_read(b, &bb, &lb) != ORB_OK) {
        free(ba);
        return -1;
    }
    orb_train_ckpt_info_t ia, ib;
    const float *pa, *pb, *sa[2], *sb[2];
    double d = -1;
    if (orb_train_ckpt_parse(a, ba, la, &ia, &pa, sa, NULL) == ORB_OK &&
        orb_train_ckpt_parse(b, bb, lb, &ib, &pb, sb, NULL) == ORB_OK && ia.nparams == ib.nparams &&
        ia.nstate == ib.nstate) {
        d = 0;
        double s = 0;
        for (uint64_t i = 0; i < ia.nparams; i++) {
            d = fmax(d, fabs((double)pa[i] - (double)pb[i]));
            for (int k = 0; k < ia.nstate; k++)
                s = fmax(s, fabs((double)sa[k][i] - (double)sb[k][i]));
        }
        if (state_diff)
            *state_diff = s;
    }
    free(ba);
    free(bb);
    return d;
}

int tt_launch_prefix(const char *kind, const char *orbitrun, const char *mpirun, int n, char **argv)
{
    static char nbuf[16];
    snprintf(nbuf, sizeof nbuf, "%d", n);
    int k = 0;
    if (strcmp(kind, "mpi") == 0) {
        argv[k++] = (char *)mpirun;
        argv[k++] = "--allow-run-as-root";
        argv[k++] = "--oversubscribe";
        argv[k++] = "-n";
        argv[k++] = nbuf;
    } else {
        argv[k++] = (char *)orbitrun;
        argv[k++] = "-n";
        argv[k++] = nbuf;
        argv[k++] = "--";
    }
    return k;
}

void tt_mpi_quiet_leaks(void)
{
    const char *old = getenv("ASAN_OPTIONS");
    char buf[2048];
    snprintf(buf, sizeof buf, "%s%sdetect_leaks=0", old ? old : "", old && *old ? ":" : "");
    setenv("ASAN_OPTIONS", buf, 1);
}

int tt_launch_args(int argc, char **argv, tt_launch_t *l)
{
    TT_CHECK(argc == 5, "usage: %s ORBIT_TRAIN ORBITRUN MPIRUN custom|mpi", argv[0]);
    *l = (tt_launch_t){argv[1], argv[2], argv[3], argv[4]};
    if (strcmp(l->kind, "mpi") == 0) {
        if (access(l->mpirun, X_OK) != 0) {
            printf("SKIP: no mpirun\n");
            return TT_SKIP;
        }
        tt_mpi_quiet_leaks();
    }
    return 0;
}

double tt_json_after(const char *json, const char *pattern)
{
    char *s = tt_read_file(json, NULL);
    TT_CHECK(s != NULL, "no %s", json);
    char *p = strstr(s, pattern);
    TT_CHECK(p != NULL, "%s has no %s", json, pattern);
    double v = strtod(p + strlen(pattern), NULL);
    free(s);
    return v;
}

void tt_ckpt_load(const char *path, tt_ckpt_t *c)
{
    size_t len;
    orb_train_ckpt_info_t info;
    const float *state[2];
    TT_CHECK(orb_train_ckpt_read(path, &c->blob, &len) == ORB_OK, "cannot read checkpoint %s", path);
    TT_CHECK(orb_train_ckpt_parse(path, c->blob, len, &info, &c->p, state, &c->b) == ORB_OK, "cannot parse %s", path);
    c->s = state[0];
    c->n = info.nparams;
    c->nb = info.nbuffers;
    c->nstate = info.nstate;
}

double tt_maxabs_diff(const float *a, const float *b, size_t off, size_t n)
{
    double d = 0;
    for (size_t i = off; i < off + n; i++)
        d = fmax(d, fabs((double)a[i] - (double)(b ? b[i] : 0.0f)));
    return d;
}
