/* Growable text for explanations: the output is built once per communicator, so a simple
 * doubling buffer that remembers a failed allocation is enough. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "topo_priv.h"

void orb_topo_text_add(orb_topo_text_t *b, const char *fmt, ...)
{
    if (b->failed)
        return;
    for (;;) {
        size_t room = b->cap - b->len;
        va_list ap;
        va_start(ap, fmt);
        int n = b->s ? vsnprintf(b->s + b->len, room, fmt, ap) : -2;
        va_end(ap);
        if (n == -1) {
            b->failed = 1;
            return;
        }
        if (n >= 0 && (size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? 2 * b->cap : 1024;
        while (n >= 0 && cap - b->len <= (size_t)n)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->failed = 1;
            return;
        }
        b->s = s;
        b->cap = cap;
        b->s[b->len] = '\0';
    }
}

void orb_topo_text_ranks(orb_topo_text_t *b, const int *v, int n)
{
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && v[j + 1] == v[j] + 1)
            j++;
        const char *sep = i ? "," : "";
        if (j == i)
            orb_topo_text_add(b, "%s%d", sep, v[i]);
        else
            orb_topo_text_add(b, "%s%d-%d", sep, v[i], v[j]);
        i = j + 1;
    }
}
