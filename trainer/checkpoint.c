#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "error.h"

#define CKPT_MAGIC "ORBTCKP1"
#define CKPT_HEADER 128

/* Fixed-offset header, so the format does not depend on struct padding. */
static void put_header(uint8_t *h, const orb_train_ckpt_info_t *in)
{
    memset(h, 0, CKPT_HEADER);
    memcpy(h, CKPT_MAGIC, 8);
    memcpy(h + 8, in->model, 16);
    memcpy(h + 24, &in->optimizer, 4);
    memcpy(h + 28, &in->nstate, 4);
    memcpy(h + 32, &in->nparams, 8);
    memcpy(h + 40, &in->epochs_done, 8);
    memcpy(h + 48, &in->step, 8);
    memcpy(h + 56, &in->optim_t, 8);
    memcpy(h + 64, &in->seed, 8);
    memcpy(h + 72, &in->batch_size, 8);
    memcpy(h + 80, &in->world, 4);
    memcpy(h + 84, &in->momentum, 4);
    memcpy(h + 88, &in->nbuffers, 8);
}

static void get_header(const uint8_t *h, orb_train_ckpt_info_t *out)
{
    memset(out, 0, sizeof *out);
    memcpy(out->model, h + 8, 16);
    out->model[15] = '\0';
    memcpy(&out->optimizer, h + 24, 4);
    memcpy(&out->nstate, h + 28, 4);
    memcpy(&out->nparams, h + 32, 8);
    memcpy(&out->epochs_done, h + 40, 8);
    memcpy(&out->step, h + 48, 8);
    memcpy(&out->optim_t, h + 56, 8);
    memcpy(&out->seed, h + 64, 8);
    memcpy(&out->batch_size, h + 72, 8);
    memcpy(&out->world, h + 80, 4);
    memcpy(&out->momentum, h + 84, 4);
    memcpy(&out->nbuffers, h + 88, 8);
}

