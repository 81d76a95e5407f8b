#include "dataset.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "idx.h"

/* The name as LeCun's site, Fashion-MNIST and KMNIST ship it, gzipped or not, then the
 * dotted variant some mirrors use (train-images.idx3-ubyte). Errors name the .gz form. */
static orb_status_t find_file(const char *dir, const char *split, const char *kind, char *path, size_t len)
{
    static const char *const forms[] = {"%s/%s-%s-idx%s-ubyte.gz", "%s/%s-%s-idx%s-ubyte",
                                        "%s/%s-%s.idx%s-ubyte.gz", "%s/%s-%s.idx%s-ubyte"};
    const char *dims = strcmp(kind, "images") == 0 ? "3" : "1";
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        snprintf(path, len, forms[i], dir, split, kind, dims);
        if (access(path, F_OK) == 0)
            return ORB_OK;
    }
    snprintf(path, len, forms[0], dir, split, kind, dims);
    return orb_train_fail(ORB_ERR_INVALID_ARG, "missing data file %s (nor the uncompressed %s-%s-idx%s-ubyte)", path,
                          split, kind, dims);
}

orb_status_t orb_train_dataset_load(const char *dir, const char *split, orb_train_dataset_t *ds)
{
    char img_path[4096], lbl_path[4096];
    orb_train_idx_t img, lbl;
    orb_status_t st;

    ORB_TRAIN_CHECK(find_file(dir, split, "images", img_path, sizeof img_path));
    ORB_TRAIN_CHECK(find_file(dir, split, "labels", lbl_path, sizeof lbl_path));
    ORB_TRAIN_CHECK(orb_train_idx_read(img_path, 3, &img));
    st = orb_train_idx_read(lbl_path, 1, &lbl);
    if (st != ORB_OK)
        goto err_img;
    if (lbl.dims[0] != img.dims[0]) {
        st = orb_train_fail(ORB_ERR_INVALID_ARG, "%s: %lld labels but %s holds %lld images", lbl_path,
                            (long long)lbl.dims[0], img_path, (long long)img.dims[0]);
        goto err_lbl;
    }
    if (img.dims[1] > 4096 || img.dims[2] > 4096) {
        st = orb_train_fail(ORB_ERR_INVALID_ARG, "%s: images of %lldx%lld pixels are too large", img_path,
                            (long long)img.dims[1], (long long)img.dims[2]);
        goto err_lbl;
    }
    int maxl = 0;
    for (int64_t i = 0; i < lbl.count; i++)
        maxl = lbl.data[i] > maxl ? lbl.data[i] : maxl;

    *ds = (orb_train_dataset_t){0};
    ds->n = img.dims[0];
    ds->channels = 1;
    ds->rows = (int)img.dims[1];
    ds->cols = (int)img.dims[2];
    ds->nclasses = maxl + 1;
    ds->pixels = img.data;
    ds->labels = lbl.data;
    return ORB_OK;

err_lbl:
    orb_train_idx_free(&lbl);
err_img:
    orb_train_idx_free(&img);
    return st;
}

void orb_train_dataset_synthetic(const orb_train_synth_spec_t *spec, uint64_t seed, const char *split,
                                 orb_train_dataset_t *ds)
{
    int train = strcmp(split, "train") == 0;
    *ds = (orb_train_dataset_t){
        .n = train ? ORB_TRAIN_SYNTH_TRAIN_N : ORB_TRAIN_SYNTH_TEST_N,
        .channels = spec->c, .rows = spec->h, .cols = spec->w, .nclasses = spec->nclasses,
        .synthetic = 1, .seed = seed, .split = train ? 0 : 1, /* the splits never share a sample */
    };
}

void orb_train_dataset_free(orb_train_dataset_t *ds)
{
    free(ds->pixels);
    free(ds->labels);
    memset(ds, 0, sizeof *ds);
}

void orb_train_dataset_stats(const orb_train_dataset_t *ds, double *mean, double *std)
{
    /* Exact integer sums: no drift over 47 million pixels. */
    if (ds->synthetic) {
        *mean = 0.0;
        *std = 1.0;
        return;
    }
    uint64_t hist[256] = {0};
    int64_t total = ds->n * ds->rows * ds->cols;
    for (int64_t i = 0; i < total; i++)
        hist[ds->pixels[i]]++;
    double s = 0, s2 = 0;
    for (int v = 0; v < 256; v++) {
        double x = v / 255.0;
        s += (double)hist[v] * x;
        s2 += (double)hist[v] * x * x;
    }
    double m = total ? s / (double)total : 0;
    double var = total > 1 ? (s2 - (double)total * m * m) / (double)(total - 1) : 0;
    *mean = m;
    *std = var > 0 ? sqrt(var) : 1.0;
}

void orb_train_dataset_batch(const orb_train_dataset_t *ds, const int64_t *idx, int n, float mean,
                             float std, float *x, int32_t *y)
{
    int64_t pix = (int64_t)ds->channels * ds->rows * ds->cols;
    if (ds->synthetic) {
        /* generated at assembly: the set is never materialised (3x224x224 x 1.28M would be 770 GB) */
        for (int b = 0; b < n; b++) {
            uint64_t key = orb_train_synth_key(ds->seed, ds->split, idx[b]);
            float *dst = x + (int64_t)b * pix;
            orb_train_synth_pixels(key, (size_t)pix, dst);
            if (mean != 0.0f || std != 1.0f) /* the stats say 0 and 1: no second pass then */
                for (int64_t i = 0; i < pix; i++)
                    dst[i] = (dst[i] - mean) / std;
            y[b] = orb_train_synth_label(key, ds->nclasses);
        }
        return;
    }
    float lut[256];
    for (int v = 0; v < 256; v++)
        lut[v] = ((float)v / 255.0f - mean) / std;
    for (int b = 0; b < n; b++) {
        const uint8_t *src = ds->pixels + idx[b] * pix;
        float *dst = x + (int64_t)b * pix;
        for (int64_t i = 0; i < pix; i++)
            dst[i] = lut[src[i]];
        y[b] = ds->labels[idx[b]];
    }
}
