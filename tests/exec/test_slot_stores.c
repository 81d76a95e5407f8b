/* The choice of stores into shared-memory slots (collectives/slot_stores.h), driven with
 * made-up copy rates: which pieces are timed, when the verdict turns far and back, that one
 * odd copy does not turn it, and that the forced modes and small pieces never take part. */
#include <stdio.h>
#include <string.h>

#include "collectives/slot_stores.h"

static int failed;

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

/* The next `every` picks of big pieces: every-1 of `plain`, then one timed. */
static void expect_cycle(orb_slot_stores_t *s, int every, orb_slot_write_t plain, const char *when)
{
    for (int i = 1; i <= every; i++) {
        const orb_slot_write_t w = orb_slot_stores_pick(s, ORB_SLOT_STORES_MIN_PIECE, 1);
        const orb_slot_write_t want = i == every ? ORB_SLOT_WRITE_TIMED : plain;
        EXPECT(w == want, "%s: pick %d of %d: %s, expected %s", when, i, every, name(w), name(want));
    }
}

int main(void)
{
    const size_t big = (size_t)1 << 20, small = ORB_SLOT_STORES_MIN_PIECE - 1;

    /* forced modes, no floor, small pieces */
    orb_slot_stores_t s = {.mode = ORB_SLOT_STORES_STREAM, .floor_gbps = 4};
    EXPECT(orb_slot_stores_pick(&s, 8, 1) == ORB_SLOT_WRITE_STREAM, "stream: an 8-byte piece not streamed");
    EXPECT(orb_slot_stores_pick(&s, big, 1) == ORB_SLOT_WRITE_STREAM, "stream: a 1 MiB piece not streamed");
    s = (orb_slot_stores_t){.mode = ORB_SLOT_STORES_CACHED, .floor_gbps = 4};
    for (int i = 0; i < 100; i++)
        EXPECT(orb_slot_stores_pick(&s, big, 1) == ORB_SLOT_WRITE_CACHED, "cached: piece %d not ordinary", i);
    s = (orb_slot_stores_t){.mode = ORB_SLOT_STORES_AUTO, .floor_gbps = 0};
    for (int i = 0; i < 100; i++)
        EXPECT(orb_slot_stores_pick(&s, big, 1) == ORB_SLOT_WRITE_CACHED, "auto without a floor: piece %d not ordinary", i);
    s = (orb_slot_stores_t){.mode = ORB_SLOT_STORES_AUTO, .floor_gbps = 4};
    for (int i = 0; i < 100; i++)
        EXPECT(orb_slot_stores_pick(&s, small, 1) == ORB_SLOT_WRITE_CACHED, "auto: small piece %d not ordinary", i);
    EXPECT(s.since == 0, "auto: small pieces counted towards the next timed copy (%u)", s.since);

    /* reductions into the slot are never timed, nor counted towards the next timed copy */
    for (int i = 0; i < 100; i++)
        EXPECT(orb_slot_stores_pick(&s, big, 0) == ORB_SLOT_WRITE_CACHED, "auto: reduction %d not ordinary", i);
    EXPECT(s.since == 0, "auto: reductions counted towards the next timed copy (%u)", s.since);
    /* near: one timed copy in every NEAR_EVERY */
    expect_cycle(&s, ORB_SLOT_STORES_NEAR_EVERY, ORB_SLOT_WRITE_CACHED, "near");
    expect_cycle(&s, ORB_SLOT_STORES_NEAR_EVERY, ORB_SLOT_WRITE_CACHED, "near, again");

    /* fewer than three copies never decide, however slow */
    EXPECT(orb_slot_stores_sample(&s, 0.5) == 0 && !s.far, "one slow copy turned the verdict");
    EXPECT(orb_slot_stores_sample(&s, 0.5) == 0 && !s.far, "two slow copies turned the verdict");
    /* the median decides: two slow of three is far, and the change is reported once */
    EXPECT(orb_slot_stores_sample(&s, 10) == 1 && s.far, "median of 0.5 0.5 10 under 4: not far");
    EXPECT(orb_slot_stores_sample(&s, 2) == 0 && s.far, "still slow: reported a change or left far");
    expect_cycle(&s, ORB_SLOT_STORES_FAR_EVERY, ORB_SLOT_WRITE_STREAM, "far");
    EXPECT(orb_slot_stores_pick(&s, big, 0) == ORB_SLOT_WRITE_STREAM, "far: a reduction into the slot not streamed");

    /* held: 0.5 0.5 10 2; fast copies turn it back once they are the median */
    EXPECT(orb_slot_stores_sample(&s, 20) == 0 && s.far, "0.5 0.5 10 2 20: median 2, still far");
    EXPECT(orb_slot_stores_sample(&s, 20) == 1 && !s.far,
           "the ring holds the last five, 20 over the oldest 0.5: 20 0.5 10 2 20, median %g over 4: not near again",
           orb_slot_stores_median(&s));
    expect_cycle(&s, ORB_SLOT_STORES_NEAR_EVERY, ORB_SLOT_WRITE_CACHED, "near again");
    /* one odd copy among fast ones (a preemption) does not turn it: 20 0.3 10 2 20 */
    EXPECT(orb_slot_stores_sample(&s, 0.3) == 0 && !s.far, "one slow copy among fast ones turned it far");
    EXPECT(orb_slot_stores_median(&s) == 10, "median of 20 0.3 10 2 20: %g, expected 10", orb_slot_stores_median(&s));
    orb_slot_stores_t four = {.n = 4, .gbps = {8, 1, 4, 2}};
    EXPECT(orb_slot_stores_median(&four) == 3, "median of 8 1 4 2: %g, expected 3", orb_slot_stores_median(&four));
    return failed ? (fprintf(stderr, "%d checks failed\n", failed), 1) : (printf("slot stores: all checks passed\n"), 0);
}
