#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

void orb_train_opts_usage(const char *prog)
{
    printf("usage: %s [options]   (run under orbitrun -n N, mpirun or srun for data parallel)\n"
           "  --model NAME              lenet, convnet, resnet20, resnet18, resnet50 (lenet)\n"
           "  --data DIR                IDX files, gzipped or not (%s)\n"
           "  --data synthetic:C,H,W,K  generated samples of C x H x W, K classes (throughput runs)\n"
           "  --epochs E                (10)\n"
           "  --steps N                 end each epoch after N optimizer steps (the whole shard)\n"
           "  --baseline-ips X          images/s of this run on 1 rank: print scaling efficiency\n"
           "  --batch-size B            global batch; each rank takes B / world size (64)\n"
           "  --lr LR                   learning rate (0.01 for sgd, 0.001 for adam)\n"
           "  --optimizer sgd|adam      (sgd)\n"
           "  --momentum M              SGD momentum (0.9)\n"
           "  --lr-step S --lr-gamma G  StepLR: lr *= G every S epochs (off; G 0.1)\n"
           "  --backend custom|mpi|none orbit, Open MPI, or one process (custom)\n"
           "  --bucket-mb MB            gradient bucket size; the first is capped at 1 MiB (25)\n"
           "  --no-overlap              all-reduce buckets only after backward ends\n"
           "  --grad-dtype fp32|bf16|fp16  gradient buckets all-reduced in 16 bits (DDP's compression hooks) (fp32)\n"
           "  --sync-bn                 SyncBatchNorm: batch statistics over all ranks (ResNet models)\n"
           "  --no-sync                 gradients stay each rank's own (DDP's no_sync()): the step\n"
           "                            without communication, for measuring; the ranks' models diverge\n"
           "  --seed S                  weights, shuffling and dropout (1)\n"
           "  --threads T               BLAS threads per rank (1)\n"
           "  --profile FILE            Chrome trace of every rank, and a summary\n"
           "  --save CKPT               checkpoint after every epoch (rank 0, atomic)\n"
           "  --resume CKPT             continue a saved run\n"
           "  --json FILE               results as JSON (rank 0)\n",
           prog, ORB_TRAIN_DEFAULT_DATA);
}

static orb_status_t parse_long(const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return orb_train_fail(ORB_ERR_INVALID_ARG, "%s: '%s' is not an integer in [%ld, %ld]", opt, s, lo, hi);
    *out = v;
    return ORB_OK;
}

static orb_status_t parse_double(const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        return orb_train_fail(ORB_ERR_INVALID_ARG, "%s: '%s' is not a number in [%g, %g]", opt, s, lo, hi);
    *out = v;
    return ORB_OK;
}

enum { O_MODEL = 256, O_DATA, O_EPOCHS, O_BATCH, O_LR, O_OPT, O_MOM, O_LRSTEP, O_LRGAMMA, O_BACKEND,
       O_BUCKET, O_NOOVERLAP, O_SEED, O_THREADS, O_PROFILE, O_SAVE, O_RESUME, O_JSON, O_STEPS,
       O_BASELINE, O_HELP, O_GRAD_DTYPE, O_SYNC_BN, O_NO_SYNC };

