/* Names of link classes and the bus id syntax, shared by discovery, explanation and tool. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "topo_priv.h"

static const char *const class_names[] = {
#define ORB_TOPO_CLASS_NAME_(id, words) #id,
    ORB_TOPO_CLASS_MAP(ORB_TOPO_CLASS_NAME_)
#undef ORB_TOPO_CLASS_NAME_
};

static const char *const class_words[] = {
#define ORB_TOPO_CLASS_WORDS_(id, words) words,
    ORB_TOPO_CLASS_MAP(ORB_TOPO_CLASS_WORDS_)
#undef ORB_TOPO_CLASS_WORDS_
};

const char *orb_topo_class_name(orb_topo_class_t c)
{
    return (unsigned)c < ORB_TOPO_NCLASSES ? class_names[c] : "?";
}

const char *orb_topo_class_words(orb_topo_class_t c)
{
    return (unsigned)c < ORB_TOPO_NCLASSES ? class_words[c] : "?";
}

int orb_topo_busid_parse(const char *s, unsigned *dom, unsigned *bus, unsigned *dev, unsigned *fn,
                         char *canon)
{
    unsigned d = 0, b, v, f;
    int used = 0;
    if (!s)
        return 0;
    while (isspace((unsigned char)*s))
        s++;
    /* CUDA gives "0000:3B:00.0", NVML's legacy form "00000000:3b:00.0", lspci "3b:00.0". */
    if (sscanf(s, "%x:%x:%x.%x%n", &d, &b, &v, &f, &used) != 4) {
        d = 0;
        if (sscanf(s, "%x:%x.%x%n", &b, &v, &f, &used) != 3)
            return 0;
    }
    if (s[used] != '\0' && !isspace((unsigned char)s[used]))
        return 0;
    if (d > 0xffff || b > 0xff || v > 0x1f || f > 0x7)
        return 0;
    if (dom)
        *dom = d;
    if (bus)
        *bus = b;
    if (dev)
        *dev = v;
    if (fn)
        *fn = f;
    if (canon)
        snprintf(canon, ORB_TOPO_BUSID_LEN, "%04x:%02x:%02x.%x", d, b, v, f);
    return 1;
}
