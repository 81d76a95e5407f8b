/* Ranks of one job taking turns outside orbit, without timing: a rank marks an event with a
 * file in /dev/shm named after the job (the launcher's pid, the same for every rank), another
 * waits for that file and takes it away. Header-only: tests that link liborbit alone use it. */
#ifndef ORB_TESTS_TAKE_TURNS_H
#define ORB_TESTS_TAKE_TURNS_H

#include <stdio.h>
#include <unistd.h>

static inline void turn_path(char *path, size_t len, const char *tag, const char *what)
{
    snprintf(path, len, "/dev/shm/orbit-%s-%d-%s", tag, (int)getppid(), what);
}

static inline void turn_mark(const char *tag, const char *what)
{
    char path[160];
    turn_path(path, sizeof path, tag, what);
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
}

/* Is the mark there? (left in place) */
static inline int turn_seen(const char *tag, const char *what)
{
    char path[160];
    turn_path(path, sizeof path, tag, what);
    return access(path, F_OK) == 0;
}

/* 1 once the mark is there (and removed); 0 after `seconds`, with a FAIL line naming rank and file. */
static inline int turn_wait_for(const char *tag, const char *what, int rank, int seconds)
{
    char path[160];
    turn_path(path, sizeof path, tag, what);
    for (int i = 0; i < seconds * 100; i++) {
        if (unlink(path) == 0)
            return 1;
        usleep(10000);
    }
    fprintf(stderr, "FAIL rank %d: %s never appeared\n", rank, path);
    return 0;
}

static inline int turn_wait(const char *tag, const char *what, int rank) { return turn_wait_for(tag, what, rank, 90); }

#endif
