/* The machine description: load (this machine, an XML, or ORBIT_TOPO_FILE), queries, dump,
 * and binding. Discovery itself lives in topo_hw_*.c (or topo_nohw.c without hwloc). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/param.h"
#include "topo_priv.h"

orb_status_t orb_topo_load(const char *xml_path, orb_topo_t **out)
{
    if (!out)
        return ORB_ERR_INVALID_ARG;
    struct orb_topo *t = calloc(1, sizeof *t);
    if (!t)
        return ORB_ERR_NO_MEMORY;
    const char *path = xml_path && *xml_path ? xml_path : orb_param_str(ORB_PARAM_S_TOPO_FILE);
    if (path && !*path)
        path = NULL;
    /* hwloc also honours its own HWLOC_XMLFILE; say so rather than claim "this machine". */
    const char *hwenv = getenv("HWLOC_XMLFILE");
    if (path)
        snprintf(t->source, sizeof t->source, "%s", path);
    else if (hwenv && *hwenv)
        snprintf(t->source, sizeof t->source, "%s (HWLOC_XMLFILE)", hwenv);
    else
        snprintf(t->source, sizeof t->source, "this machine");
    orb_status_t st = orb_topo_hw_open(t, path);
    if (st != ORB_OK) {
        orb_topo_free(t);
        return st;
    }
    if (t->note[0])
        ORB_INFO("topology: %s", t->note);
    *out = t;
    return ORB_OK;
}

void orb_topo_free(orb_topo_t *t)
{
    if (!t)
        return;
    orb_topo_hw_close(t);
    free(t->gpu_busid);
    free(t->gpu_obj);
    free(t->nvl);
    free(t->nics);
    free(t->nic_obj);
    free(t);
}

const char *orb_topo_source(const orb_topo_t *t) { return t ? t->source : ""; }
const char *orb_topo_note(const orb_topo_t *t) { return t ? t->note : ""; }
int orb_topo_is_this_machine(const orb_topo_t *t) { return t && t->hw && t->this_machine; }

int orb_topo_gpus(const orb_topo_t *t, char (*busids)[ORB_TOPO_BUSID_LEN], int max)
{
    for (int i = 0; busids && i < t->ngpus && i < max; i++)
        memcpy(busids[i], t->gpu_busid[i], ORB_TOPO_BUSID_LEN);
    return t->ngpus;
}

int orb_topo_numa_nodes(const orb_topo_t *t, int i, char *cpus, size_t len)
{
    if (!t->hw) {
        if (cpus && len)
            cpus[0] = '\0';
        return 0;
    }
    return orb_topo_hw_numa_nodes(t, i, cpus, len);
}

orb_status_t orb_topo_self_desc(const orb_topo_t *t, char *desc, size_t len)
{
    if (!desc || len < 4)
        return ORB_ERR_INVALID_ARG;
    if (!t || !t->hw) {
        snprintf(desc, len, "cpu");
        return ORB_OK;
    }
    return orb_topo_hw_self_desc(t, desc, len);
}

orb_status_t orb_topo_dump(const orb_topo_t *t, const char *path)
{
    if (!path)
        path = orb_param_str(ORB_PARAM_S_TOPO_DUMP);
    if (!path || !*path)
        return ORB_OK;
    if (!t || !t->hw) {
        ORB_WARN("topology: nothing to write to %s (%s)", path, t ? t->note : "no topology");
        return ORB_ERR_UNSUPPORTED;
    }
    return orb_topo_hw_dump(t, path);
}

orb_status_t orb_topo_bind(const orb_topo_t *t, const orb_topo_host_t *host, int rank, char *note,
                           size_t notelen)
{
    char buf[256];
    if (!note || !notelen) {
        note = buf;
        notelen = sizeof buf;
    }
    note[0] = '\0';
    if (!t || !host)
        return ORB_ERR_INVALID_ARG;
    int i = orb_topo_host_find(host, rank);
    if (i < 0)
        return ORB_ERR_INVALID_ARG;
    orb_status_t st = ORB_OK;
    const double mode = orb_param_num(ORB_PARAM_BIND);
    if (mode == 0)
        snprintf(note, notelen, "rank %d: ORBIT_BIND=0: not bound", rank);
    else if (!t->hw)
        snprintf(note, notelen, "rank %d: not bound: %s", rank, t->note);
    else if (!t->this_machine)
        snprintf(note, notelen, "rank %d: topology read from %s, not this machine: not bound", rank, t->source);
    else if (!host->dev[i].located)
        snprintf(note, notelen, "rank %d: device not found in the topology: not bound", rank);
    else
        st = orb_topo_hw_bind(t, host, i, mode == 2 ? 2 : 1, note, notelen);
    ORB_INFO("topology: %s", note);
    return st;
}
