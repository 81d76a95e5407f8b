/* Unique ids: made by rank 0 (a listening socket and a random secret), carried to the other
 * ranks as bytes or as hex text. */
#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "comm/comm_impl.h"
#include "core/log.h"
#include "core/param.h"

orb_status_t orb_get_unique_id(orb_unique_id_t *id)
{
    if (!id) {
        orb_set_thread_error("orb_get_unique_id: id (the output pointer) is NULL");
        return ORB_ERR_INVALID_ARG;
    }
    orb_sockaddr_t addr;
    char ifname[64] = "";
    orb_status_t st = orb_sockaddr_local(&addr, ifname, sizeof ifname);
    if (st != ORB_OK) {
        orb_set_thread_error("orb_get_unique_id: no usable network interface (ORBIT_SOCKET_IFNAME=\"%s\"); set "
                             "ORBIT_SOCKET_IFNAME to an interface with an address",
                             orb_param_str(ORB_PARAM_S_SOCKET_IFNAME));
        return st;
    }
    orb_sockaddr_set_port(&addr, 0);
    int fd;
    st = orb_sock_listen(&addr, 128, &fd);
    if (st != ORB_OK) {
        orb_set_thread_error("orb_get_unique_id: cannot listen on interface %s; choose another with "
                             "ORBIT_SOCKET_IFNAME", ifname);
        return st;
    }
    uint8_t secret[ORB_SECRET_BYTES];
    if (orb_random_bytes(secret, sizeof secret) != ORB_OK) {
        close(fd);
        orb_set_thread_error("orb_get_unique_id: getrandom failed: %s", strerror(errno));
        return ORB_ERR_SYSTEM;
    }
    orb_id_encode(id, &addr, secret);
    orb_bootstrap_register_listener(id, fd);
    char b[96];
    ORB_INFO("unique id: rank 0 will listen on %s (interface %s)", orb_sockaddr_str(&addr, b, sizeof b), ifname);
    return ORB_OK;
}

orb_status_t orb_unique_id_to_string(const orb_unique_id_t *id, char *out, size_t outlen)
{
    if (!id || !out) {
        orb_set_thread_error("orb_unique_id_to_string: %s is NULL", !id ? "id" : "out");
        return ORB_ERR_INVALID_ARG;
    }
    if (outlen < ORB_UNIQUE_ID_STR_BYTES) {
        orb_set_thread_error("orb_unique_id_to_string: outlen=%zu is too small: pass ORB_UNIQUE_ID_STR_BYTES (%d)",
                             outlen, ORB_UNIQUE_ID_STR_BYTES);
        return ORB_ERR_INVALID_ARG;
    }
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < ORB_UNIQUE_ID_BYTES; i++) {
        unsigned char b = (unsigned char)id->internal[i];
        out[2 * i] = hex[b >> 4];
        out[2 * i + 1] = hex[b & 15];
    }
    out[2 * ORB_UNIQUE_ID_BYTES] = 0;
    return ORB_OK;
}

static int hexval(int ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    ch = tolower(ch);
    return (ch >= 'a' && ch <= 'f') ? ch - 'a' + 10 : -1;
}

int orb_comm_parse_hex(const char *s, uint8_t *out, size_t n)
{
    if (strlen(s) != 2 * n)
        return -1;
    for (size_t i = 0; i < n; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

orb_status_t orb_unique_id_from_string(const char *str, orb_unique_id_t *id)
{
    if (!str || !id) {
        orb_set_thread_error("orb_unique_id_from_string: %s is NULL", !str ? "str" : "id (the output pointer)");
        return ORB_ERR_INVALID_ARG;
    }
    if (orb_comm_parse_hex(str, (uint8_t *)id->internal, ORB_UNIQUE_ID_BYTES) != 0) {
        orb_set_thread_error("orb_unique_id_from_string: str is not %d hex digits (as orb_unique_id_to_string "
                             "writes them)", 2 * ORB_UNIQUE_ID_BYTES);
        return ORB_ERR_INVALID_ARG;
    }
    orb_sockaddr_t a;
    uint8_t secret[ORB_SECRET_BYTES];
    if (orb_id_decode(id, &a, secret) != ORB_OK) {
        orb_set_thread_error("orb_unique_id_from_string: str is hex but not an orbit unique id (not written by "
                             "orb_unique_id_to_string, or damaged in transit)");
        return ORB_ERR_INVALID_ARG;
    }
    return ORB_OK;
}

