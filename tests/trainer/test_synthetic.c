/* --data synthetic: the spec parser (good specs, bad ones named with the form to write), the
 * generator (same seed and index give the same sample and label on every call and machine,
 * another index, seed or split another sample; labels in range; pixels mean 0 variance 1),
 * and the sampler over the generated set (ranks' shards disjoint). */
#include <math.h>
#include <string.h>

#include "dataset.h"
#include "error.h"
#include "sampler.h"
#include "synthetic.h"
#include "tt_util.h"

/* seed 1, training split, sample 0: recorded when the generator was written */
#define GOLD_KEY 0xe28195ddd9ee4956ull
#define GOLD_P0 0x1.635e3cp-2f
#define GOLD_P1 0x1.3a424cp-1f
#define GOLD_P2 0x1.a5176p+0f
#define GOLD_LABEL 6

static void test_parse(void)
{
    orb_train_synth_spec_t s;
    TT_CHECK(orb_train_synth_parse("synthetic:3,224,224,1000", &s) == ORB_OK, "%s", orb_train_last_error());
    TT_CHECK(s.c == 3 && s.h == 224 && s.w == 224 && s.nclasses == 1000, "fields %d %d %d %d", s.c, s.h, s.w,
             s.nclasses);
    TT_CHECK(orb_train_synth_parse("synthetic:1,28,28,10", &s) == ORB_OK && s.c == 1 && s.nclasses == 10, "1x28x28");
    TT_CHECK(orb_train_synth_named("synthetic:1,2,3,4") && orb_train_synth_named("synthetic") &&
                 !orb_train_synth_named("synthetic-mnist") && !orb_train_synth_named("/data/synthetic:1"),
             "which --data values name the generator");
    static const char *const bad[] = {
        "synthetic:3,0,4,10",  "synthetic:abc",         "synthetic:1,28,28",         "synthetic:1,28,28,1",
        "synthetic",           "synthetic:",            "synthetic:1,28,28,10,5",    "synthetic:1,28,28,10x",
        "synthetic:-1,28,28,10", "synthetic:1;28;28;10", "synthetic:1,99999,28,10", "synthetic:1024,4096,4096,10",
        "synthetic:1,28,28,100001",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        orb_train_clear_error();
        TT_CHECK(orb_train_synth_parse(bad[i], &s) != ORB_OK, "'%s' accepted", bad[i]);
        const char *msg = orb_train_last_error();
        char want[128];
        snprintf(want, sizeof want, "--data %s:", bad[i]);
        TT_CHECK(strstr(msg, want) && strstr(msg, "write synthetic:C,H,W,CLASSES"),
                 "'%s': message '%s' names neither --data nor the form to write", bad[i], msg);
        printf("ok: %s\n", msg);
    }
}

static void batch(const orb_train_dataset_t *ds, const int64_t *idx, int n, float *x, int32_t *y)
{
    orb_train_dataset_batch(ds, idx, n, 0.0f, 1.0f, x, y);
}

static void test_determinism(void)
{
    orb_train_synth_spec_t spec = {3, 8, 5, 7};
    const size_t pix = 3 * 8 * 5;
    orb_train_dataset_t a, b, c, t;
    orb_train_dataset_synthetic(&spec, 11, "train", &a);
    orb_train_dataset_synthetic(&spec, 11, "train", &b);
    orb_train_dataset_synthetic(&spec, 12, "train", &c);
    orb_train_dataset_synthetic(&spec, 11, "t10k", &t);
    TT_CHECK(a.n == ORB_TRAIN_SYNTH_TRAIN_N && t.n == ORB_TRAIN_SYNTH_TEST_N && a.channels == 3 && a.rows == 8 &&
                 a.cols == 5 && a.nclasses == 7 && !a.pixels && !a.labels,
             "synthetic set description");
    double mean, std;
    orb_train_dataset_stats(&a, &mean, &std);
    TT_CHECK(mean == 0.0 && std == 1.0, "stats of generated data: %g %g", mean, std);

    int64_t idx[4] = {5, 6, 5, ORB_TRAIN_SYNTH_TRAIN_N - 1};
    float xa[4 * 120], xb[4 * 120], xc[4 * 120], xt[4 * 120];
    int32_t ya[4], yb[4], yc[4], yt[4];
    batch(&a, idx, 4, xa, ya);
    batch(&b, idx, 4, xb, yb);
    batch(&c, idx, 4, xc, yc);
    batch(&t, idx, 3, xt, yt);
    TT_CHECK(memcmp(xa, xb, sizeof xa) == 0 && memcmp(ya, yb, sizeof ya) == 0, "same seed, same samples");
    TT_CHECK(memcmp(xa, xa + 2 * pix, pix * sizeof(float)) == 0 && ya[0] == ya[2], "same index, same sample");
    TT_CHECK(memcmp(xa, xa + pix, pix * sizeof(float)) != 0, "another index, another sample");
    TT_CHECK(memcmp(xa, xc, pix * sizeof(float)) != 0, "another seed, another sample");
    TT_CHECK(memcmp(xa, xt, pix * sizeof(float)) != 0, "the test split is not the training split");
    /* the generator is pure integer work and one exact float multiply: these bits hold on
     * every machine, and a change to them changes every synthetic run */
    float px[3];
    uint64_t key = orb_train_synth_key(1, 0, 0);
    orb_train_synth_pixels(key, 3, px);
    printf("seed 1 sample 0: key %016llx pixels %a %a %a label %d\n", (unsigned long long)key, px[0], px[1], px[2],
           orb_train_synth_label(key, 10));
    TT_CHECK(key == GOLD_KEY && px[0] == GOLD_P0 && px[1] == GOLD_P1 && px[2] == GOLD_P2 &&
                 orb_train_synth_label(key, 10) == GOLD_LABEL,
             "the generator's output changed");
    /* normalisation still applies when asked for */
    float xn[120];
    int32_t yn;
    orb_train_dataset_batch(&a, idx, 1, 0.5f, 2.0f, xn, &yn);
    for (size_t i = 0; i < pix; i++)
        TT_CHECK(fabsf(xn[i] - (xa[i] - 0.5f) / 2.0f) < 1e-6f, "normalised pixel %zu", i);
}

