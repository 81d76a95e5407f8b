/* Small TCP helpers with deadlines. Addresses are IPv4 or IPv6 sockaddr_storage. */
#ifndef ORB_TRANSPORT_SOCK_H
#define ORB_TRANSPORT_SOCK_H

#include <netinet/in.h>
#include <stddef.h>
#include <sys/socket.h>

#include "orbit.h"

typedef struct {
    struct sockaddr_storage ss;
    socklen_t len;
} orb_sockaddr_t;

/* "1.2.3.4:5678" or "[::1]:5678" */
const char *orb_sockaddr_str(const orb_sockaddr_t *a, char *buf, size_t len);
/* Resolve host (name or literal) and port. */
orb_status_t orb_sockaddr_resolve(const char *host, int port, orb_sockaddr_t *out);
/* The address of this host that other hosts should use: ORBIT_SOCKET_IFNAME, else the first
 * interface that is up and not loopback/docker/veth, else loopback. ifname_out may be NULL. */
orb_status_t orb_sockaddr_local(orb_sockaddr_t *out, char *ifname_out, size_t ifname_len);
int orb_sockaddr_port(const orb_sockaddr_t *a);
void orb_sockaddr_set_port(orb_sockaddr_t *a, int port);

/* Listening socket bound to addr (port 0: any); addr updated with the real port. */
orb_status_t orb_sock_listen(orb_sockaddr_t *addr, int backlog, int *fd_out);
/* Connect, retrying refused connections until deadline (CLOCK_MONOTONIC seconds). */
orb_status_t orb_sock_connect(const orb_sockaddr_t *addr, double deadline, int *fd_out);
/* Blocking-with-deadline full transfers on a socket (any mode). ORB_ERR_PEER_LOST on EOF. */
orb_status_t orb_sock_send_all(int fd, const void *buf, size_t len, double deadline);
orb_status_t orb_sock_recv_all(int fd, void *buf, size_t len, double deadline);
int orb_sock_set_nonblock(int fd, int on);
void orb_sock_tune(int fd); /* TCP_NODELAY, keepalive */

#endif