orb_status_t orb_train_opts_parse(int argc, char **argv, orb_train_opts_t *o, int *exit_now)
{
    static const struct option longopts[] = {
        {"model", required_argument, 0, O_MODEL},       {"data", required_argument, 0, O_DATA},
        {"epochs", required_argument, 0, O_EPOCHS},     {"batch-size", required_argument, 0, O_BATCH},
        {"lr", required_argument, 0, O_LR},             {"optimizer", required_argument, 0, O_OPT},
        {"momentum", required_argument, 0, O_MOM},      {"lr-step", required_argument, 0, O_LRSTEP},
        {"lr-gamma", required_argument, 0, O_LRGAMMA},  {"backend", required_argument, 0, O_BACKEND},
        {"bucket-mb", required_argument, 0, O_BUCKET},  {"no-overlap", no_argument, 0, O_NOOVERLAP},
        {"seed", required_argument, 0, O_SEED},         {"threads", required_argument, 0, O_THREADS},
        {"profile", required_argument, 0, O_PROFILE},   {"save", required_argument, 0, O_SAVE},
        {"resume", required_argument, 0, O_RESUME},     {"json", required_argument, 0, O_JSON},
        {"steps", required_argument, 0, O_STEPS},       {"baseline-ips", required_argument, 0, O_BASELINE},
        {"help", no_argument, 0, O_HELP},               {"grad-dtype", required_argument, 0, O_GRAD_DTYPE},
        {"sync-bn", no_argument, 0, O_SYNC_BN},         {"no-sync", no_argument, 0, O_NO_SYNC},
        {0, 0, 0, 0},
    };
    *o = (orb_train_opts_t){
        .model = "lenet", .data = ORB_TRAIN_DEFAULT_DATA, .epochs = 10, .batch_size = 64, .lr = -1.0f,
        .optimizer = "sgd", .momentum = 0.9f, .lr_step = 0, .lr_gamma = 0.1f, .backend = "custom",
        .bucket_mb = 25.0, .overlap = 1, .seed = 1, .threads = 1, .grad_dtype = ORB_FLOAT32,
    };
    *exit_now = 0;
    long l = 0;
    double d = 0;
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_MODEL: o->model = optarg; break;
        case O_DATA: o->data = optarg; break;
        case O_EPOCHS: ORB_TRAIN_CHECK(parse_long("--epochs", optarg, 0, 100000, &l)); o->epochs = (int)l; break;
        case O_BATCH: ORB_TRAIN_CHECK(parse_long("--batch-size", optarg, 1, 1 << 20, &l)); o->batch_size = (int)l; break;
        case O_LR: ORB_TRAIN_CHECK(parse_double("--lr", optarg, 0, 1e6, &d)); o->lr = (float)d; break;
        case O_OPT: o->optimizer = optarg; break;
        case O_MOM: ORB_TRAIN_CHECK(parse_double("--momentum", optarg, 0, 1, &d)); o->momentum = (float)d; break;
        case O_LRSTEP: ORB_TRAIN_CHECK(parse_long("--lr-step", optarg, 0, 100000, &l)); o->lr_step = (int)l; break;
        case O_LRGAMMA: ORB_TRAIN_CHECK(parse_double("--lr-gamma", optarg, 0, 1e6, &d)); o->lr_gamma = (float)d; break;
        case O_BACKEND: o->backend = optarg; break;
        case O_BUCKET: ORB_TRAIN_CHECK(parse_double("--bucket-mb", optarg, 1e-6, 1e6, &d)); o->bucket_mb = d; break;
        case O_NOOVERLAP: o->overlap = 0; break;
        case O_SEED: ORB_TRAIN_CHECK(parse_long("--seed", optarg, 0, 2147483647L, &l)); o->seed = (uint64_t)l; o->seed_set = 1; break;
        case O_THREADS: ORB_TRAIN_CHECK(parse_long("--threads", optarg, 1, 1024, &l)); o->threads = (int)l; break;
        case O_PROFILE: o->profile = optarg; break;
        case O_SAVE: o->save = optarg; break;
        case O_RESUME: o->resume = optarg; break;
        case O_JSON: o->json = optarg; break;
        case O_GRAD_DTYPE:
            if (strcmp(optarg, "fp32") == 0 || strcmp(optarg, "float32") == 0)
                o->grad_dtype = ORB_FLOAT32;
            else if (strcmp(optarg, "bf16") == 0 || strcmp(optarg, "bfloat16") == 0)
                o->grad_dtype = ORB_BFLOAT16;
            else if (strcmp(optarg, "fp16") == 0 || strcmp(optarg, "float16") == 0)
                o->grad_dtype = ORB_FLOAT16;
            else
                return orb_train_fail(ORB_ERR_INVALID_ARG, "--grad-dtype: '%s' (fp32, bf16 or fp16)", optarg);
            break;
        case O_SYNC_BN: o->sync_bn = 1; break;
        case O_NO_SYNC: o->no_sync = 1; break;
        case O_STEPS: ORB_TRAIN_CHECK(parse_long("--steps", optarg, 1, 1000000000L, &l)); o->steps = l; break;
        case O_BASELINE: ORB_TRAIN_CHECK(parse_double("--baseline-ips", optarg, 1e-9, 1e12, &d)); o->baseline_ips = d; break;
        case 'h':
        case O_HELP: *exit_now = 1; return ORB_OK;
        default:
            return orb_train_fail(ORB_ERR_INVALID_ARG, "unknown or incomplete option '%s' (see --help)",
                                  argv[optind - 1]);
        }
    }
    if (optind < argc)
        return orb_train_fail(ORB_ERR_INVALID_ARG, "unexpected argument '%s' (see --help)", argv[optind]);
    static const char *const known[] = {"lenet", "convnet", "resnet20", "resnet18", "resnet50"};
    int found = 0;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        found |= strcmp(o->model, known[i]) == 0;
    if (!found)
        return orb_train_fail(ORB_ERR_INVALID_ARG, "--model: '%s' (lenet, convnet, resnet20, resnet18, resnet50)",
                              o->model);
    /* here, not at load time: a bad spec stops before any rank joins the job */
    o->synthetic = orb_train_synth_named(o->data);
    if (o->synthetic)
        ORB_TRAIN_CHECK(orb_train_synth_parse(o->data, &o->synth));
    if (strcmp(o->optimizer, "sgd") != 0 && strcmp(o->optimizer, "adam") != 0)
        return orb_train_fail(ORB_ERR_INVALID_ARG, "--optimizer: '%s' (sgd, adam)", o->optimizer);
    if (o->lr < 0.0f)
        o->lr = strcmp(o->optimizer, "adam") == 0 ? 0.001f : 0.01f;
    return ORB_OK;
}
