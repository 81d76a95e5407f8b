#include "synthetic.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "rng.h"

#define PREFIX "synthetic"
#define FORM "write synthetic:C,H,W,CLASSES, e.g. synthetic:1,28,28,10 or synthetic:3,224,224,1000"

int orb_train_synth_named(const char *data)
{
    size_t n = strlen(PREFIX);
    return strncmp(data, PREFIX, n) == 0 && (data[n] == ':' || data[n] == '\0');
}

orb_status_t orb_train_synth_parse(const char *data, orb_train_synth_spec_t *out)
{
    static const char *const names[4] = {"C", "H", "W", "CLASSES"};
    static const long lo[4] = {1, 1, 1, 2};
    static const long hi[4] = {ORB_TRAIN_SYNTH_MAX_CHANNELS, ORB_TRAIN_SYNTH_MAX_DIM, ORB_TRAIN_SYNTH_MAX_DIM,
                               ORB_TRAIN_SYNTH_MAX_CLASSES};
    long v[4];
    const char *p = data + strlen(PREFIX);
    if (*p != ':')
        return orb_train_fail(ORB_ERR_INVALID_ARG, "--data %s: no sample shape given; " FORM, data);
    p++;
    for (int i = 0; i < 4; i++) {
        char *end;
        errno = 0;
        v[i] = strtol(p, &end, 10);
        if (end == p || errno)
            return orb_train_fail(ORB_ERR_INVALID_ARG, "--data %s: %s is not an integer; " FORM, data, names[i]);
        if (v[i] < lo[i] || v[i] > hi[i])
            return orb_train_fail(ORB_ERR_INVALID_ARG, "--data %s: %s = %ld is outside [%ld, %ld]; " FORM, data,
                                  names[i], v[i], lo[i], hi[i]);
        p = end;
        if (i < 3 && *p != ',')
            return orb_train_fail(ORB_ERR_INVALID_ARG, "--data %s: %s four fields C,H,W,CLASSES; " FORM, data,
                                  *p ? "expected" : "too few fields, expected");
        p += i < 3;
    }
    if (*p)
        return orb_train_fail(ORB_ERR_INVALID_ARG, "--data %s: unexpected '%s' after CLASSES; " FORM, data, p);
    int64_t size = (int64_t)v[0] * v[1] * v[2];
    if (size > ORB_TRAIN_SYNTH_MAX_SAMPLE)
        return orb_train_fail(ORB_ERR_INVALID_ARG,
                              "--data %s: %lldx%lldx%lld = %lld values per sample, more than the %lld allowed "
                              "(64 MiB of floats); " FORM,
                              data, (long long)v[0], (long long)v[1], (long long)v[2], (long long)size,
                              (long long)ORB_TRAIN_SYNTH_MAX_SAMPLE);
    *out = (orb_train_synth_spec_t){(int)v[0], (int)v[1], (int)v[2], (int)v[3]};
    return ORB_OK;
}

uint64_t orb_train_synth_key(uint64_t seed, uint64_t split, int64_t index)
{
    return orb_train_hash(orb_train_hash(seed, split), (uint64_t)index);
}

/* splitmix64 at counter i of the stream keyed by key: a counter-based generator, so any
 * pixel is computed without the ones before it. */
static inline uint64_t mix(uint64_t key, uint64_t i)
{
    uint64_t z = key + (i + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void orb_train_synth_pixels(uint64_t key, size_t len, float *x)
{
    /* sum of four U{0..65535} has mean 131070 and standard deviation 65536 / sqrt(3) (to 1e-10) */
    const float scale = 1.7320508f / 65536.0f;
    for (size_t i = 0; i < len; i++) {
        uint64_t z = mix(key, i);
        int32_t s = (int32_t)(z & 0xffff) + (int32_t)((z >> 16) & 0xffff) + (int32_t)((z >> 32) & 0xffff) +
                    (int32_t)(z >> 48);
        x[i] = (float)(s - 131070) * scale;
    }
}

int32_t orb_train_synth_label(uint64_t key, int nclasses)
{
    /* a counter no pixel uses; the modulo bias is below 2^-47 for any allowed class count */
    return (int32_t)(mix(key, UINT64_MAX - 1) % (uint64_t)nclasses);
}
