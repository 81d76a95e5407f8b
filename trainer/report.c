#include "report.h"

#include <stdio.h>

#include "error.h"

orb_status_t orb_train_report_json(const char *path, const orb_train_report_t *r)
{
    const orb_train_opts_t *o = r->opts;
    FILE *f = fopen(path, "w");
    if (!f)
        return orb_train_fail(ORB_ERR_SYSTEM, "--json %s: cannot create the file", path);
    fprintf(f, "{\n  \"impl\": \"orbit\",\n  \"model\": \"%s\",\n  \"backend\": \"%s\",\n  \"world_size\": %d,\n",
            o->model, o->backend, r->world);
    fprintf(f, "  \"batch_size\": %d,\n  \"per_rank_batch\": %d,\n  \"optimizer\": \"%s\",\n  \"lr\": %g,\n"
               "  \"momentum\": %g,\n  \"lr_step\": %d,\n  \"lr_gamma\": %g,\n  \"seed\": %llu,\n",
            o->batch_size, r->per_rank_batch, o->optimizer, (double)o->lr, (double)o->momentum, o->lr_step,
            (double)o->lr_gamma, (unsigned long long)o->seed);
    fprintf(f, "  \"blas\": \"%s\",\n", r->blas ? r->blas : "");
    fprintf(f, "  \"overlap\": %s,\n  \"no_sync\": %s,\n  \"bucket_mb\": %g,\n  \"threads\": %d,\n  \"nparams\": %zu,\n",
            o->overlap ? "true" : "false", o->no_sync ? "true" : "false", o->bucket_mb, o->threads, r->nparams);
    fprintf(f, "  \"bucket_bytes\": [");
    for (int i = 0; i < r->nbuckets; i++)
        fprintf(f, "%s%zu", i ? ", " : "", r->bucket_bytes[i]);
    fprintf(f, "],\n  \"data_mean\": %.6f,\n  \"data_std\": %.6f,\n  \"epochs\": [", r->data_mean, r->data_std);
    for (int i = 0; i < r->nepochs; i++) {
        const orb_train_epoch_rec_t *e = &r->epochs[i];
        fprintf(f, "%s\n    {\"epoch\": %d, \"loss\": %.6f, \"dur\": %.4f, \"lr\": %g, \"cpu\": %.4f, \"steps\": %lld, "
                   "\"images\": %lld, \"images_per_s_rank0\": %.3f, \"images_per_s\": %.3f",
                i ? "," : "", e->epoch, e->loss, e->dur, e->lr, e->cpu, (long long)e->steps, (long long)e->images,
                e->ips_rank, e->ips);
        if (o->baseline_ips > 0)
            fprintf(f, ", \"scaling_efficiency\": %.6f", orb_train_scaling_efficiency(e->ips, r->world, o->baseline_ips));
        fprintf(f, "}");
    }
    /* the run's throughput is its last epoch's: the first carries the warm-up */
    const orb_train_epoch_rec_t *last = r->nepochs ? &r->epochs[r->nepochs - 1] : NULL;
    fprintf(f, "\n  ],\n  \"final_loss\": %.6f,\n  \"total_time\": %.4f,\n", last ? last->loss : -1.0,
            r->total_time);
    fprintf(f, "  \"steps_per_epoch\": %lld,\n  \"images_per_s_rank0\": %.3f,\n  \"images_per_s\": %.3f,\n",
            (long long)o->steps, last ? last->ips_rank : 0.0, last ? last->ips : 0.0);
    if (o->baseline_ips > 0)
        fprintf(f, "  \"baseline_images_per_s\": %.3f,\n  \"scaling_efficiency\": %.6f,\n", o->baseline_ips,
                last ? orb_train_scaling_efficiency(last->ips, r->world, o->baseline_ips) : 0.0);
    if (o->synthetic)
        fprintf(f, "  \"synthetic\": [%d, %d, %d, %d],\n", o->synth.c, o->synth.h, o->synth.w, o->synth.nclasses);
    fprintf(f, "  \"test_images\": %lld,\n  \"accuracy\": %.4f,\n  \"class_accuracy\": [", (long long)r->test_images,
            r->test_images ? 100.0 * (double)r->correct / (double)r->test_images : 0.0);
    for (int c = 0; c < r->nclasses; c++) {
        int64_t tot = r->class_counts[r->nclasses + c];
        fprintf(f, "%s%.4f", c ? ", " : "", tot ? 100.0 * (double)r->class_counts[c] / (double)tot : 0.0);
    }
    fprintf(f, "]");
    if (r->profile) {
        const orb_train_profile_summary_t *p = r->profile;
        fprintf(f, ",\n  \"profile\": {\"steps\": %lld, \"step_s\": %.6f, \"compute_s\": %.6f, \"comm_s\": %.6f, "
                   "\"exposed_s\": %.6f, \"exposed_frac\": %.6f, \"least_exposed_frac\": %.6f, \"bytes\": %.0f}",
                (long long)p->steps, p->step_s, p->compute_s, p->comm_s, p->exposed_s,
                p->step_s > 0 ? p->exposed_s / p->step_s : 0.0, p->least_exposed_frac, p->bytes);
    }
    fprintf(f, "\n}\n");
    if (fclose(f) != 0)
        return orb_train_fail(ORB_ERR_SYSTEM, "--json %s: write failed", path);
    return ORB_OK;
}
