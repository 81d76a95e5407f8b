/* IDX loading (gzipped and raw), every kind of missing or corrupt file (the error must
 * name the file), normalisation statistics and batches, and DistributedSampler semantics. */
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "dataset.h"
#include "error.h"
#include "idx.h"
#include "rng.h"
#include "sampler.h"
#include "tt_util.h"

static char dir[4096];

static void expect_error(const char *what, const char *must_name)
{
    orb_train_dataset_t ds;
    orb_train_clear_error();
    orb_status_t st = orb_train_dataset_load(dir, "train", &ds);
    TT_CHECK(st != ORB_OK, "%s: loading succeeded", what);
    const char *msg = orb_train_last_error();
    TT_CHECK(strstr(msg, must_name) != NULL, "%s: message '%s' does not name %s", what, msg, must_name);
    printf("ok: %s -> %s\n", what, msg);
}

static void write_bytes(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    TT_CHECK(f && fwrite(data, 1, len, f) == len && fclose(f) == 0, "writing %s", path);
}

static void test_roundtrip(int gz)
{
    tt_write_synthetic(dir, "train", 50, 9, gz);
    orb_train_dataset_t ds;
    TT_CHECK(orb_train_dataset_load(dir, "train", &ds) == ORB_OK, "load: %s", orb_train_last_error());
    TT_CHECK(ds.n == 50 && ds.rows == 28 && ds.cols == 28, "shape %lld x %d x %d", (long long)ds.n, ds.rows, ds.cols);
    /* regenerate the same stream independently and compare */
    orb_train_rng_t rng;
    orb_train_rng_seed(&rng, 9);
    for (int i = 0; i < 50; i++) {
        int c = (int)orb_train_rng_below(&rng, 10);
        TT_CHECK(ds.labels[i] == c, "label %d", i);
        for (int p = 0; p < 784; p++) {
            int v = (int)orb_train_rng_below(&rng, 70);
            int y = p / 28, x = p % 28;
            if (y >= 2 * c && y < 2 * c + 6 && x >= 4 && x < 24)
                v += 150;
            TT_CHECK(ds.pixels[i * 784 + p] == v, "pixel %d,%d", i, p);
        }
    }
    /* statistics against a direct double computation, unbiased like torch.std */
    double mean, std, s = 0, s2 = 0;
    orb_train_dataset_stats(&ds, &mean, &std);
    size_t tot = 50 * 784;
    for (size_t i = 0; i < tot; i++)
        s += ds.pixels[i] / 255.0;
    for (size_t i = 0; i < tot; i++)
        s2 += (ds.pixels[i] / 255.0 - s / tot) * (ds.pixels[i] / 255.0 - s / tot);
    TT_CHECK(fabs(mean - s / tot) < 1e-12 && fabs(std - sqrt(s2 / (tot - 1))) < 1e-9, "mean %g std %g", mean, std);
    int64_t idx[3] = {4, 0, 49};
    float x[3 * 784];
    int32_t y[3];
    orb_train_dataset_batch(&ds, idx, 3, (float)mean, (float)std, x, y);
    for (int b = 0; b < 3; b++) {
        TT_CHECK(y[b] == ds.labels[idx[b]], "batch label");
        for (int p = 0; p < 784; p++) {
            double want = (ds.pixels[idx[b] * 784 + p] / 255.0 - mean) / std;
            TT_CHECK(fabs(x[b * 784 + p] - want) < 1e-5, "normalised pixel %g vs %g", x[b * 784 + p], want);
        }
    }
    orb_train_dataset_free(&ds);
    char path[4200];
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte%s", dir, gz ? ".gz" : "");
    unlink(path);
    snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte%s", dir, gz ? ".gz" : "");
    unlink(path);
}

/* Some mirrors ship train-images.idx3-ubyte (a dot before idx). */
static void test_dotted_names(void)
{
    uint8_t img[2 * 3 * 4] = {0}, lbl[2] = {1, 0};
    int idims[3] = {2, 3, 4}, ldims[1] = {2};
    char a[4200], b[4200];
    snprintf(a, sizeof a, "%s/train-images.idx3-ubyte", dir);
    snprintf(b, sizeof b, "%s/train-labels.idx1-ubyte.gz", dir);
    TT_CHECK(tt_write_idx(a, 0, 3, idims, img) == 0 && tt_write_idx(b, 1, 1, ldims, lbl) == 0, "write");
    orb_train_dataset_t ds;
    TT_CHECK(orb_train_dataset_load(dir, "train", &ds) == ORB_OK, "dotted names: %s", orb_train_last_error());
    TT_CHECK(ds.n == 2 && ds.rows == 3 && ds.cols == 4 && ds.nclasses == 2, "dotted names: shape");
    orb_train_dataset_free(&ds);
    unlink(a);
    unlink(b);
}