/* Writes everything (retrying short writes) and folds the bytes into crc. */
static int write_all(int fd, const void *buf, size_t len, uLong *crc)
{
    const uint8_t *p = buf;
    for (size_t off = 0; off < len; off += 1u << 30)
        *crc = crc32(*crc, p + off, (uInt)(len - off < (1u << 30) ? len - off : (1u << 30)));
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        if (w == 0) {
            errno = ENOSPC;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

orb_status_t orb_train_ckpt_save(const char *path, const orb_train_ckpt_info_t *info, const float *params,
                                 float *const state[2], const float *buffers)
{
    char tmp[4096];
    uint8_t hdr[CKPT_HEADER];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return orb_train_fail(ORB_ERR_SYSTEM, "checkpoint %s: cannot create: %s", tmp, strerror(errno));
    put_header(hdr, info);
    uLong crc = crc32(0L, Z_NULL, 0);
    size_t bytes = (size_t)info->nparams * sizeof(float);
    int rc = write_all(fd, hdr, sizeof hdr, &crc);
    if (rc == 0)
        rc = write_all(fd, params, bytes, &crc);
    for (int i = 0; i < info->nstate && rc == 0; i++)
        rc = write_all(fd, state[i], bytes, &crc);
    if (rc == 0 && info->nbuffers)
        rc = write_all(fd, buffers, (size_t)info->nbuffers * sizeof(float), &crc);
    uint32_t c32 = (uint32_t)crc;
    uLong dummy = 0;
    if (rc == 0)
        rc = write_all(fd, &c32, sizeof c32, &dummy);
    if (rc == 0 && fsync(fd) != 0)
        rc = -1;
    int err = errno;
    if (close(fd) != 0 && rc == 0) {
        rc = -1;
        err = errno;
    }
    if (rc != 0) {
        unlink(tmp);
        return orb_train_fail(ORB_ERR_SYSTEM, "checkpoint %s: write failed: %s", tmp, strerror(err));
    }
    if (rename(tmp, path) != 0) {
        err = errno;
        unlink(tmp);
        return orb_train_fail(ORB_ERR_SYSTEM, "checkpoint: cannot rename %s to %s: %s", tmp, path, strerror(err));
    }
    return ORB_OK;
}

orb_status_t orb_train_ckpt_read(const char *path, void **blob, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return orb_train_fail(ORB_ERR_SYSTEM, "checkpoint %s: cannot open: %s", path, strerror(errno));
    orb_status_t st = ORB_OK;
    uint8_t *buf = NULL;
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        size = ftell(f);
    if (size < CKPT_HEADER + 4 || fseek(f, 0, SEEK_SET) != 0) {
        st = orb_train_fail(ORB_ERR_INVALID_ARG, "checkpoint %s: too short to be a checkpoint", path);
        goto out;
    }
    buf = malloc((size_t)size);
    if (!buf) {
        st = orb_train_fail(ORB_ERR_NO_MEMORY, "checkpoint %s: cannot allocate %ld bytes", path, size);
        goto out;
    }
    if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
        st = orb_train_fail(ORB_ERR_SYSTEM, "checkpoint %s: read failed", path);
        goto out;
    }
    st = orb_train_ckpt_parse(path, buf, (size_t)size, &(orb_train_ckpt_info_t){0}, NULL, NULL, NULL);
out:
    fclose(f);
    if (st != ORB_OK) {
        free(buf);
        return st;
    }
    *blob = buf;
    *len = (size_t)size;
    return ORB_OK;
}

orb_status_t orb_train_ckpt_parse(const char *name, const void *blob, size_t len, orb_train_ckpt_info_t *info,
                                  const float **params, const float *state[2], const float **buffers)
{
    const uint8_t *b = blob;
    if (len < CKPT_HEADER + 4 || memcmp(b, CKPT_MAGIC, 8) != 0)
        return orb_train_fail(ORB_ERR_INVALID_ARG, "checkpoint %s: not an orbit-train checkpoint", name);
    get_header(b, info);
    if (info->nstate < 0 || info->nstate > 2 || info->nparams > ((uint64_t)1 << 40) || info->nbuffers > ((uint64_t)1 << 40))
        return orb_train_fail(ORB_ERR_INVALID_ARG, "checkpoint %s: corrupt header", name);
    size_t bytes = (size_t)info->nparams * sizeof(float);
    size_t want = CKPT_HEADER + bytes * (size_t)(1 + info->nstate) + (size_t)info->nbuffers * sizeof(float) + 4;
    if (len != want)
        return orb_train_fail(ORB_ERR_INVALID_ARG, "checkpoint %s: %zu bytes, the header implies %zu (truncated?)",
                              name, len, want);
    uint32_t stored;
    memcpy(&stored, b + len - 4, 4);
    uLong crc = crc32(0L, Z_NULL, 0);
    for (size_t off = 0; off < len - 4; off += 1u << 30) {
        size_t chunk = len - 4 - off < (1u << 30) ? len - 4 - off : (1u << 30);
        crc = crc32(crc, b + off, (uInt)chunk);
    }
    if ((uint32_t)crc != stored)
        return orb_train_fail(ORB_ERR_INVALID_ARG, "checkpoint %s: CRC mismatch (corrupt file)", name);
    /* the blob is malloc'd and the header is 128 bytes: the arrays are float-aligned */
    if (params)
        *params = (const float *)(const void *)(b + CKPT_HEADER);
    for (int i = 0; state && i < 2; i++)
        state[i] = i < info->nstate ? (const float *)(const void *)(b + CKPT_HEADER + bytes * (size_t)(1 + i)) : NULL;
    if (buffers)
        *buffers = info->nbuffers ? (const float *)(const void *)(b + CKPT_HEADER + bytes * (size_t)(1 + info->nstate))
                                  : NULL;
    return ORB_OK;
}
