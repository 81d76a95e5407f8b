/* Discovery without hwloc: nothing is located, so rings follow rank order and binding is a
 * no-op. Everything else in topo/ works the same. */
#include <stdio.h>

#include "topo_priv.h"

orb_status_t orb_topo_hw_open(struct orb_topo *t, const char *xml)
{
    if (xml)
        snprintf(t->note, sizeof t->note, "built without hwloc (%.200s not read)", xml);
    else
        snprintf(t->note, sizeof t->note, "built without hwloc");
    return ORB_OK;
}

void orb_topo_hw_close(struct orb_topo *t) { (void)t; }

int orb_topo_hw_locate(const struct orb_topo *t, orb_topo_host_t *h, const char *const *cpu_req)
{
    (void)t; /* never called: orb_topo_place sees no data first */
    (void)h;
    (void)cpu_req;
    return 0;
}

int orb_topo_hw_numa_nodes(const struct orb_topo *t, int i, char *cpus, size_t len)
{
    (void)t;
    (void)i;
    if (cpus && len)
        cpus[0] = '\0';
    return 0;
}

orb_status_t orb_topo_hw_self_desc(const struct orb_topo *t, char *desc, size_t len)
{
    (void)t;
    snprintf(desc, len, "cpu");
    return ORB_OK;
}

orb_status_t orb_topo_hw_dump(const struct orb_topo *t, const char *path)
{
    (void)t;
    (void)path;
    return ORB_ERR_UNSUPPORTED;
}

orb_status_t orb_topo_hw_bind(const struct orb_topo *t, const orb_topo_host_t *host, int i, int mode, char *note,
                              size_t len)
{
    (void)t;
    (void)mode;
    snprintf(note, len, "rank %d: built without hwloc: not bound", host->dev[i].rank);
    return ORB_OK;
}
