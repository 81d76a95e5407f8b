/* The choice of stores into shared-memory slots (collectives/slot_stores.h), driven with
 * made-up copy rates and FIFO positions: which pieces are timed, when the verdict turns far
 * and back, that one odd copy does not turn it, that while streaming the timed copy is the
 * second of a pair one lap apart in the same slot, and that the forced modes, small pieces and
 * reductions never take part. */
#include <stdio.h>
#include <string.h>

#include "collectives/slot_stores.h"

#define NSLOTS 8

static int failed;
static uint64_t pos; /* the FIFO position of the next piece: every pick posts one */

#define EXPECT(cond, ...)                                                                                          \
    do {                                                                                                           \
        if (!(cond)) {                                                                                             \
            fprintf(stderr, "FAIL line %d: ", __LINE__);                                                           \
            fprintf(stderr, __VA_ARGS__);                                                                          \
            fputc('\n', stderr);                                                                                   \
            failed++;                                                                                              \
        }                                                                                                          \
    } while (0)

static const char *name(orb_slot_write_t w)
{
    return w == ORB_SLOT_WRITE_CACHED ? "cached" : w == ORB_SLOT_WRITE_TIMED ? "timed" : "stream";
}

static orb_slot_write_t pick(orb_slot_stores_t *s, size_t bytes, int copy)
{
    return orb_slot_stores_pick(s, bytes, copy, pos++, NSLOTS);
}

/* The next `every` picks of big copies while near: every-1 ordinary, then one timed. */
static void expect_near_cycle(orb_slot_stores_t *s, const char *when)
{
    for (int i = 1; i <= ORB_SLOT_STORES_NEAR_EVERY; i++) {
        const orb_slot_write_t w = pick(s, ORB_SLOT_STORES_MIN_PIECE, 1);
        const orb_slot_write_t want = i == ORB_SLOT_STORES_NEAR_EVERY ? ORB_SLOT_WRITE_TIMED : ORB_SLOT_WRITE_CACHED;
        EXPECT(w == want, "%s: pick %d of %d: %s, expected %s", when, i, ORB_SLOT_STORES_NEAR_EVERY, name(w), name(want));
    }
}

/* While far: FAR_EVERY-1 streamed copies, one ordinary (the pair's first, at position p),
 * streamed ones up to p + NSLOTS, which is ordinary and timed. */
static void expect_far_cycle(orb_slot_stores_t *s, const char *when)
{
    for (int i = 1; i < ORB_SLOT_STORES_FAR_EVERY; i++) {
        const orb_slot_write_t w = pick(s, ORB_SLOT_STORES_MIN_PIECE, 1);
        EXPECT(w == ORB_SLOT_WRITE_STREAM, "%s: pick %d of %d: %s, expected stream", when, i,
               ORB_SLOT_STORES_FAR_EVERY, name(w));
    }
    const uint64_t p = pos;
    orb_slot_write_t w = pick(s, ORB_SLOT_STORES_MIN_PIECE, 1);
    EXPECT(w == ORB_SLOT_WRITE_CACHED, "%s: the pair's first copy at %llu: %s, expected cached", when,
           (unsigned long long)p, name(w));
    while (pos < p + NSLOTS) {
        w = pick(s, ORB_SLOT_STORES_MIN_PIECE, 1);
        EXPECT(w == ORB_SLOT_WRITE_STREAM, "%s: position %llu within the lap: %s, expected stream", when,
               (unsigned long long)(pos - 1), name(w));
    }
    w = pick(s, ORB_SLOT_STORES_MIN_PIECE, 1);
    EXPECT(w == ORB_SLOT_WRITE_TIMED, "%s: the same slot a lap later (%llu): %s, expected timed", when,
           (unsigned long long)(p + NSLOTS), name(w));
}

