/* From which size a call writes past the caches (comm/comm_cache.c): the size a call that
 * copies, all-reduces or reduces into an output of its own streams from, and which calls those
 * are, with the bytes that decide it (the output; a reduction's input). Pure
 * functions, checked against figures worked out by hand from the rule in comm_impl.h (a
 * quarter of each host rank's share of the last-level cache, at least twice the L2, at most
 * the whole cache; ORBIT_STREAM_BYTES > 0 sets it, -1 never), so a changed rule fails here.
 *   test_stream_from
 * Prints each failure and exits 1 on any. */
#include <stdint.h>
#include <stdio.h>

#include "comm/comm_impl.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

static int failed;

static void bytes_case(double env, size_t llc, size_t l2, int host_ranks, size_t want)
{
    const size_t got = orb_stream_copy_bytes(env, llc, l2, host_ranks);
    if (got != want) {
        printf("FAIL orb_stream_copy_bytes(env %g, llc %zu, l2 %zu, %d host ranks) = %zu, want %zu\n", env, llc, l2,
               host_ranks, got, want);
        failed = 1;
    }
}

static void call_case(const char *what, orb_coll_t coll, const void *in, size_t in_bytes, const void *out,
                      size_t out_bytes, size_t want)
{
    const size_t got = orb_stream_copy_span(coll, in, in_bytes, out, out_bytes);
    if (got != want) {
        printf("FAIL orb_stream_copy_span: %s: %zu, want %zu\n", what, got, want);
        failed = 1;
    }
}

int main(void)
{
    /* the machine decides (env 0) */
    bytes_case(0, 32 * MiB, 1 * MiB, 2, 4 * MiB);   /* this Zen 4 VM, 2 ranks: 32 / (4 * 2) */
    bytes_case(0, 32 * MiB, 1 * MiB, 1, 8 * MiB);   /* one rank on the host */
    bytes_case(0, 32 * MiB, 1 * MiB, 4, 2 * MiB);   /* 32 / 16 = 2 MiB, the floor too */
    bytes_case(0, 32 * MiB, 1 * MiB, 8, 2 * MiB);   /* 1 MiB share, raised to twice the L2 */
    bytes_case(0, 32 * MiB, 0, 16, 512 * KiB);      /* no L2 figure: twice 256 KiB */
    bytes_case(0, 256 * MiB, 1 * MiB, 2, 32 * MiB); /* a large L3 */
    bytes_case(0, 1 * MiB, 1 * MiB, 1, 1 * MiB);    /* floor above the cache: the cache's size */
    bytes_case(0, 36 * MiB, 2 * MiB, 3, 4 * MiB);   /* 36 / 12 = 3 MiB under twice a 2 MiB L2 */
    bytes_case(0, 32 * MiB, 1 * MiB, 0, 8 * MiB);   /* no rank count: taken as one */
    bytes_case(0, 0, 1 * MiB, 2, SIZE_MAX);         /* no cache size: never */
    /* ORBIT_STREAM_BYTES set */
    bytes_case(-1, 32 * MiB, 1 * MiB, 2, SIZE_MAX);
    bytes_case(12345, 32 * MiB, 1 * MiB, 2, 12345);
    bytes_case(1, 0, 0, 2, 1);

    static char buf[4096];
    char *a = buf, *b = buf + 1024;
    /* the bytes that decide (0: the whole cache's size does) */
    call_case("broadcast, two buffers", ORB_COLL_BROADCAST, a, 1024, b, 1024, 1024);
    call_case("broadcast in place", ORB_COLL_BROADCAST, a, 1024, a, 1024, 0);
    call_case("broadcast, a non-root in place (no input counted)", ORB_COLL_BROADCAST, a, 0, a, 1024, 0);
    call_case("broadcast, a non-root without an input buffer", ORB_COLL_BROADCAST, NULL, 0, b, 1024, 1024);
    call_case("all-gather, two buffers", ORB_COLL_ALLGATHER, a, 512, b, 1024, 1024);
    call_case("all-gather in place (input inside the output)", ORB_COLL_ALLGATHER, b + 512, 512, b, 1024, 1024);
    call_case("all-gather in place, rank 0 (input at the output's start)", ORB_COLL_ALLGATHER, b, 512, b, 1024, 1024);
    call_case("gather in place, the root", ORB_COLL_GATHER, b + 256, 256, b, 1024, 1024);
    call_case("all-to-all in place", ORB_COLL_ALLTOALL, a, 1024, a, 1024, 0);
    call_case("scatter, the root, two buffers (its output decides)", ORB_COLL_SCATTER, a, 1024, b, 256, 256);
    call_case("scatter in place, the root", ORB_COLL_SCATTER, a, 1024, a + 256, 256, 0);
    call_case("buffers that touch but do not overlap", ORB_COLL_SEND, a, 1024, a + 1024, 1024, 1024);
    call_case("one byte in common", ORB_COLL_ALLTOALL, a, 1025, a + 1024, 1024, 0);
    call_case("output before input, one byte in common", ORB_COLL_SCATTER, a + 1023, 512, a, 1024, 0);
    call_case("gather, a non-root (no output)", ORB_COLL_GATHER, a, 512, NULL, 0, 0);
    call_case("an output of no bytes", ORB_COLL_RECV, a, 0, b, 0, 0);
    call_case("all-reduce, two buffers", ORB_COLL_ALLREDUCE, a, 1024, b, 1024, 1024);
    call_case("all-reduce in place", ORB_COLL_ALLREDUCE, a, 1024, a, 1024, 0);
    call_case("all-reduce, output inside the input", ORB_COLL_ALLREDUCE, a, 2048, a + 512, 1024, 0);
    call_case("reduce, the root, two buffers (its input decides)", ORB_COLL_REDUCE, a, 1024, b, 1024, 1024);
    call_case("reduce, a non-root (no output)", ORB_COLL_REDUCE, a, 1024, NULL, 0, 0);
    call_case("reduce in place", ORB_COLL_REDUCE, a, 1024, a, 1024, 0);
    call_case("reduce-scatter, two buffers (its input, 4 times the output)", ORB_COLL_REDUCE_SCATTER, a, 2048,
              buf + 3072, 512, 2048);
    call_case("reduce-scatter in place (output inside the input)", ORB_COLL_REDUCE_SCATTER, a, 2048, a + 512, 512, 0);
    call_case("barrier", ORB_COLL_BARRIER, a, 1, b, 1, 0);

    printf("%s\n", failed ? "stream-from: FAILED" : "stream-from: all cases passed");
    return failed;
}
