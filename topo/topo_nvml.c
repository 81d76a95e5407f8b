/* NVLink at run time through NVML, for machines whose hwloc was built without NVML (Debian's
 * is): libnvidia-ml is opened with dlopen, so the library builds and runs without it. For
 * every active link of every GPU: a GPU at the other end is a direct link; an NVIDIA device
 * that is not one of our GPUs is an NVSwitch; anything else (a POWER9 NPU) is ignored.
 * All switches are taken as one fabric, as on HGX boards. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_priv.h"

#define NVLINK_MAX_LINKS 18

/* The ABI of the NVML calls used here (nvml.h is not needed to build). */
typedef struct orb_nvml_device *orb_nvml_device_t;
typedef struct {
    char bus_id_legacy[16];
    unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
} orb_nvml_pci_t;

typedef struct {
    int (*init)(void);
    int (*shutdown)(void);
    int (*by_busid)(const char *, orb_nvml_device_t *);
    int (*link_state)(orb_nvml_device_t, unsigned, int *);
    int (*link_version)(orb_nvml_device_t, unsigned, unsigned *);
    int (*link_remote)(orb_nvml_device_t, unsigned, orb_nvml_pci_t *);
} nvml_api_t;

static uint32_t link_mbs(unsigned version)
{
    /* Per direction and per link: NVLink 1 (P100) 20 GB/s, 2-4 (V100, A100, H100) 25 GB/s,
     * 5 (B200) 50 GB/s. */
    return version <= 1 ? 20000 : version <= 4 ? 25000 : 50000;
}

static int load_api(void *lib, nvml_api_t *api)
{
    void *p[6];
    static const char *const names[6] = {
        "nvmlInit_v2", "nvmlShutdown", "nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetNvLinkState",
        "nvmlDeviceGetNvLinkVersion", "nvmlDeviceGetNvLinkRemotePciInfo_v2"};
    for (int k = 0; k < 6; k++)
        if (!(p[k] = dlsym(lib, names[k])))
            return 0;
    /* dlsym returns data pointers; POSIX guarantees they convert to function pointers. */
    memcpy(&api->init, &p[0], sizeof p[0]);
    memcpy(&api->shutdown, &p[1], sizeof p[1]);
    memcpy(&api->by_busid, &p[2], sizeof p[2]);
    memcpy(&api->link_state, &p[3], sizeof p[3]);
    memcpy(&api->link_version, &p[4], sizeof p[4]);
    memcpy(&api->link_remote, &p[5], sizeof p[5]);
    return 1;
}

int orb_topo_nvml_matrix(int ngpus, char (*busids)[ORB_TOPO_BUSID_LEN], uint32_t *nvl, char *why,
                         size_t whylen)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    nvml_api_t api;
    int any = 0;
    if (!lib) {
        snprintf(why, whylen, "libnvidia-ml.so.1 not found");
        return 0;
    }
    if (!load_api(lib, &api) || api.init() != 0) {
        snprintf(why, whylen, "NVML did not initialise");
        dlclose(lib);
        return 0;
    }
    uint32_t *to_sw = calloc((size_t)ngpus, sizeof *to_sw);
    for (int i = 0; to_sw && i < ngpus; i++) {
        orb_nvml_device_t dev;
        if (api.by_busid(busids[i], &dev) != 0)
            continue;
        for (unsigned l = 0; l < NVLINK_MAX_LINKS; l++) {
            int active = 0;
            unsigned version = 0;
            orb_nvml_pci_t pci;
            memset(&pci, 0, sizeof pci);
            if (api.link_state(dev, l, &active) != 0 || !active || api.link_remote(dev, l, &pci) != 0)
                continue;
            if (api.link_version(dev, l, &version) != 0)
                version = 2;
            char canon[ORB_TOPO_BUSID_LEN];
            int j = -1;
            if (orb_topo_busid_parse(pci.bus_id, NULL, NULL, NULL, NULL, canon))
                for (int k = 0; k < ngpus; k++)
                    if (!strcmp(busids[k], canon))
                        j = k;
            if (j >= 0 && j != i)
                nvl[i * ngpus + j] += link_mbs(version);
            else if (j < 0 && (pci.pci_device_id & 0xffffu) == 0x10de)
                to_sw[i] += link_mbs(version);
        }
    }
    for (int i = 0; to_sw && i < ngpus; i++)
        for (int j = 0; j < ngpus; j++)
            if (i != j) {
                /* Each end saw the same direct links: keep the smaller count of the two. */
                uint32_t d = nvl[i * ngpus + j] < nvl[j * ngpus + i] ? nvl[i * ngpus + j] : nvl[j * ngpus + i];
                nvl[i * ngpus + j] = nvl[j * ngpus + i] = d;
            }
    for (int i = 0; to_sw && i < ngpus; i++)
        for (int j = 0; j < ngpus; j++)
            if (i != j)
                nvl[i * ngpus + j] += to_sw[i] < to_sw[j] ? to_sw[i] : to_sw[j];
    for (int e = 0; to_sw && e < ngpus * ngpus; e++)
        any |= nvl[e] != 0;
    if (!any)
        snprintf(why, whylen, "NVML reports no active NVLink between these GPUs");
    free(to_sw);
    api.shutdown();
    dlclose(lib);
    return any;
}
