/* NVLink from hwloc's "NVLinkBandwidth" distances (MB/s). The matrix mixes object types:
 * GPUs as OS devices (nvml0, cuda0) or PCI devices, NVSwitches as PCI devices, CPUs as
 * Packages. Two GPUs get their direct links plus, for every switch both reach, the smaller
 * of their two links to it: the traffic of a GPU pair spreads over all shared switches.
 * Links between switches are not in hwloc's data, so switch planes stay apart (a DGX-2
 * export shows GPUs 0-7 and 8-15 as two planes). */
#include <stdlib.h>
#include <string.h>

#include "topo_hw.h"

#define MAX_MATRICES 4

/* GPU index of an object of the matrix, -1 for a switch candidate, -2 for anything else. */
static int matrix_gpu(const struct orb_topo *t, hwloc_obj_t o)
{
    while (o && o->type == HWLOC_OBJ_OS_DEVICE)
        o = o->parent;
    if (!o || o->type != HWLOC_OBJ_PCI_DEVICE)
        return -2;
    for (int i = 0; i < t->ngpus; i++)
        if (t->gpu_obj[i] == o)
            return i;
    return -1;
}

static uint32_t sym(const struct hwloc_distances_s *d, unsigned a, unsigned b)
{
    hwloc_uint64_t x = d->values[a * d->nbobjs + b], y = d->values[b * d->nbobjs + a];
    hwloc_uint64_t m = x < y ? x : y;
    return m > UINT32_MAX ? UINT32_MAX : (uint32_t)m;
}

static void add_matrix(struct orb_topo *t, const struct hwloc_distances_s *d, uint32_t *nvl)
{
    int n = t->ngpus;
    int *gpu = malloc(d->nbobjs * sizeof *gpu);
    uint32_t *to_sw = calloc((size_t)n, sizeof *to_sw);
    if (!gpu || !to_sw)
        goto out;
    for (unsigned k = 0; k < d->nbobjs; k++)
        gpu[k] = matrix_gpu(t, d->objs[k]);
    for (unsigned a = 0; a < d->nbobjs; a++)
        for (unsigned b = a + 1; b < d->nbobjs; b++) {
            int i = gpu[a], j = gpu[b];
            uint32_t v = sym(d, a, b);
            if (i >= 0 && j >= 0 && i != j && v > nvl[i * n + j])
                nvl[i * n + j] = nvl[j * n + i] = v; /* one entry per pair: never add twice */
        }
    for (unsigned s = 0; s < d->nbobjs; s++) {
        if (gpu[s] != -1)
            continue;
        memset(to_sw, 0, (size_t)n * sizeof *to_sw);
        for (unsigned a = 0; a < d->nbobjs; a++)
            if (gpu[a] >= 0 && sym(d, a, s) > to_sw[gpu[a]])
                to_sw[gpu[a]] = sym(d, a, s);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                if (i != j)
                    nvl[i * n + j] += to_sw[i] < to_sw[j] ? to_sw[i] : to_sw[j];
    }
out:
    free(gpu);
    free(to_sw);
}

int orb_topo_hw_nvlink(struct orb_topo *t)
{
    struct hwloc_distances_s *d[MAX_MATRICES];
    unsigned nr = MAX_MATRICES;
    if (t->ngpus < 2 || hwloc_distances_get_by_name(t->hw, "NVLinkBandwidth", &nr, d, 0) != 0)
        return 0;
    uint32_t *nvl = calloc((size_t)t->ngpus * (size_t)t->ngpus, sizeof *nvl);
    int any = 0;
    for (unsigned k = 0; k < nr; k++) {
        if (nvl)
            add_matrix(t, d[k], nvl);
        hwloc_distances_release(t->hw, d[k]);
    }
    for (int e = 0; nvl && e < t->ngpus * t->ngpus; e++)
        any |= nvl[e] != 0;
    if (!any) {
        free(nvl);
        return 0;
    }
    t->nvl = nvl;
    snprintf(t->nvl_source, sizeof t->nvl_source, "hwloc NVLinkBandwidth");
    return 1;
}
