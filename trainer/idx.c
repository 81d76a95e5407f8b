#include "idx.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "error.h"

/* Real IDX files hold at most a few million items; anything larger is a corrupt header. */
#define IDX_MAX_BYTES (INT64_C(1) << 32)

static orb_status_t read_exact(gzFile f, const char *path, void *buf, int64_t len, const char *what)
{
    uint8_t *p = buf;
    while (len > 0) {
        unsigned chunk = len > (1 << 30) ? (1u << 30) : (unsigned)len;
        int got = gzread(f, p, chunk);
        if (got < 0) {
            int zerr;
            const char *msg = gzerror(f, &zerr);
            return orb_train_fail(ORB_ERR_INVALID_ARG, "%s: corrupt compressed data while reading %s (%s)",
                                  path, what, msg);
        }
        if (got == 0)
            return orb_train_fail(ORB_ERR_INVALID_ARG, "%s: truncated: file ends inside the %s", path,
                                  what);
        p += got;
        len -= got;
    }
    return ORB_OK;
}

orb_status_t orb_train_idx_read(const char *path, int ndims, orb_train_idx_t *out)
{
    orb_status_t st;
    uint8_t hdr[4], dimbuf[4 * ORB_TRAIN_IDX_MAX_DIMS];
    orb_train_idx_t idx = {0};

    gzFile f = gzopen(path, "rb");
    if (!f)
        return orb_train_fail(ORB_ERR_SYSTEM, "%s: cannot open: %s", path,
                              errno ? strerror(errno) : "out of memory");
    gzbuffer(f, 1 << 17);

    st = read_exact(f, path, hdr, 4, "IDX header");
    if (st != ORB_OK)
        goto err_close;
    if (hdr[0] != 0 || hdr[1] != 0) {
        st = orb_train_fail(ORB_ERR_INVALID_ARG, "%s: not an IDX file (magic %02x%02x%02x%02x)", path,
                            hdr[0], hdr[1], hdr[2], hdr[3]);
        goto err_close;
    }
    if (hdr[2] != 0x08) {
        st = orb_train_fail(ORB_ERR_INVALID_ARG, "%s: IDX element type 0x%02x, expected 0x08 (unsigned byte)",
                            path, hdr[2]);
        goto err_close;
    }
    if (hdr[3] != ndims) {
        st = orb_train_fail(ORB_ERR_INVALID_ARG, "%s: %d dimensions, expected %d", path, hdr[3], ndims);
        goto err_close;
    }
    st = read_exact(f, path, dimbuf, 4 * (int64_t)ndims, "IDX header");
    if (st != ORB_OK)
        goto err_close;
    idx.ndims = ndims;
    idx.count = 1;
    for (int i = 0; i < ndims; i++) {
        const uint8_t *d = dimbuf + 4 * i;
        idx.dims[i] = ((int64_t)d[0] << 24) | ((int64_t)d[1] << 16) | ((int64_t)d[2] << 8) | d[3];
        if (idx.dims[i] <= 0 || idx.count * idx.dims[i] > IDX_MAX_BYTES) {
            st = orb_train_fail(ORB_ERR_INVALID_ARG, "%s: implausible dimension %d = %lld", path, i,
                                (long long)idx.dims[i]);
            goto err_close;
        }
        idx.count *= idx.dims[i];
    }
    idx.data = malloc((size_t)idx.count);
    if (!idx.data) {
        st = orb_train_fail(ORB_ERR_NO_MEMORY, "%s: cannot allocate %lld bytes", path, (long long)idx.count);
        goto err_close;
    }
    st = read_exact(f, path, idx.data, idx.count, "data");
    if (st != ORB_OK)
        goto err_free;
    /* Trailing bytes mean the header does not describe the file: refuse rather than guess. */
    uint8_t extra;
    int got = gzread(f, &extra, 1);
    if (got != 0) {
        int zerr;
        st = got < 0 ? orb_train_fail(ORB_ERR_INVALID_ARG, "%s: corrupt compressed data after the items (%s)",
                                      path, gzerror(f, &zerr))
                     : orb_train_fail(ORB_ERR_INVALID_ARG, "%s: trailing bytes after %lld items: header and size disagree",
                                      path, (long long)idx.count);
        goto err_free;
    }
    gzclose(f);
    *out = idx;
    return ORB_OK;

err_free:
    free(idx.data);
err_close:
    gzclose(f);
    return st;
}

void orb_train_idx_free(orb_train_idx_t *idx)
{
    free(idx->data);
    idx->data = NULL;
}
