/* Runs whole jobs and judges them from outside:
 *   robust_driver chaos ORBITRUN TEST_ROBUST RUNS NRANKS
 *       RUNS jobs of NRANKS ranks; in each, one rank SIGKILLs itself at a random moment. Every
 *       survivor must fail with ORB_ERR_PEER_LOST naming that rank within 5 s, and /dev/shm
 *       must hold no more orbit segments afterwards than before.
 *   robust_driver launcher ORBITRUN TEST_ROBUST
 *       kill -9 the launcher of a running job: its ranks must be gone within 2 s.
 * Prints "N passed, N failed". */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int passed, failed;

static int count_shm(void)
{
    int n = 0;
    DIR *d = opendir("/dev/shm");
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strncmp(e->d_name, "orbit-", 6) == 0;
    closedir(d);
    return n;
}

static int chaos_run(const char *orbitrun, const char *prog, int seed, int nranks)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "ORBIT_TIMEOUT=30 %s -n %d --grace 8 %s chaos %d 2>&1", orbitrun, nranks, prog, seed);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    char line[4096];
    int victim = -1, survivors = 0, good = 0;
    double tv = 0, worst = 0;
    char bad[4096] = "";
    /* Lines of different ranks may arrive in any order: collect, then judge. */
    struct {
        char status[64];
        double t;
        char body[1024];
    } surv[64];
    while (fgets(line, sizeof line, p)) {
        int r, v;
        double t;
        char status[64];
        const char *body = strchr(line, ']');
        body = body ? body + 2 : line;
        if (sscanf(body, "VICTIM %d %lf", &v, &t) == 2) {
            victim = v;
            tv = t;
        } else if (sscanf(body, "SURVIVOR %d %63s %lf", &r, status, &t) == 3 && survivors < 64) {
            snprintf(surv[survivors].status, sizeof surv[survivors].status, "%s", status);
            surv[survivors].t = t;
            snprintf(surv[survivors].body, sizeof surv[survivors].body, "%.1000s", body);
            survivors++;
        }
    }
    char want[32];
    snprintf(want, sizeof want, "rank %d ", victim);
    for (int i = 0; i < survivors; i++) {
        if (!strcmp(surv[i].status, "ORB_ERR_PEER_LOST") && victim >= 0 && strstr(surv[i].body, want)) {
            good++;
            if (surv[i].t - tv > worst)
                worst = surv[i].t - tv;
        } else if (!bad[0]) {
            snprintf(bad, sizeof bad, "%s", surv[i].body);
        }
    }
    int rc = pclose(p);
    int ok = victim >= 0 && survivors == nranks - 1 && good == survivors && worst < 5.0;
    if (!ok)
        fprintf(stderr, "FAIL chaos seed %d: victim %d, %d survivors reported, %d correctly, slowest %.2f s, "
                        "launcher status %d; %s\n", seed, victim, survivors, good, worst, rc, bad);
    else
        printf("chaos seed %d: rank %d killed; %d survivors reported ORB_ERR_PEER_LOST within %.3f s\n", seed, victim,
               survivors, worst);
    return ok;
}

static int state_alive(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *q = strrchr(buf, ')');
    return q && q[2] != 'Z' && q[2] != 'X';
}

static int launcher_kill(const char *orbitrun, const char *prog)
{
    pid_t l = fork();
    if (l == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        dup2(devnull, 2);
        execl(orbitrun, orbitrun, "-n", "3", prog, "forever", (char *)NULL);
        _exit(127);
    }
    sleep(2);
    pid_t kids[16];
    int nk = 0;
    char path[128];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)l, (int)l);
    FILE *f = fopen(path, "r");
    if (f) {
        int k;
        while (nk < 16 && fscanf(f, "%d", &k) == 1)
            kids[nk++] = k;
        fclose(f);
    }
    kill(l, SIGKILL);
    waitpid(l, NULL, 0);
    int alive = nk;
    for (int tries = 0; tries < 40 && alive; tries++) {
        usleep(50000);
        alive = 0;
        for (int i = 0; i < nk; i++)
            alive += state_alive(kids[i]);
    }
    int ok = nk == 3 && alive == 0;
    if (!ok)
        fprintf(stderr, "FAIL launcher kill: %d ranks seen, %d still alive 2 s after kill -9 of orbitrun\n", nk, alive);
    else
        printf("launcher kill -9: all %d ranks gone\n", nk);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc >= 6 && !strcmp(argv[1], "chaos")) {
        int runs = atoi(argv[4]), n = atoi(argv[5]);
        unsigned base = (unsigned)time(NULL);
        for (int i = 0; i < runs; i++) {
            int before = count_shm();
            int ok = chaos_run(argv[2], argv[3], (int)(base % 100000) + i, n);
            int after = count_shm();
            if (after > before) {
                fprintf(stderr, "FAIL: %d orbit segments left in /dev/shm\n", after - before);
                ok = 0;
            }
            ok ? passed++ : failed++;
        }
    } else if (argc >= 4 && !strcmp(argv[1], "launcher")) {
        launcher_kill(argv[2], argv[3]) ? passed++ : failed++;
    } else {
        fprintf(stderr, "usage: robust_driver chaos ORBITRUN PROG RUNS NRANKS | launcher ORBITRUN PROG\n");
        return 2;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
