/* The models against PyTorch itself: with the same parameters (copied in
 * model.parameters() order, which is also a check of the flat layout) and the same batch,
 * orbit-train's loss and gradients must match PyTorch's in float64 (torch_reference.py,
 * using bench/ddp_torch.py's model classes). Skipped where Debian's python3-torch is absent.
 * usage: test_trainer_torchref PYTHON torch_reference.py bench/ddp_torch.py */
#include <string.h>

#include "loss.h"
#include "model.h"
#include "rng.h"
#include "tt_util.h"

#define BATCH 16

static void dump(const char *path, const char *name)
{
    orb_train_model_t *m;
    TT_CHECK(orb_train_model_create(name, (orb_train_shape_t){1, 28, 28}, 10, BATCH, &m) == ORB_OK, "%s", name);
    orb_train_model_init_params(m, 3);
    orb_train_rng_t rng;
    orb_train_rng_seed(&rng, 17);
    float *x = orb_train_model_input(m);
    int32_t y[BATCH];
    int64_t ids[BATCH];
    for (int i = 0; i < BATCH * 784; i++)
        x[i] = 3.0f * orb_train_rng_uniform(&rng) - 1.0f;
    for (int b = 0; b < BATCH; b++)
        y[b] = (int32_t)orb_train_rng_below(&rng, 10), ids[b] = b;
    FILE *f = fopen(path, "wb");
    TT_CHECK(f != NULL, "create %s", path);
    uint64_t np = m->nparams;
    fwrite(&np, 8, 1, f);
    fwrite(m->params, 4, np, f);
    fwrite(x, 4, BATCH * 784, f);
    fwrite(y, 4, BATCH, f);
    /* evaluation mode: dropout masks are not comparable between the two */
    orb_train_pass_t pass = {.n = BATCH, .training = 0, .sample_ids = ids};
    double loss = orb_train_nll_loss(orb_train_model_forward(m, &pass), y, BATCH, 10, orb_train_model_output_grad(m));
    orb_train_model_backward(m, &pass, NULL, NULL);
    fwrite(m->grads, 4, np, f);
    fwrite(&loss, 8, 1, f);
    TT_CHECK(fclose(f) == 0, "write %s", path);
    orb_train_model_destroy(m);
}

int main(int argc, char **argv)
{
    TT_CHECK(argc == 4, "usage: %s PYTHON torch_reference.py ddp_torch.py", argv[0]);
    char *dir = tt_mkdtemp("torchref"), out[4200];
    snprintf(out, sizeof out, "%s/probe.log", dir);
    char *probe[] = {argv[1], "-c", "import torch", NULL};
    if (tt_run(probe, out, 60) != 0) {
        printf("SKIP: %s cannot import torch (apt install python3-torch)\n", argv[1]);
        tt_rmtree(dir);
        return TT_SKIP;
    }
    char lenet[4200], convnet[4200];
    snprintf(lenet, sizeof lenet, "%s/lenet.bin", dir);
    snprintf(convnet, sizeof convnet, "%s/convnet.bin", dir);
    dump(lenet, "lenet");
    dump(convnet, "convnet");
    snprintf(out, sizeof out, "%s/compare.log", dir);
    char *cmp[] = {argv[1], argv[2], argv[3], lenet, convnet, NULL};
    int rc = tt_run(cmp, out, 90);
    char *log = tt_read_file(out, NULL);
    printf("%s", log ? log : "");
    TT_CHECK(rc == 0, "PyTorch disagrees (exit %d)", rc);
    free(log);
    tt_rmtree(dir);
    free(dir);
    return 0;
}