int main(void)
{
    const size_t big = (size_t)1 << 20, small = ORB_SLOT_STORES_MIN_PIECE - 1;

    /* forced modes, no floor, small pieces */
    orb_slot_stores_t s = {.mode = ORB_SLOT_STORES_STREAM, .floor_gbps = 4};
    EXPECT(pick(&s, 8, 1) == ORB_SLOT_WRITE_STREAM, "stream: an 8-byte piece not streamed");
    EXPECT(pick(&s, big, 0) == ORB_SLOT_WRITE_STREAM, "stream: a 1 MiB reduction not streamed");
    s = (orb_slot_stores_t){.mode = ORB_SLOT_STORES_CACHED, .floor_gbps = 4};
    for (int i = 0; i < 300; i++)
        EXPECT(pick(&s, big, 1) == ORB_SLOT_WRITE_CACHED, "cached: piece %d not ordinary", i);
    s = (orb_slot_stores_t){.mode = ORB_SLOT_STORES_AUTO, .floor_gbps = 0};
    for (int i = 0; i < 300; i++)
        EXPECT(pick(&s, big, 1) == ORB_SLOT_WRITE_CACHED, "auto without a floor: piece %d not ordinary", i);
    s = (orb_slot_stores_t){.mode = ORB_SLOT_STORES_AUTO, .floor_gbps = 4};
    for (int i = 0; i < 100; i++)
        EXPECT(pick(&s, small, 1) == ORB_SLOT_WRITE_CACHED, "auto: small piece %d not ordinary", i);
    EXPECT(s.since == 0, "auto: small pieces counted towards the next timed copy (%u)", s.since);
    /* reductions into the slot are never timed, nor counted towards the next timed copy */
    for (int i = 0; i < 100; i++)
        EXPECT(pick(&s, big, 0) == ORB_SLOT_WRITE_CACHED, "auto: reduction %d not ordinary", i);
    EXPECT(s.since == 0, "auto: reductions counted towards the next timed copy (%u)", s.since);

    /* near: one timed copy in every NEAR_EVERY */
    expect_near_cycle(&s, "near");
    expect_near_cycle(&s, "near, again");

    /* fewer than three copies never decide, however slow */
    EXPECT(orb_slot_stores_sample(&s, 0.5) == 0 && !s.far, "one slow copy turned the verdict");
    EXPECT(orb_slot_stores_sample(&s, 0.5) == 0 && !s.far, "two slow copies turned the verdict");
    /* the median decides: two slow of three is far, and the change is reported once */
    EXPECT(orb_slot_stores_sample(&s, 10) == 1 && s.far, "median of 0.5 0.5 10 under 4: not far");
    EXPECT(orb_slot_stores_sample(&s, 2) == 0 && s.far, "still slow: reported a change or left far");
    expect_far_cycle(&s, "far");
    EXPECT(pick(&s, big, 0) == ORB_SLOT_WRITE_STREAM, "far: a reduction into the slot not streamed");
    expect_far_cycle(&s, "far, again");
    /* a pair whose second piece is not a copy (a reduction, or one under 32 KiB) is dropped,
     * and the next cycle starts a new one */
    for (int i = 1; i < ORB_SLOT_STORES_FAR_EVERY; i++)
        (void)pick(&s, big, 1);
    EXPECT(pick(&s, big, 1) == ORB_SLOT_WRITE_CACHED, "far: no pair's first copy after %d",
           ORB_SLOT_STORES_FAR_EVERY);
    for (int i = 1; i < NSLOTS; i++)
        (void)pick(&s, big, 1);
    EXPECT(pick(&s, big, 0) == ORB_SLOT_WRITE_STREAM, "far: the lap's second piece, a reduction: not streamed");
    EXPECT(s.probe == 0, "far: the pair not dropped after its second piece went by as a reduction");
    expect_far_cycle(&s, "far, after a dropped pair");

    /* held: 0.5 0.5 10 2; fast copies turn it back once they are the median */
    EXPECT(orb_slot_stores_sample(&s, 20) == 0 && s.far, "0.5 0.5 10 2 20: median 2, still far");
    EXPECT(orb_slot_stores_sample(&s, 20) == 1 && !s.far,
           "the ring holds the last five, 20 over the oldest 0.5: 20 0.5 10 2 20, median %g over 4: not near again",
           orb_slot_stores_median(&s));
    expect_near_cycle(&s, "near again");
    /* one odd copy among fast ones (a preemption) does not turn it: 20 0.3 10 2 20 */
    EXPECT(orb_slot_stores_sample(&s, 0.3) == 0 && !s.far, "one slow copy among fast ones turned it far");
    EXPECT(orb_slot_stores_median(&s) == 10, "median of 20 0.3 10 2 20: %g, expected 10", orb_slot_stores_median(&s));
    orb_slot_stores_t four = {.n = 4, .gbps = {8, 1, 4, 2}};
    EXPECT(orb_slot_stores_median(&four) == 3, "median of 8 1 4 2: %g, expected 3", orb_slot_stores_median(&four));
    return failed ? (fprintf(stderr, "%d checks failed\n", failed), 1) : (printf("slot stores: all checks passed\n"), 0);
}
