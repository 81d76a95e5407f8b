/* A PNG writer without libpng: RGB 8-bit, one IDAT holding a zlib stream of stored (uncompressed)
 * deflate blocks. Bigger files than deflate would give, but nothing to link and nothing to get
 * wrong beyond two checksums (CRC-32 per chunk, Adler-32 over the raw scanlines). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

static uint32_t crc_table[256];

static void crc_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}

static uint32_t crc_update(uint32_t crc, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return crc;
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void put_chunk(FILE *f, const char *type, const uint8_t *data, size_t n)
{
    uint8_t b[4];
    put32(b, (uint32_t)n);
    fwrite(b, 1, 4, f);
    fwrite(type, 1, 4, f);
    if (n)
        fwrite(data, 1, n, f);
    uint32_t crc = crc_update(0xffffffffu, (const uint8_t *)type, 4);
    put32(b, crc_update(crc, data, n) ^ 0xffffffffu);
    fwrite(b, 1, 4, f);
}

int trace_png_write(const char *path, const uint8_t *rgb, int w, int h)
{
    crc_init();
    size_t row = (size_t)w * 3 + 1, raw = row * (size_t)h; /* a filter byte (0: none) a scanline */
    size_t nblocks = raw / 65535 + 1;
    size_t zlen = 2 + raw + nblocks * 5 + 4;
    uint8_t *z = malloc(zlen);
    if (!z) {
        fprintf(stderr, "orbit-trace: out of memory for a %dx%d picture\n", w, h);
        return -1;
    }
    size_t o = 0;
    z[o++] = 0x78; /* deflate, 32 KiB window */
    z[o++] = 0x01; /* no dictionary, fastest; (0x78 << 8 | 0x01) % 31 == 0 */
    uint32_t a = 1, b = 0;
    size_t done = 0;
    for (size_t k = 0; k < nblocks; k++) {
        size_t n = raw - done < 65535 ? raw - done : 65535;
        z[o++] = k + 1 == nblocks; /* BFINAL, BTYPE 00 */
        z[o++] = (uint8_t)n;
        z[o++] = (uint8_t)(n >> 8);
        z[o++] = (uint8_t)~n;
        z[o++] = (uint8_t)(~n >> 8);
        for (size_t i = 0; i < n; i++, done++) {
            size_t y = done / row, x = done % row;
            uint8_t v = x == 0 ? 0 : rgb[y * (size_t)w * 3 + x - 1];
            z[o++] = v;
            a = (a + v) % 65521;
            b = (b + a) % 65521;
        }
    }
    put32(z + o, b << 16 | a);
    o += 4;

    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "orbit-trace: cannot write %s: %s; name a writable file with --plot FILE.png\n", path,
                strerror(errno));
        free(z);
        return -1;
    }
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    uint8_t ihdr[13] = {0};
    put32(ihdr, (uint32_t)w);
    put32(ihdr + 4, (uint32_t)h);
    ihdr[8] = 8; /* bits per sample */
    ihdr[9] = 2; /* RGB; compression, filter and interlace stay 0 */
    fwrite(sig, 1, sizeof(sig), f);
    put_chunk(f, "IHDR", ihdr, sizeof(ihdr));
    put_chunk(f, "IDAT", z, o);
    put_chunk(f, "IEND", NULL, 0);
    free(z);
    if (ferror(f) | fclose(f)) {
        fprintf(stderr, "orbit-trace: writing %s failed: %s; check the disk has room\n", path, strerror(errno));
        return -1;
    }
    return 0;
}