static void test_distribution(void)
{
    /* labels in range and every class drawn about equally; pixels N(0, 1)-like */
    enum { N = 20000, K = 10 };
    orb_train_synth_spec_t spec = {1, 28, 28, K};
    orb_train_dataset_t ds;
    orb_train_dataset_synthetic(&spec, 3, "train", &ds);
    int64_t counts[K] = {0};
    double s = 0, s2 = 0, big = 0;
    float x[784];
    for (int64_t i = 0; i < N; i++) {
        int32_t y;
        batch(&ds, &i, 1, x, &y);
        TT_CHECK(y >= 0 && y < K, "label %d of sample %lld out of range", y, (long long)i);
        counts[y]++;
        if (i < 200)
            for (int p = 0; p < 784; p++) {
                s += x[p], s2 += (double)x[p] * x[p];
                big = fmax(big, fabs(x[p]));
            }
    }
    for (int k = 0; k < K; k++)
        TT_CHECK(counts[k] > N / K * 9 / 10 && counts[k] < N / K * 11 / 10, "class %d drawn %lld times of %d", k,
                 (long long)counts[k], N);
    double n = 200 * 784, m = s / n, var = s2 / n - m * m;
    printf("pixels: mean %.4f variance %.4f max |x| %.3f; labels %lld..%lld per class\n", m, var, big,
           (long long)counts[0], (long long)counts[K - 1]);
    TT_CHECK(fabs(m) < 0.01 && fabs(var - 1.0) < 0.02 && big < 3.47, "pixel distribution");
    /* many classes: the range holds at the top too */
    orb_train_synth_spec_t wide = {1, 1, 1, 1000};
    orb_train_dataset_synthetic(&wide, 3, "train", &ds);
    int32_t top = 0;
    for (int64_t i = 0; i < N; i++) {
        int32_t y;
        batch(&ds, &i, 1, x, &y);
        TT_CHECK(y >= 0 && y < 1000, "label %d out of [0, 1000)", y);
        top = y > top ? y : top;
    }
    TT_CHECK(top >= 990, "1000 classes: the largest label drawn is %d", top);
}

/* The generated set through the sampler: what the ranks train on is disjoint, and their
 * samples differ in content, not only in index. */
static void test_shards(void)
{
    const int64_t n = ORB_TRAIN_SYNTH_TRAIN_N;
    orb_train_synth_spec_t spec = {1, 28, 28, 10};
    orb_train_dataset_t ds;
    orb_train_dataset_synthetic(&spec, 1, "train", &ds);
    for (int world = 2; world <= 3; world++) {
        uint8_t *seen = calloc((size_t)n, 1);
        int64_t repeats = 0, total = 0;
        for (int r = 0; r < world; r++) {
            orb_train_shard_t s;
            TT_CHECK(orb_train_shard_make(n, r, world, 1, 0, 1, 1, &s) == ORB_OK, "shard");
            for (int64_t j = 0; j < s.count; j++) {
                TT_CHECK(s.idx[j] >= 0 && s.idx[j] < n, "index in range");
                repeats += seen[s.idx[j]]++ > 0;
                /* only the padding (the wrap to a multiple of world, at each shard's end) repeats */
                TT_CHECK(seen[s.idx[j]] == 1 || j == s.count - 1, "world %d: rank %d's sample %lld is another rank's",
                         world, r, (long long)s.idx[j]);
            }
            total += s.count;
            orb_train_shard_free(&s);
        }
        TT_CHECK(repeats == (world - n % world) % world && total - repeats == n,
                 "world %d: %lld repeats, %lld samples", world, (long long)repeats, (long long)total);
        free(seen);
    }
    /* the first 5 steps of 16 per rank on 2 ranks (the e2e run): 160 different samples */
    enum { STEPS = 5, B = 16, PIX = 784 };
    float *x = malloc(sizeof(float) * 2 * STEPS * B * PIX);
    int32_t y[2 * STEPS * B];
    for (int r = 0; r < 2; r++) {
        orb_train_shard_t s;
        TT_CHECK(orb_train_shard_make(n, r, 2, 1, 0, 1, 1, &s) == ORB_OK, "shard");
        batch(&ds, s.idx, STEPS * B, x + (size_t)r * STEPS * B * PIX, y + r * STEPS * B);
        orb_train_shard_free(&s);
    }
    for (int i = 0; i < 2 * STEPS * B; i++)
        for (int j = i + 1; j < 2 * STEPS * B; j++)
            TT_CHECK(memcmp(x + (size_t)i * PIX, x + (size_t)j * PIX, PIX * sizeof(float)) != 0,
                     "samples %d and %d of the two ranks' first steps are equal", i, j);
    free(x);
}

int main(void)
{
    test_parse();
    test_determinism();
    test_distribution();
    test_shards();
    printf("synthetic: ok\n");
    return 0;
}