static void test_errors(void)
{
    char img[4200], lbl[4200], raw_lbl[4200];
    snprintf(img, sizeof img, "%s/train-images-idx3-ubyte.gz", dir);
    snprintf(lbl, sizeof lbl, "%s/train-labels-idx1-ubyte.gz", dir);
    snprintf(raw_lbl, sizeof raw_lbl, "%s/train-labels-idx1-ubyte", dir);

    expect_error("missing images", "train-images-idx3-ubyte.gz");
    tt_write_synthetic(dir, "train", 20, 1, 1);
    unlink(lbl);
    expect_error("missing labels", "train-labels-idx1-ubyte.gz");

    tt_write_synthetic(dir, "train", 20, 1, 1);
    size_t len;
    char *gzdata = tt_read_file(img, &len);
    TT_CHECK(gzdata != NULL, "read %s", img);
    write_bytes(img, gzdata, len / 2);
    expect_error("truncated gzip", img);
    char *bad = malloc(len);
    memcpy(bad, gzdata, len);
    for (size_t i = len / 3; i < len / 3 + 64; i++)
        bad[i] ^= 0x5a;
    write_bytes(img, bad, len);
    expect_error("corrupt gzip stream", img);
    free(bad);
    write_bytes(img, gzdata, len);
    free(gzdata);

    uint8_t lab[20] = {0};
    int d20[1] = {20}, d19[1] = {19};
    unlink(lbl);
    TT_CHECK(tt_write_idx(raw_lbl, 0, 1, d19, lab) == 0, "write");
    expect_error("label and image counts differ", raw_lbl);
    TT_CHECK(tt_write_idx(raw_lbl, 0, 1, d20, lab) == 0, "write");
    FILE *f = fopen(raw_lbl, "ab");
    fputc(7, f);
    fclose(f);
    expect_error("trailing bytes", raw_lbl);
    int d2[2] = {20, 1};
    TT_CHECK(tt_write_idx(raw_lbl, 0, 2, d2, lab) == 0, "write");
    expect_error("wrong number of dimensions", raw_lbl);
    uint8_t hdr[] = {0x08, 0x03, 0, 1, 0, 0, 0, 20};
    write_bytes(raw_lbl, hdr, sizeof hdr);
    expect_error("bad magic", raw_lbl);
    uint8_t hdr2[] = {0, 0, 0x0d, 1, 0, 0, 0, 20};
    write_bytes(raw_lbl, hdr2, sizeof hdr2);
    expect_error("float element type", raw_lbl);
    uint8_t hdr3[] = {0, 0, 0x08, 1, 0, 0, 0, 20, 1, 2, 3};
    write_bytes(raw_lbl, hdr3, sizeof hdr3);
    expect_error("truncated data", raw_lbl);
    write_bytes(raw_lbl, hdr3, 6);
    expect_error("truncated header", raw_lbl);
    write_bytes(raw_lbl, "", 0);
    expect_error("empty file", raw_lbl);
    unlink(raw_lbl);
    unlink(img);
}

static void test_sampler(void)
{
    const int64_t n = 10;
    for (int world = 1; world <= 4; world++) {
        orb_train_shard_t all;
        /* the 1-rank shard of the same seed and epoch is the permutation itself */
        TT_CHECK(orb_train_shard_make(n, 0, 1, 77, 3, 1, 1, &all) == ORB_OK, "shard");
        int seen[10] = {0};
        for (int64_t i = 0; i < n; i++)
            seen[all.idx[i]]++;
        for (int i = 0; i < 10; i++)
            TT_CHECK(seen[i] == 1, "permutation");
        int64_t per = (n + world - 1) / world;
        int64_t covered[10] = {0};
        for (int r = 0; r < world; r++) {
            orb_train_shard_t s;
            TT_CHECK(orb_train_shard_make(n, r, world, 77, 3, 1, 1, &s) == ORB_OK, "shard");
            TT_CHECK(s.count == per, "world %d rank %d: %lld samples, want %lld", world, r, (long long)s.count,
                     (long long)per);
            for (int64_t j = 0; j < s.count; j++) {
                /* DistributedSampler: indices[rank:total_size:world] of the padded permutation */
                TT_CHECK(s.idx[j] == all.idx[(j * world + r) % n], "world %d rank %d position %lld", world, r,
                         (long long)j);
                covered[s.idx[j]]++;
            }
            orb_train_shard_free(&s);
        }
        for (int i = 0; i < 10; i++)
            TT_CHECK(covered[i] >= 1 && covered[i] <= 2, "every sample visited, padding repeats at most once");
        orb_train_shard_free(&all);
    }
    orb_train_shard_t a, b, c;
    orb_train_shard_make(1000, 0, 1, 5, 0, 1, 1, &a);
    orb_train_shard_make(1000, 0, 1, 5, 1, 1, 1, &b);
    orb_train_shard_make(1000, 0, 1, 5, 0, 1, 1, &c);
    TT_CHECK(memcmp(a.idx, b.idx, 1000 * sizeof(int64_t)) != 0, "a new epoch reshuffles");
    TT_CHECK(memcmp(a.idx, c.idx, 1000 * sizeof(int64_t)) == 0, "same seed and epoch, same order");
    orb_train_shard_free(&a), orb_train_shard_free(&b), orb_train_shard_free(&c);
    /* evaluation shards: no padding, no shuffle, each sample exactly once */
    int64_t hits[10] = {0};
    for (int r = 0; r < 3; r++) {
        orb_train_shard_t s;
        orb_train_shard_make(10, r, 3, 0, 0, 0, 0, &s);
        TT_CHECK(s.count == (r == 0 ? 4 : 3), "eval shard size");
        for (int64_t j = 0; j < s.count; j++) {
            TT_CHECK(s.idx[j] == r + 3 * j, "eval shard order");
            hits[s.idx[j]]++;
        }
        orb_train_shard_free(&s);
    }
    for (int i = 0; i < 10; i++)
        TT_CHECK(hits[i] == 1, "eval shards partition the set");
    /* more ranks than samples: DistributedSampler pads by repeating */
    orb_train_shard_t s;
    TT_CHECK(orb_train_shard_make(2, 4, 5, 1, 0, 1, 1, &s) == ORB_OK && s.count == 1, "tiny set padded");
    orb_train_shard_free(&s);
}

int main(void)
{
    char *d = tt_mkdtemp("data");
    snprintf(dir, sizeof dir, "%s", d);
    test_roundtrip(1);
    test_roundtrip(0);
    test_dotted_names();
    test_errors();
    test_sampler();
    tt_rmtree(d);
    free(d);
    printf("data: ok\n");
    return 0;
}
