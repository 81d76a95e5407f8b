/* orbit-trace: merges the per-rank ORBIT_TRACE files of a run into one Chrome trace, prints where
 * the time went (bandwidth, step shares, stragglers) and optionally draws a timeline PNG. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: orbit-trace [options] DIR\n"
            "Reads DIR/orbit-*.trace (written by a run with ORBIT_TRACE=DIR, ORBIT_TRACE_STEPS=1 for steps),\n"
            "writes one Chrome trace for chrome://tracing or ui.perfetto.dev and prints a summary.\n"
            "  -o FILE          the Chrome trace JSON (default DIR/trace.json)\n"
            "  --json FILE      the summary's numbers as JSON too\n"
            "  --plot FILE.png  a timeline picture: a band per rank, calls and per-channel steps\n"
            "  -h, --help       this text\n");
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"json", required_argument, NULL, 'j'},
                                         {"plot", required_argument, NULL, 'p'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *out = NULL, *json = NULL, *plot = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 'j':
            json = optarg;
            break;
        case 'p':
            plot = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 1;
        }
    }
    if (optind + 1 != argc) {
        fprintf(stderr, "orbit-trace: give exactly one DIR, the directory ORBIT_TRACE named\n");
        usage(stderr);
        return 1;
    }
    const char *dir = argv[optind];
    char *def_out = NULL;
    if (!out) {
        size_t n = strlen(dir) + sizeof("/trace.json");
        def_out = malloc(n);
        snprintf(def_out, n, "%s/trace.json", dir);
        out = def_out;
    }
    trace_set_t set;
    int rc = 1;
    if (trace_dir_read(dir, &set)) /* it leaves set freeable either way */
        goto err;
    if (trace_set_match(&set) || trace_chrome_write(&set, out))
        goto err;
    if (plot && trace_plot_write(&set, plot))
        goto err;
    if (trace_summary_write(&set, stdout, json))
        goto err;
    fprintf(stderr, "orbit-trace: wrote %s (open it in chrome://tracing or ui.perfetto.dev)%s%s\n", out,
            plot ? " and " : "", plot ? plot : "");
    rc = 0;
err:
    trace_set_free(&set);
    free(def_out);
    return rc;
}
