#include "sock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/param.h"

const char *orb_sockaddr_str(const orb_sockaddr_t *a, char *buf, size_t len)
{
    char host[INET6_ADDRSTRLEN] = "?";
    if (a->ss.ss_family == AF_INET) {
        const struct sockaddr_in *s = (const struct sockaddr_in *)&a->ss;
        inet_ntop(AF_INET, &s->sin_addr, host, sizeof host);
        snprintf(buf, len, "%s:%d", host, ntohs(s->sin_port));
    } else if (a->ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)&a->ss;
        inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof host);
        snprintf(buf, len, "[%s]:%d", host, ntohs(s->sin6_port));
    } else {
        snprintf(buf, len, "(no address)");
    }
    return buf;
}

int orb_sockaddr_port(const orb_sockaddr_t *a)
{
    if (a->ss.ss_family == AF_INET)
        return ntohs(((const struct sockaddr_in *)&a->ss)->sin_port);
    if (a->ss.ss_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)&a->ss)->sin6_port);
    return -1;
}

void orb_sockaddr_set_port(orb_sockaddr_t *a, int port)
{
    if (a->ss.ss_family == AF_INET)
        ((struct sockaddr_in *)&a->ss)->sin_port = htons((uint16_t)port);
    else if (a->ss.ss_family == AF_INET6)
        ((struct sockaddr_in6 *)&a->ss)->sin6_port = htons((uint16_t)port);
}

orb_status_t orb_sockaddr_resolve(const char *host, int port, orb_sockaddr_t *out)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0 || !res) {
        ORB_WARN("cannot resolve host \"%s\": %s", host, gai_strerror(rc));
        return ORB_ERR_INVALID_ARG;
    }
    memset(out, 0, sizeof *out);
    memcpy(&out->ss, res->ai_addr, res->ai_addrlen);
    out->len = res->ai_addrlen;
    freeaddrinfo(res);
    orb_sockaddr_set_port(out, port);
    return ORB_OK;
}

/* Does ifname match the ORBIT_SOCKET_IFNAME list ("eth,ib" prefixes, "^docker" excludes,
 * "=eth0" exact)? */
static int ifname_matches(const char *spec, const char *ifname)
{
    int exclude = 0, exact = 0;
    if (*spec == '^') {
        exclude = 1;
        spec++;
    }
    if (*spec == '=') {
        exact = 1;
        spec++;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec);
    int hit = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (exact ? strcmp(ifname, tok) == 0 : strncmp(ifname, tok, strlen(tok)) == 0)
            hit = 1;
    }
    return exclude ? !hit : hit;
}

static int ifname_default_ok(const char *name)
{
    static const char *const skip[] = {"lo", "docker", "veth", "virbr", "br-"};
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
        if (strncmp(name, skip[i], strlen(skip[i])) == 0)
            return 0;
    return 1;
}

orb_status_t orb_sockaddr_local(orb_sockaddr_t *out, char *ifname_out, size_t ifname_len)
{
    const char *spec = orb_param_str(ORB_PARAM_S_SOCKET_IFNAME);
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) != 0)
        return ORB_ERR_SYSTEM;
    const struct ifaddrs *best = NULL, *loop = NULL;
    for (int pass = 0; pass < 2 && !best; pass++) {
        for (const struct ifaddrs *i = ifs; i; i = i->ifa_next) {
            if (!i->ifa_addr || !(i->ifa_flags & IFF_UP))
                continue;
            int fam = i->ifa_addr->sa_family;
            if (fam != AF_INET && !(pass == 1 && fam == AF_INET6))
                continue; /* IPv4 first, IPv6 only on the second pass */
            if (fam == AF_INET6 &&
                IN6_IS_ADDR_LINKLOCAL(&((const struct sockaddr_in6 *)i->ifa_addr)->sin6_addr))
                continue;
            if (*spec) {
                if (ifname_matches(spec, i->ifa_name)) {
                    best = i;
                    break;
                }
                continue;
            }
            if (i->ifa_flags & IFF_LOOPBACK) {
                if (!loop && fam == AF_INET)
                    loop = i;
                continue;
            }
            if (ifname_default_ok(i->ifa_name)) {
                best = i;
                break;
            }
        }
    }
    if (!best && !*spec) {
        /* Only bridges/veth left: take the first non-loopback one, else loopback. */
        for (const struct ifaddrs *i = ifs; i && !best; i = i->ifa_next)
            if (i->ifa_addr && (i->ifa_flags & IFF_UP) && !(i->ifa_flags & IFF_LOOPBACK) &&
                i->ifa_addr->sa_family == AF_INET)
                best = i;
        if (!best)
            best = loop;
    }
    if (!best) {
        ORB_WARN("no network interface matches ORBIT_SOCKET_IFNAME=\"%s\"; set it to one of the "
                 "names `ip link` lists",
                 spec);
        freeifaddrs(ifs);
        return ORB_ERR_INVALID_ARG;
    }
    memset(out, 0, sizeof *out);
    out->len = best->ifa_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
    memcpy(&out->ss, best->ifa_addr, out->len);
    if (ifname_out)
        snprintf(ifname_out, ifname_len, "%s", best->ifa_name);
    freeifaddrs(ifs);
    return ORB_OK;
}

