/* orbitrun -n N [--] PROGRAM ARGS...
 *
 * The single-node launcher (like torchrun --standalone --nproc_per_node=N): starts N ranks
 * with the torchrun-style environment, prefixes each output line with the rank, forwards
 * SIGINT/SIGTERM, and when a rank fails, stops the others and exits with its status. Ranks
 * die with the launcher (PR_SET_PDEATHSIG), and the shared memory of the job is removed at
 * the end whatever happened. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#define MAX_RANKS 1024
#define LINE_MAX_BYTES 65536

typedef struct {
    pid_t pid;
    int out_fd, err_fd;
    char *out_buf, *err_buf;
    size_t out_len, err_len;
    int exited;
    int status;
} rank_t;

static volatile sig_atomic_t got_signal;

static void on_signal(int sig) { got_signal = sig; }

static void usage(FILE *f)
{
    fprintf(f, "usage: orbitrun -n N [--grace S] [--no-tag] [--] PROGRAM [ARGS...]\n"
               "  Starts N ranks of PROGRAM on this host with RANK, WORLD_SIZE, LOCAL_RANK,\n"
               "  LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT and ORBIT_SECRET set.\n"
               "  Output lines are prefixed with [rank]. If a rank fails, the others are stopped\n"
               "  and orbitrun exits with that rank's status (128+signal if it was killed).\n"
               "  --grace S  seconds the other ranks get to exit on their own after a failure\n"
               "             (default 3) before SIGTERM, then SIGKILL 5 s later.\n");
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

/* Write whole lines from buf with a "[rank] " prefix; keep a partial last line. */
static void flush_lines(int rank, int fd_out, char *buf, size_t *len, int final, int tag)
{
    if (!buf || *len == 0)
        return;
    size_t start = 0;
    for (size_t i = 0; i < *len; i++) {
        if (buf[i] != '\n' && !(final && i + 1 == *len) && (i - start) < LINE_MAX_BYTES - 1)
            continue;
        char prefix[32];
        int pn = tag ? snprintf(prefix, sizeof prefix, "[%d] ", rank) : 0;
        size_t n = i - start + 1;
        char *line = malloc((size_t)pn + n + 1);
        if (!line)
            return;
        memcpy(line, prefix, (size_t)pn);
        memcpy(line + pn, buf + start, n);
        size_t total = (size_t)pn + n;
        if (line[total - 1] != '\n')
            line[total++] = '\n';
        ssize_t w = write(fd_out, line, total); /* one write per line: lines stay whole */
        (void)w;
        free(line);
        start = i + 1;
    }
    if (start > 0) {
        memmove(buf, buf + start, *len - start);
        *len -= start;
    }
}

static void drain(rank_t *r, int idx, int which, int tag)
{
    int fd = which ? r->err_fd : r->out_fd;
    char **buf = which ? &r->err_buf : &r->out_buf;
    size_t *len = which ? &r->err_len : &r->out_len;
    char tmp[16384];
    ssize_t n = read(fd, tmp, sizeof tmp);
    if (n <= 0) {
        if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
            flush_lines(idx, which ? STDERR_FILENO : STDOUT_FILENO, *buf, len, 1, tag);
            close(fd);
            if (which)
                r->err_fd = -1;
            else
                r->out_fd = -1;
        }
        return;
    }
    char *nb = realloc(*buf, *len + (size_t)n);
    if (!nb)
        return;
    *buf = nb;
    memcpy(*buf + *len, tmp, (size_t)n);
    *len += (size_t)n;
    flush_lines(idx, which ? STDERR_FILENO : STDOUT_FILENO, *buf, len, 0, tag);
}

/* Remove what a killed rank may have left in /dev/shm: this job's segments only. */
static void clean_shm(const char *secret_hex)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "orbit-%.12s-", secret_hex);
    DIR *d = opendir("/dev/shm");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, prefix, strlen(prefix))) {
            char path[512];
            snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
            unlink(path);
        }
    closedir(d);
}

static int status_code(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 1;
}

