/* The step vocabulary: what a plan asks an executor to do, defined once for the plan
 * builders and the plan checker (collectives/) and for both executors (collectives/exec_cpu.c
 * and the device executor, kernels/exec_cuda_device.cuh). Every one of them decides what a
 * step does from orb_step_props, so the checker proves plans against the executors' own
 * reading of the steps. Valid C11 and C++ (nvcc, and g++ under the CPU emulator).
 *
 * Step kinds ("in" = the piece that arrives from recv_peer on this channel; "src" = the
 * buffer chosen by src_buf at src_off; "dst" = output at dst_off; op = the reduction):
 *   SEND                  src            -> send_peer
 *   RECV                  in             -> dst
 *   RECV_REDUCE_SEND      op(src, in)    -> send_peer
 *   RECV_COPY_SEND        in             -> dst and -> send_peer
 *   RECV_REDUCE_COPY_SEND op(src, in)    -> dst and -> send_peer
 *   RECV_REDUCE_COPY      op(src, in)    -> dst
 *   COPY                  src            -> dst   (a no-op when src and dst are the same memory)
 * With ORB_STEP_POSTOP in flags, the op's final transform (avg: divide by nranks) is applied
 * to the value before it is written or sent, exactly once to every final value. With
 * ORB_STEP_DST_SCRATCH, "dst" is the plan's scratch at dst_off instead of the output. */
#ifndef ORB_KERNELS_STEP_H
#define ORB_KERNELS_STEP_H

#include <stddef.h>
#include <stdint.h>

#define ORB_MAX_CHANNELS 8

/* What a step kind does. */
#define ORB_STEP_RECVS 0x01u      /* takes a piece from recv_peer ("in") */
#define ORB_STEP_REDUCES 0x02u    /* the value is op(src, in) */
#define ORB_STEP_READS_SRC 0x04u  /* reads src */
#define ORB_STEP_WRITES_DST 0x08u /* writes dst */
#define ORB_STEP_SENDS 0x10u      /* puts the value in a piece for send_peer */

/* X(ID, name, properties): every step kind, once, in the order of its value. */
#define ORB_STEP_MAP(X)                                                                                       \
    X(SEND, "send", ORB_STEP_READS_SRC | ORB_STEP_SENDS)                                                      \
    X(RECV, "recv", ORB_STEP_RECVS | ORB_STEP_WRITES_DST)                                                     \
    X(RECV_REDUCE_SEND, "recv-reduce-send", ORB_STEP_RECVS | ORB_STEP_REDUCES | ORB_STEP_READS_SRC | ORB_STEP_SENDS) \
    X(RECV_COPY_SEND, "recv-copy-send", ORB_STEP_RECVS | ORB_STEP_WRITES_DST | ORB_STEP_SENDS)                \
    X(RECV_REDUCE_COPY_SEND, "recv-reduce-copy-send",                                                          \
      ORB_STEP_RECVS | ORB_STEP_REDUCES | ORB_STEP_READS_SRC | ORB_STEP_WRITES_DST | ORB_STEP_SENDS)          \
    X(RECV_REDUCE_COPY, "recv-reduce-copy", ORB_STEP_RECVS | ORB_STEP_REDUCES | ORB_STEP_READS_SRC | ORB_STEP_WRITES_DST) \
    X(COPY, "copy", ORB_STEP_READS_SRC | ORB_STEP_WRITES_DST)

typedef enum {
#define ORB_STEP_ENUM_(id, name, props) ORB_STEP_##id,
    ORB_STEP_MAP(ORB_STEP_ENUM_)
#undef ORB_STEP_ENUM_
        ORB_NUM_STEP_KINDS
} orb_step_kind_t;

#ifdef __CUDACC__
#define ORB_STEP_HD __host__ __device__
#else
#define ORB_STEP_HD
#endif

/* The properties of kind; 0 for a kind that does not exist. */
static inline ORB_STEP_HD unsigned orb_step_props(int kind)
{
#define ORB_STEP_PROPS_(id, name, props) kind == ORB_STEP_##id ? (unsigned)(props):
    return ORB_STEP_MAP(ORB_STEP_PROPS_) 0u;
#undef ORB_STEP_PROPS_
}

/* The buffers a step reads from (src_buf) and, with ORB_STEP_DST_SCRATCH, writes to: the
 * user's input and output, and the plan's own workspace (orb_plan_t.scratch_count elements,
 * supplied by the executor) where an algorithm packs or parks data. */
typedef enum { ORB_BUF_INPUT = 0, ORB_BUF_OUTPUT = 1, ORB_BUF_SCRATCH = 2 } orb_buf_t;

#define ORB_STEP_POSTOP 0x1u
#define ORB_STEP_DST_SCRATCH 0x2u /* dst_off indexes the scratch, not the output */

typedef struct {
    uint8_t kind;    /* orb_step_kind_t */
    uint8_t src_buf; /* orb_buf_t: which buffer src_off indexes */
    uint8_t flags;   /* ORB_STEP_POSTOP, ORB_STEP_DST_SCRATCH */
    uint8_t pad_;
    int32_t send_peer; /* rank, or -1 when the step does not send */
    int32_t recv_peer; /* rank, or -1 when the step does not receive */
    uint32_t pad2_;
    size_t src_off; /* elements */
    size_t dst_off; /* elements */
    size_t count;   /* elements */
} orb_step_t;

/* "recv-reduce-send", ...; "unknown-step" for a kind that does not exist. */
const char *orb_step_kind_name(orb_step_kind_t kind);

#endif
