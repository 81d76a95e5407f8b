/* DDP bucketing: buckets are ranges of the flat gradient buffer taken from its tail, never
 * splitting a tensor, the first capped at 1 MiB and the rest at --bucket-mb; with overlap a
 * bucket is launched by the backward hook of the layer that completes it, and not before;
 * without, all at the end; the result is divided by the world size. Runs the reducer over
 * the single-process backend with the world size forced to 2 (the sum is then the
 * identity, so averaging shows as halving). */
#include <string.h>

#include "comm_thread.h"
#include "model.h"
#include "reducer.h"
#include "tt_util.h"

static void check_layout(const orb_train_model_t *m, const orb_train_reducer_t *r, const char *what)
{
    size_t end = m->nparams;
    for (int b = 0; b < r->nbuckets; b++) {
        const orb_train_bucket_t *bk = &r->buckets[b];
        TT_CHECK(bk->off + bk->count == end && bk->count > 0, "%s: bucket %d is not the next range down", what, b);
        int at_tensor = 0;
        for (int t = 0; t < m->ntensors; t++)
            at_tensor |= m->tensors[t].off == bk->off;
        TT_CHECK(at_tensor, "%s: bucket %d starts inside a tensor", what, b);
        end = bk->off;
    }
    TT_CHECK(end == 0, "%s: buckets do not cover the parameters", what);
}

static orb_train_reducer_t *make(orb_train_model_t *m, orb_train_comm_t *c, double mb, int overlap)
{
    orb_train_reducer_t *r;
    TT_CHECK(orb_train_reducer_create(m, c, (size_t)(mb * 1024 * 1024), overlap, &r) == ORB_OK, "reducer");
    return r;
}

static size_t tensor_off(const orb_train_model_t *m, const char *name)
{
    for (int t = 0; t < m->ntensors; t++)
        if (strcmp(m->tensors[t].name, name) == 0)
            return m->tensors[t].off;
    TT_CHECK(0, "no tensor %s", name);
    return 0;
}

/* Backward's hooks, last layer first: after each, exactly the buckets lying wholly at or
 * above that layer's first parameter have been launched (with overlap). */
static void run_step(orb_train_model_t *m, orb_train_reducer_t *r, int overlap)
{
    for (size_t i = 0; i < m->nparams; i++)
        m->grads[i] = 3.0f;
    orb_train_reducer_begin(r, 0);
    for (int i = m->nlayers - 1; i >= 0; i--) {
        const orb_train_layer_t *l = &m->layers[i];
        if (!orb_train_layer_nparams(l))
            continue;
        orb_train_reducer_hook(r, l);
        int want = 0;
        for (int b = 0; b < r->nbuckets; b++)
            want += overlap && r->buckets[b].off >= l->param_off;
        TT_CHECK(r->next == want, "after %s: %d buckets launched, want %d", l->name, r->next, want);
    }
    TT_CHECK(orb_train_reducer_finish(r) == ORB_OK, "finish");
    TT_CHECK(r->next == r->nbuckets, "all buckets launched");
    for (size_t i = 0; i < m->nparams; i++)
        TT_CHECK(m->grads[i] == 1.5f, "gradient %zu = %g after averaging over 2 ranks", i, m->grads[i]);
}

int main(void)
{
    orb_train_comm_t *c;
    TT_CHECK(orb_train_comm_start(&orb_train_backend_none_ops, NULL, &c) == ORB_OK, "comm");
    orb_train_model_t *lenet, *convnet;
    TT_CHECK(orb_train_model_create("lenet", (orb_train_shape_t){1, 28, 28}, 10, 4, &lenet) == ORB_OK, "lenet");
    TT_CHECK(orb_train_model_create("convnet", (orb_train_shape_t){1, 28, 28}, 10, 4, &convnet) == ORB_OK, "convnet");

    /* DDP defaults: LeNet (247 KB) fits the 1 MiB first bucket; ConvNet's first bucket
     * closes on fc1.weight (4.7 MB), the rest (conv1, conv2: 75 KB) is the second */
    orb_train_reducer_t *r = make(lenet, c, 25, 1);
    check_layout(lenet, r, "lenet 25 MB");
    TT_CHECK(r->nbuckets == 1, "lenet at 25 MB: %d buckets", r->nbuckets);
    orb_train_reducer_destroy(r);
    r = make(convnet, c, 25, 1);
    check_layout(convnet, r, "convnet 25 MB");
    TT_CHECK(r->nbuckets == 2 && r->buckets[0].off == tensor_off(convnet, "fc1.weight"), "convnet at 25 MB");
    orb_train_reducer_destroy(r);
    /* a cap below every tensor: one bucket per tensor */
    for (int k = 0; k < 2; k++) {
        orb_train_model_t *m = k ? convnet : lenet;
        r = make(m, c, 1e-6, 1);
        check_layout(m, r, "tiny cap");
        TT_CHECK(r->nbuckets == m->ntensors, "tiny cap: %d buckets for %d tensors", r->nbuckets, m->ntensors);
        orb_train_reducer_destroy(r);
    }
    /* 0.1 MB on LeNet: fc3+fc2 (44 KB) grow until fc1.weight passes the cap */
    r = make(lenet, c, 0.1, 1);
    check_layout(lenet, r, "lenet 0.1 MB");
    TT_CHECK(r->nbuckets == 2 && r->buckets[0].off == tensor_off(lenet, "fc1.weight"), "lenet at 0.1 MB: %d buckets",
             r->nbuckets);
    orb_train_reducer_destroy(r);

    for (int overlap = 0; overlap <= 1; overlap++)
        for (int k = 0; k < 2; k++) {
            orb_train_model_t *m = k ? convnet : lenet;
            double caps[] = {25, 0.1, 1e-6};
            for (int ci = 0; ci < 3; ci++) {
                r = make(m, c, caps[ci], overlap);
                r->world = 2;
                run_step(m, r, overlap);
                orb_train_reducer_destroy(r);
            }
        }
    orb_train_model_destroy(lenet);
    orb_train_model_destroy(convnet);
    orb_train_comm_stop(c);
    printf("reducer: ok\n");
    return 0;
}