int orb_sock_set_nonblock(int fd, int on)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0)
        return -1;
    return fcntl(fd, F_SETFL, on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK));
}

void orb_sock_tune(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
}

orb_status_t orb_sock_listen(orb_sockaddr_t *addr, int backlog, int *fd_out)
{
    int fd = socket(addr->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return ORB_ERR_SYSTEM;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&addr->ss, addr->len) != 0 || listen(fd, backlog) != 0) {
        char b[96];
        ORB_WARN("cannot listen on %s: %s", orb_sockaddr_str(addr, b, sizeof b), strerror(errno));
        close(fd);
        return errno == EADDRINUSE ? ORB_ERR_INVALID_ARG : ORB_ERR_SYSTEM;
    }
    socklen_t len = sizeof addr->ss;
    getsockname(fd, (struct sockaddr *)&addr->ss, &len);
    addr->len = len;
    *fd_out = fd;
    return ORB_OK;
}

orb_status_t orb_sock_connect(const orb_sockaddr_t *addr, double deadline, int *fd_out)
{
    double backoff = 0.01;
    for (;;) {
        int fd = socket(addr->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return ORB_ERR_SYSTEM;
        if (connect(fd, (const struct sockaddr *)&addr->ss, addr->len) == 0) {
            orb_sock_tune(fd);
            *fd_out = fd;
            return ORB_OK;
        }
        int err = errno;
        close(fd);
        if (err != ECONNREFUSED && err != ETIMEDOUT && err != ENETUNREACH && err != EHOSTUNREACH &&
            err != ECONNRESET && err != EAGAIN && err != EINTR)
            return ORB_ERR_SYSTEM;
        if (orb_now() + backoff > deadline)
            return ORB_ERR_TIMEOUT;
        usleep((useconds_t)(backoff * 1e6));
        if (backoff < 0.2)
            backoff *= 2;
    }
}

static orb_status_t wait_fd(int fd, short ev, double deadline)
{
    for (;;) {
        double left = deadline - orb_now();
        if (left <= 0)
            return ORB_ERR_TIMEOUT;
        struct pollfd p = {.fd = fd, .events = ev};
        int ms = left > 1.0 ? 1000 : (int)(left * 1000) + 1;
        int rc = poll(&p, 1, ms);
        if (rc > 0)
            return ORB_OK;
        if (rc < 0 && errno != EINTR)
            return ORB_ERR_SYSTEM;
    }
}

orb_status_t orb_sock_send_all(int fd, const void *buf, size_t len, double deadline)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            orb_status_t st = wait_fd(fd, POLLOUT, deadline);
            if (st != ORB_OK)
                return st;
            continue;
        }
        return ORB_ERR_PEER_LOST;
    }
    return ORB_OK;
}

orb_status_t orb_sock_recv_all(int fd, void *buf, size_t len, double deadline)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n == 0)
            return ORB_ERR_PEER_LOST;
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            orb_status_t st = wait_fd(fd, POLLIN, deadline);
            if (st != ORB_OK)
                return st;
            continue;
        }
        return ORB_ERR_PEER_LOST;
    }
    return ORB_OK;
}
