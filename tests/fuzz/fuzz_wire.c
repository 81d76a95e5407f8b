/* Fuzz target for every parser of bytes that arrive from the network: bootstrap message
 * headers, hello bodies (rank cards), unique ids (binary and text), the signatures in slot
 * headers, the TCP transport's connection hello and frame headers, and the ib transport's
 * connection record (with the ORBIT_IB_HCA parser on the same bytes as text). The first byte picks
 * the parser; the rest is the message.
 * Built as a libFuzzer target with clang (-Dfuzz=enabled), and always as fuzz_replay, which
 * runs the kept corpus and every past crash as a regression test. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "collectives/exec.h"
#include "transport/bootstrap.h"
#include "transport/ib/ib_device.h"
#include "transport/ib/ib_wire.h"
#include "transport/tcp/tcp_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const uint8_t which = data[0] % 8;
    data++;
    size--;
    char why[256];
    static const uint8_t secret[ORB_SECRET_BYTES] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    switch (which) {
    case 0: { /* a message header, then (if it passes) its body as a hello */
        orb_boot_hdr_t h;
        if (size < sizeof h)
            return 0;
        memcpy(&h, data, sizeof h);
        if (orb_boot_hdr_check(&h, ORB_BOOT_HELLO, sizeof(orb_boot_hello_t), why, sizeof why) == ORB_OK &&
            h.len <= size - sizeof h)
            orb_boot_hello_check(data + sizeof h, h.len, secret, 4, why, sizeof why);
        break;
    }
    case 1: /* a hello body of any length, against several world sizes */
        for (int n = 1; n <= 4096; n *= 8)
            orb_boot_hello_check(data, size, secret, n, why, sizeof why);
        break;
    case 2: { /* a binary unique id */
        orb_unique_id_t id;
        memset(&id, 0, sizeof id);
        memcpy(id.internal, data, size < sizeof id.internal ? size : sizeof id.internal);
        orb_sockaddr_t a;
        uint8_t s[ORB_SECRET_BYTES];
        if (orb_id_decode(&id, &a, s) == ORB_OK) {
            char buf[96];
            orb_sockaddr_str(&a, buf, sizeof buf);
        }
        break;
    }
    case 3: { /* a unique id in text */
        char str[2 * ORB_UNIQUE_ID_BYTES + 8];
        size_t n = size < sizeof str - 1 ? size : sizeof str - 1;
        memcpy(str, data, n);
        str[n] = 0;
        orb_unique_id_t id;
        orb_unique_id_from_string(str, &id);
        break;
    }
    case 5: { /* a TCP connection hello */
        orb_tcp_hello_t h;
        memset(&h, 0, sizeof h);
        memcpy(&h, data, size < sizeof h ? size : sizeof h);
        orb_tcp_hello_check(&h, secret, 1, 4, 2, 8, 262144, why, sizeof why);
        break;
    }
    case 6: { /* a TCP frame header */
        orb_tcp_frame_t f;
        memset(&f, 0, sizeof f);
        memcpy(&f, data, size < sizeof f ? size : sizeof f);
        orb_tcp_frame_check(&f, 262144, why, sizeof why);
        break;
    }
    case 7: { /* an ib connection record from rank 1 to rank 0 of 2, 2 channels; then as HCA text */
        orb_ib_rec_check(data, size, 1, 0, 2, 2, 8, 64 + 262144, 1, why, sizeof why);
        char spec[160];
        size_t n = size < sizeof spec - 1 ? size : sizeof spec - 1;
        memcpy(spec, data, n);
        spec[n] = 0;
        orb_ib_hca_selects(spec, "mlx5_0", 1, why, sizeof why);
        break;
    }
    default: { /* a slot header's signature, as a mismatch message would print it */
        orb_slot_hdr_t h;
        memset(&h, 0, sizeof h);
        memcpy(&h, data, size < sizeof h ? size : sizeof h);
        char buf[256];
        orb_exec_describe_sig(&h, buf, sizeof buf);
        if (!memchr(buf, 0, sizeof buf))
            __builtin_trap();
        break;
    }
    }
    return 0;
}
