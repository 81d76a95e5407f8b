/* SGD (with and without momentum), Adam and StepLR against the update rules of
 * torch.optim written out here in double precision. */
#include <math.h>

#include "optim.h"
#include "tt_util.h"

#define N 5

static void run(orb_train_optim_kind_t kind, float momentum, float lr)
{
    orb_train_optim_t *o;
    TT_CHECK(orb_train_optim_create(kind, N, momentum, &o) == ORB_OK, "create");
    float p[N] = {0.5f, -1.0f, 2.0f, 0.0f, 3.0f};
    double rp[N], m[N] = {0}, v[N] = {0}, buf[N] = {0};
    for (int i = 0; i < N; i++)
        rp[i] = p[i];
    for (int t = 1; t <= 6; t++) {
        float g[N];
        for (int i = 0; i < N; i++)
            g[i] = (float)(0.3 * sin(t * 1.7 + i) + 0.01 * i);
        orb_train_optim_step(o, p, g, lr);
        for (int i = 0; i < N; i++) {
            if (kind == ORB_TRAIN_SGD) {
                buf[i] = t == 1 ? g[i] : momentum * buf[i] + g[i];
                rp[i] -= lr * (momentum != 0 ? buf[i] : g[i]);
            } else {
                m[i] = 0.9 * m[i] + 0.1 * g[i];
                v[i] = 0.999 * v[i] + 0.001 * (double)g[i] * g[i];
                double mh = m[i] / (1 - pow(0.9, t)), denom = sqrt(v[i]) / sqrt(1 - pow(0.999, t)) + 1e-8;
                rp[i] -= lr * mh / denom;
            }
            TT_CHECK(fabs(p[i] - rp[i]) < 2e-6 * (1 + fabs(rp[i])), "kind %d momentum %g step %d p[%d]=%.8g want %.8g",
                     kind, (double)momentum, t, i, p[i], rp[i]);
        }
    }
    TT_CHECK(o->t == 6, "step count");
    orb_train_optim_destroy(o);
}

int main(void)
{
    run(ORB_TRAIN_SGD, 0.0f, 0.1f);
    run(ORB_TRAIN_SGD, 0.9f, 0.05f);
    run(ORB_TRAIN_ADAM, 0.0f, 0.01f);
    TT_CHECK(orb_train_lr_at(0.1f, 0, 0.1f, 7) == 0.1f, "no schedule");
    TT_CHECK(orb_train_lr_at(0.1f, 3, 0.5f, 2) == 0.1f, "StepLR before the first step");
    TT_CHECK(fabsf(orb_train_lr_at(0.1f, 3, 0.5f, 3) - 0.05f) < 1e-9f, "StepLR at epoch 3");
    TT_CHECK(fabsf(orb_train_lr_at(0.1f, 3, 0.5f, 7) - 0.025f) < 1e-9f, "StepLR at epoch 7");
    printf("optim: ok\n");
    return 0;
}
