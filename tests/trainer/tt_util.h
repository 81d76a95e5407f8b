/* Helpers shared by the trainer tests: synthetic IDX data written at test time, child
 * processes with a time limit, checkpoint comparison. */
#ifndef ORB_TRAIN_TEST_UTIL_H
#define ORB_TRAIN_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define TT_SKIP 77

#define TT_CHECK(cond, ...)                                                   \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                     \
            fputc('\n', stderr);                                              \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

/* A fresh directory under $TMPDIR (or /tmp), removed with its files by tt_rmtree. */
char *tt_mkdtemp(const char *tag);
void tt_rmtree(const char *dir);

/* Writes an IDX file of unsigned bytes; gz selects gzip. Returns 0 on success. */
int tt_write_idx(const char *path, int gz, int ndims, const int *dims, const uint8_t *data);

/* A learnable 10-class set of 28x28 images: class c has a bright bar at rows 2c..2c+5 over
 * noise. Writes <split>-images-idx3-ubyte and -labels-idx1-ubyte (with .gz when gz). */
void tt_write_synthetic(const char *dir, const char *split, int n, uint64_t seed, int gz);

/* Runs argv (NULL-terminated) with stdout+stderr to out_path, killing its process group
 * after timeout_s. Returns the exit status, 128+signal, or -1 when it timed out. */
int tt_run(char *const argv[], const char *out_path, int timeout_s);
/* Whole file as a NUL-terminated string (NULL if unreadable). */
char *tt_read_file(const char *path, size_t *len);

/* The number right after the first occurrence of pattern in the file json (a --json
 * report); exits naming the file when either is missing. */
double tt_json_after(const char *json, const char *pattern);

/* A checkpoint read whole (tt_ckpt_load exits naming the file when it cannot be read): its
 * parameters, first optimiser state vector (NULL: none) and model buffers (NULL: none). */
typedef struct {
    void *blob;
    const float *p, *s, *b;
    uint64_t n, nb;
    int nstate;
} tt_ckpt_t;
void tt_ckpt_load(const char *path, tt_ckpt_t *c);
/* max |a[i] - b[i]| over [off, off + n) (b NULL: max |a[i]|). */
double tt_maxabs_diff(const float *a, const float *b, size_t off, size_t n);

/* Largest |a-b| over two checkpoints' parameters (and optimiser state); -1 if either cannot
 * be read or they differ in shape. */
double tt_ckpt_maxdiff(const char *a, const char *b, double *state_diff);

/* For the mpi variants under AddressSanitizer: Open MPI leaks at MPI_Finalize from
 * components it has already unloaded, which LeakSanitizer cannot attribute or suppress by
 * library; leak checking is turned off for those runs only. */
void tt_mpi_quiet_leaks(void);

/* The launch tests' command line: ORBIT_TRAIN ORBITRUN MPIRUN custom|mpi. Exits on a bad
 * usage; returns TT_SKIP (after saying why) when the mpi variant has no mpirun, else 0. */
typedef struct {
    char *train_bin, *orbitrun, *mpirun, *kind;
} tt_launch_t;
int tt_launch_args(int argc, char **argv, tt_launch_t *l);

/* Launch prefix for N ranks: "custom" -> orbitrun -n N --, "mpi" -> mpirun ... -n N.
 * Fills argv from index 0 and returns the count used. */
int tt_launch_prefix(const char *kind, const char *orbitrun, const char *mpirun, int n, char **argv);

#endif
