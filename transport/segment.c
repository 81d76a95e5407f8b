#include "transport/segment.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

orb_status_t orb_segment_map_peer(const char *name, int peer, size_t bytes, void **out, char *err, size_t errlen)
{
    *out = NULL;
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open rank %d's shared memory %s: %s (if the ranks are on different "
                              "hosts that look alike, give each host its own ORBIT_HOSTID)",
                 peer, name, strerror(errno));
        return ORB_ERR_SYSTEM;
    }
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        snprintf(err, errlen, "cannot map rank %d's shared memory: %s", peer, strerror(errno));
        return ORB_ERR_NO_MEMORY;
    }
    *out = p;
    return ORB_OK;
}