int main(int argc, char **argv)
{
    int n = -1, tag = 1, argi = 1, grace = 3;
    for (; argi < argc; argi++) {
        const char *a = argv[argi];
        if (!strcmp(a, "--")) {
            argi++;
            break;
        } else if (!strcmp(a, "-n") || !strcmp(a, "--nproc") || !strcmp(a, "-np")) {
            if (argi + 1 >= argc) {
                fprintf(stderr, "orbitrun: %s needs a number of ranks\n", a);
                return 2;
            }
            char *end;
            long v = strtol(argv[++argi], &end, 10);
            if (*end || v < 1 || v > MAX_RANKS) {
                fprintf(stderr, "orbitrun: -n %s: the number of ranks must be 1..%d\n", argv[argi], MAX_RANKS);
                return 2;
            }
            n = (int)v;
        } else if (!strcmp(a, "--grace")) {
            char *end;
            long v = argi + 1 < argc ? strtol(argv[++argi], &end, 10) : -1;
            if (v < 0 || v > 3600 || *end) {
                fprintf(stderr, "orbitrun: --grace needs seconds (0..3600)\n");
                return 2;
            }
            grace = (int)v;
        } else if (!strcmp(a, "--no-tag")) {
            tag = 0;
        } else if (!strcmp(a, "--tag-output")) {
            tag = 1;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (a[0] == '-') {
            fprintf(stderr, "orbitrun: unknown option %s\n", a);
            usage(stderr);
            return 2;
        } else {
            break;
        }
    }
    if (n < 0 || argi >= argc) {
        fprintf(stderr, "orbitrun: %s\n", n < 0 ? "-n N is required" : "no program to run");
        usage(stderr);
        return 2;
    }

    unsigned char secret[16];
    if (getrandom(secret, sizeof secret, 0) != (ssize_t)sizeof secret) {
        perror("orbitrun: getrandom");
        return 1;
    }
    char secret_hex[33];
    for (int i = 0; i < 16; i++)
        snprintf(secret_hex + 2 * i, 3, "%02x", secret[i]);
    int port = free_port();
    if (port < 0) {
        perror("orbitrun: cannot find a free port");
        return 1;
    }
    char nbuf[16], pbuf[16];
    snprintf(nbuf, sizeof nbuf, "%d", n);
    snprintf(pbuf, sizeof pbuf, "%d", port);

    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    rank_t *ranks = calloc((size_t)n, sizeof *ranks);
    if (!ranks)
        return 1;
    pid_t launcher = getpid();
    for (int r = 0; r < n; r++) {
        int po[2], pe[2];
        if (pipe2(po, O_CLOEXEC) != 0 || pipe2(pe, O_CLOEXEC) != 0) {
            perror("orbitrun: pipe");
            return 1;
        }
        pid_t pid = fork();
        if (pid < 0) {
            perror("orbitrun: fork");
            for (int k = 0; k < r; k++)
                kill(ranks[k].pid, SIGKILL);
            return 1;
        }
        if (pid == 0) {
            /* Die with the launcher, even if it is killed with SIGKILL. */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != launcher)
                _exit(137);
            signal(SIGINT, SIG_DFL);
            signal(SIGTERM, SIG_DFL);
            signal(SIGPIPE, SIG_DFL);
            dup2(po[1], STDOUT_FILENO);
            dup2(pe[1], STDERR_FILENO);
            char rb[16];
            snprintf(rb, sizeof rb, "%d", r);
            setenv("RANK", rb, 1);
            setenv("LOCAL_RANK", rb, 1);
            setenv("GROUP_RANK", "0", 1);
            setenv("WORLD_SIZE", nbuf, 1);
            setenv("LOCAL_WORLD_SIZE", nbuf, 1);
            setenv("MASTER_ADDR", "127.0.0.1", 1);
            setenv("MASTER_PORT", pbuf, 1);
            setenv("ORBIT_SECRET", secret_hex, 1);
            execvp(argv[argi], &argv[argi]);
            fprintf(stderr, "orbitrun: cannot run %s: %s\n", argv[argi], strerror(errno));
            _exit(127);
        }
        close(po[1]);
        close(pe[1]);
        ranks[r].pid = pid;
        ranks[r].out_fd = po[0];
        ranks[r].err_fd = pe[0];
        fcntl(po[0], F_SETFL, O_NONBLOCK);
        fcntl(pe[0], F_SETFL, O_NONBLOCK);
    }

    int running = n, first_fail = -1, fail_code = 0, stopping = 0;
    struct timespec stop_at = {0};
    struct pollfd *pfd = calloc((size_t)(2 * n), sizeof *pfd);
    for (;;) {
        /* output */
        int np = 0;
        for (int r = 0; r < n; r++) {
            if (ranks[r].out_fd >= 0)
                pfd[np++] = (struct pollfd){.fd = ranks[r].out_fd, .events = POLLIN};
            if (ranks[r].err_fd >= 0)
                pfd[np++] = (struct pollfd){.fd = ranks[r].err_fd, .events = POLLIN};
        }
        if (np == 0 && running == 0)
            break;
        if (np > 0 && poll(pfd, (nfds_t)np, 100) > 0) {
            for (int r = 0; r < n; r++) {
                for (int w = 0; w < 2; w++) {
                    int fd = w ? ranks[r].err_fd : ranks[r].out_fd;
                    for (int k = 0; k < np; k++)
                        if (pfd[k].fd == fd && fd >= 0 && pfd[k].revents)
                            drain(&ranks[r], r, w, tag);
                }
            }
        } else if (np == 0) {
            usleep(20000);
        }
        /* exits */
        int status;
        pid_t pid;
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
            for (int r = 0; r < n; r++)
                if (ranks[r].pid == pid && !ranks[r].exited) {
                    ranks[r].exited = 1;
                    ranks[r].status = status;
                    running--;
                    int code = status_code(status);
                    if (code != 0 && first_fail < 0 && !stopping) {
                        first_fail = r;
                        fail_code = code;
                        if (WIFSIGNALED(status))
                            fprintf(stderr, "orbitrun: rank %d (pid %d) was killed by signal %d (%s); stopping the "
                                            "other ranks\n",
                                    r, (int)pid, WTERMSIG(status), strsignal(WTERMSIG(status)));
                        else
                            fprintf(stderr, "orbitrun: rank %d (pid %d) exited with status %d; stopping the other "
                                            "ranks\n",
                                    r, (int)pid, code);
                    }
                }
        }
        if (got_signal && !stopping) {
            fprintf(stderr, "orbitrun: got signal %d; forwarding it to the ranks\n", (int)got_signal);
            for (int r = 0; r < n; r++)
                if (!ranks[r].exited)
                    kill(ranks[r].pid, got_signal);
            if (first_fail < 0)
                fail_code = 128 + got_signal;
            stopping = 1;
            clock_gettime(CLOCK_MONOTONIC, &stop_at);
        }
        if (first_fail >= 0 && !stopping && running > 0) {
            /* Give the others `grace` seconds to notice on their own and say why (orbit reports
             * a lost peer within a second), then SIGTERM, then SIGKILL. */
            stopping = 2;
            clock_gettime(CLOCK_MONOTONIC, &stop_at);
            stop_at.tv_sec += grace;
        }
        if (stopping && running > 0) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            double late = (double)(now.tv_sec - stop_at.tv_sec) + 1e-9 * (double)(now.tv_nsec - stop_at.tv_nsec);
            if (stopping == 2 && late >= 0) {
                for (int r = 0; r < n; r++)
                    if (!ranks[r].exited)
                        kill(ranks[r].pid, SIGTERM);
                stopping = 1;
            } else if (stopping == 1 && late >= 5) {
                for (int r = 0; r < n; r++)
                    if (!ranks[r].exited)
                        kill(ranks[r].pid, SIGKILL);
            }
        }
    }
    clean_shm(secret_hex);
    free(pfd);
    for (int r = 0; r < n; r++) {
        free(ranks[r].out_buf);
        free(ranks[r].err_buf);
    }
    free(ranks);
    return first_fail >= 0 ? fail_code : (got_signal ? 128 + got_signal : 0);
}
