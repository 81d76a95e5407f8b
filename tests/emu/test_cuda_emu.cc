/* The CPU emulator itself (tools/cuda_emu): the runtime calls' semantics (errors, devices,
 * memory registry, copies, streams and the legacy NULL stream, events, graphs, IPC across
 * processes, launch checks) and the grid runner (barriers, shared memory, co-resident blocks
 * that wait for each other). The GPU tests trust both; this says what they stand on. */
#include "emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>


static int failures = 0, checks = 0;
#define CHECK(c)                                                                                   \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(c)) {                                                                                \
            failures++;                                                                            \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c);                          \
        }                                                                                          \
    } while (0)
#define EQ(a, b) CHECK((a) == (b))

static void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

static void host_sleep_set(void *p)
{
    sleep_ms(150);
    ((std::atomic<int> *)p)->store(1);
}

struct Probe {
    std::atomic<int> *flag;
    std::atomic<int> seen;
};
static void host_probe(void *p)
{
    Probe *pr = (Probe *)p;
    pr->seen = pr->flag->load();
}

static void test_errors()
{
    EQ(std::string(cudaGetErrorString(cudaSuccess)), "no error");
    EQ(std::string(cudaGetErrorString(cudaErrorInvalidValue)), "invalid argument");
    EQ(std::string(cudaGetErrorString((cudaError_t)12345)), "unknown error");
    EQ(std::string(cudaGetErrorName(cudaErrorInvalidValue)), "cudaErrorInvalidValue");
    EQ(std::string(cudaGetErrorName(cudaErrorStreamCaptureUnsupported)), "cudaErrorStreamCaptureUnsupported");
    EQ(std::string(cudaGetErrorName(cudaSuccess)), "cudaSuccess");
    // last error
    EQ(cudaGetLastError(), cudaSuccess);
    EQ(cudaSetDevice(99), cudaErrorInvalidDevice);
    EQ(cudaPeekAtLastError(), cudaErrorInvalidDevice);
    EQ(cudaPeekAtLastError(), cudaErrorInvalidDevice);
    EQ(cudaGetLastError(), cudaErrorInvalidDevice);
    EQ(cudaGetLastError(), cudaSuccess);
    // thread-local
    EQ(cudaSetDevice(-1), cudaErrorInvalidDevice);
    std::thread([] { EQ(cudaGetLastError(), cudaSuccess); }).join();
    EQ(cudaGetLastError(), cudaErrorInvalidDevice);
}

static void test_devices()
{
    int n = -1, d = -1, v = -1;
    EQ(cudaGetDeviceCount(&n), cudaSuccess);
    EQ(n, 2);
    EQ(cudaGetDevice(&d), cudaSuccess);
    EQ(d, 0);
    EQ(cudaSetDevice(1), cudaSuccess);
    EQ(cudaGetDevice(&d), cudaSuccess);
    EQ(d, 1);
    std::thread([] { int x = -1; cudaGetDevice(&x); EQ(x, 0); }).join();
    EQ(cudaSetDevice(2), cudaErrorInvalidDevice);
    EQ(cudaSetDevice(0), cudaSuccess);
    cudaGetLastError();
    cudaDeviceProp p;
    EQ(cudaGetDeviceProperties(&p, 1), cudaSuccess);
    EQ(std::string(p.name), "orbit CUDA emulator (CPU)");
    EQ(p.multiProcessorCount, 7);
    EQ(p.major, 9);
    EQ(p.pciBusID, 2);
    EQ(p.maxGridSize[0], 2147483647);
    EQ(p.maxThreadsDim[2], 64);
    EQ(p.sharedMemPerBlockOptin, (size_t)227 * 1024);
    EQ(p.totalGlobalMem, (size_t)16 << 30);
    cudaDeviceProp p0;
    cudaGetDeviceProperties(&p0, 0);
    CHECK(memcmp(p0.uuid.bytes, p.uuid.bytes, 16) != 0);
    EQ(cudaGetDeviceProperties(&p, 2), cudaErrorInvalidDevice);
    EQ(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
    EQ(v, 7);
    EQ(cudaDeviceGetAttribute(&v, cudaDevAttrPciBusId, 1), cudaSuccess);
    EQ(v, 2);
    EQ(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlock, 0), cudaSuccess);
    EQ(v, 48 * 1024);
    EQ(cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, 0), cudaErrorInvalidValue);
    char bus[32];
    EQ(cudaDeviceGetPCIBusId(bus, sizeof bus, 1), cudaSuccess);
    EQ(std::string(bus), "0000:02:00.0");
    EQ(cudaDeviceGetPCIBusId(bus, 5, 1), cudaSuccess);
    EQ(std::string(bus), "0000");
    EQ(cudaDeviceGetByPCIBusId(&d, "0000:02:00.0"), cudaSuccess);
    EQ(d, 1);
    EQ(cudaDeviceGetByPCIBusId(&d, "01:00.0"), cudaSuccess);
    EQ(d, 0);
    EQ(cudaDeviceGetByPCIBusId(&d, "0000:0A:00.0"), cudaErrorInvalidDevice);
    EQ(cudaDeviceGetByPCIBusId(&d, "0000:02:00"), cudaErrorInvalidDevice);
    EQ(cudaDeviceGetByPCIBusId(&d, "zz"), cudaErrorInvalidDevice);
    EQ(cudaDeviceCanAccessPeer(&v, 0, 1), cudaSuccess);
    EQ(v, 1);
    EQ(cudaDeviceCanAccessPeer(&v, 0, 0), cudaSuccess);
    EQ(v, 0);
    EQ(cudaDeviceCanAccessPeer(&v, 0, 5), cudaErrorInvalidDevice);
    EQ(cudaDeviceEnablePeerAccess(0, 0), cudaErrorInvalidDevice);
    EQ(cudaDeviceEnablePeerAccess(1, 1), cudaErrorInvalidValue);
    EQ(cudaDeviceEnablePeerAccess(1, 0), cudaSuccess);
    EQ(cudaDeviceEnablePeerAccess(1, 0), cudaErrorPeerAccessAlreadyEnabled);
    cudaSetDevice(1);
    EQ(cudaDeviceEnablePeerAccess(0, 0), cudaSuccess);
    cudaSetDevice(0);
    EQ(cudaDriverGetVersion(&v), cudaSuccess);
    EQ(v, CUDART_VERSION);
    EQ(cudaRuntimeGetVersion(&v), cudaSuccess);
    cudaGetLastError();
}

static void test_memory()
{
    void *d = nullptr, *z = (void *)1;
    EQ(cudaMalloc(&z, 0), cudaSuccess);
    EQ(z, nullptr);
    EQ(cudaMalloc(&d, 1000), cudaSuccess);
    CHECK(d != nullptr);
    memset(d, 7, 1000);
    cudaPointerAttributes a;
    EQ(cudaPointerGetAttributes(&a, (char *)d + 999), cudaSuccess);
    EQ(a.type, cudaMemoryTypeDevice);
    EQ(a.device, 0);
    EQ(a.devicePointer, (char *)d + 999);
    EQ(a.hostPointer, nullptr);
    EQ(cudaPointerGetAttributes(&a, (char *)d + 1000), cudaSuccess); // past the end
    EQ(a.type, cudaMemoryTypeUnregistered);
    int local;
    EQ(cudaPointerGetAttributes(&a, &local), cudaSuccess);
    EQ(a.type, cudaMemoryTypeUnregistered);
    EQ(a.device, -2);
    EQ(a.hostPointer, &local);
    EQ(cudaPointerGetAttributes(&a, nullptr), cudaSuccess);
    EQ(a.type, cudaMemoryTypeUnregistered);
    EQ(cudaFree((char *)d + 8), cudaErrorInvalidValue);
    EQ(cudaGetLastError(), cudaErrorInvalidValue);
    EQ(cudaFree(nullptr), cudaSuccess);
    EQ(cudaFree(d), cudaSuccess);
    EQ(cudaFree(d), cudaErrorInvalidValue);
    EQ(cudaPointerGetAttributes(&a, d), cudaSuccess);
    EQ(a.type, cudaMemoryTypeUnregistered);
    // device of an allocation
    cudaSetDevice(1);
    EQ(cudaMalloc(&d, 64), cudaSuccess);
    cudaSetDevice(0);
    cudaPointerGetAttributes(&a, d);
    EQ(a.device, 1);
    cudaFree(d);
    // managed
    EQ(cudaMallocManaged(&d, 100, cudaMemAttachGlobal), cudaSuccess);
    cudaPointerGetAttributes(&a, d);
    EQ(a.type, cudaMemoryTypeManaged);
    EQ(a.hostPointer, d);
    EQ(a.devicePointer, d);
    EQ(cudaFree(d), cudaSuccess);
    // pinned host
    void *h = nullptr;
    EQ(cudaMallocHost(&h, 4096), cudaSuccess);
    cudaPointerGetAttributes(&a, (char *)h + 10);
    EQ(a.type, cudaMemoryTypeHost);
    EQ(a.hostPointer, (char *)h + 10);
    EQ(cudaFree(h), cudaErrorInvalidValue);
    void *hd = nullptr;
    EQ(cudaHostGetDevicePointer(&hd, (char *)h + 5, 0), cudaSuccess);
    EQ(hd, (char *)h + 5);
    EQ(cudaFreeHost(h), cudaSuccess);
    EQ(cudaFreeHost(h), cudaErrorInvalidValue);
    EQ(cudaHostAlloc(&h, 100, cudaHostAllocMapped), cudaSuccess);
    EQ(cudaFreeHost(h), cudaSuccess);
    EQ(cudaMalloc(&d, 10), cudaSuccess);
    EQ(cudaFreeHost(d), cudaErrorInvalidValue);
    EQ(cudaHostGetDevicePointer(&hd, d, 0), cudaErrorInvalidValue);
    cudaFree(d);
    // registration
    std::vector<char> buf(8192);
    EQ(cudaHostRegister(buf.data(), 4096, cudaHostRegisterMapped), cudaSuccess);
    cudaSetDevice(1);
    EQ(cudaHostRegister(buf.data() + 100, 10, 0), cudaErrorHostMemoryAlreadyRegistered);
    EQ(cudaHostRegister(buf.data() + 4095, 10, 0), cudaErrorHostMemoryAlreadyRegistered);
    EQ(cudaHostRegister(nullptr, 10, 0), cudaErrorInvalidValue);
    EQ(cudaHostRegister(buf.data() + 4096, 0, 0), cudaErrorInvalidValue);
    EQ(cudaHostRegister(buf.data() + 4096, 100, 0), cudaSuccess); // adjacent is fine
    cudaSetDevice(0);
    cudaPointerGetAttributes(&a, buf.data() + 4096 + 50);
    EQ(a.type, cudaMemoryTypeHost);
    EQ(a.device, 1);
    EQ(cudaHostGetDevicePointer(&hd, buf.data() + 10, 0), cudaSuccess);
    EQ(hd, buf.data() + 10);
    EQ(cudaHostGetDevicePointer(&hd, buf.data() + 5000, 0), cudaErrorInvalidValue);
    EQ(cudaHostUnregister(buf.data() + 1), cudaErrorHostMemoryNotRegistered);
    EQ(cudaHostUnregister(buf.data()), cudaSuccess);
    EQ(cudaHostUnregister(buf.data()), cudaErrorHostMemoryNotRegistered);
    EQ(cudaHostUnregister(buf.data() + 4096), cudaSuccess);
    cudaGetLastError();
}

static void test_copies()
{
    char *d = nullptr;
    std::vector<char> h(256, 'x'), back(256, 0);
    EQ(cudaMalloc((void **)&d, 256), cudaSuccess);
    EQ(cudaMemcpy(d, h.data(), 256, cudaMemcpyHostToDevice), cudaSuccess);
    EQ(cudaMemcpy(back.data(), d, 256, cudaMemcpyDeviceToHost), cudaSuccess);
    CHECK(back == h);
    EQ(cudaMemcpy(h.data(), d, 256, cudaMemcpyHostToDevice), cudaErrorInvalidValue); // dst not device
    EQ(cudaMemcpy(d, h.data(), 257, cudaMemcpyHostToDevice), cudaErrorInvalidValue); // overflow
    EQ(cudaMemcpy(back.data(), h.data(), 256, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
    EQ(cudaMemcpy(d, d + 128, 128, cudaMemcpyDeviceToDevice), cudaSuccess);
    EQ(cudaMemcpy(d, h.data(), 16, (cudaMemcpyKind)9), cudaErrorInvalidMemcpyDirection);
    EQ(cudaMemcpy(back.data(), h.data(), 16, cudaMemcpyHostToHost), cudaSuccess);
    EQ(cudaMemcpy(back.data(), h.data(), 16, cudaMemcpyDefault), cudaSuccess);
    EQ(cudaMemset(d, 3, 256), cudaSuccess);
    EQ(cudaMemset(d, 3, 257), cudaErrorInvalidValue);
    EQ(cudaMemset(h.data(), 3, 10), cudaErrorInvalidValue);
    EQ(cudaMemset(d, 3, 0), cudaSuccess);
    cudaMemcpy(back.data(), d, 256, cudaMemcpyDefault);
    CHECK(back[0] == 3 && back[255] == 3);
    cudaStream_t s;
    EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    EQ(cudaMemsetAsync(d, 9, 256, s), cudaSuccess);
    EQ(cudaMemsetAsync(d, 9, 300, s), cudaErrorInvalidValue);
    EQ(cudaMemcpyAsync(back.data(), d, 256, cudaMemcpyDeviceToHost, s), cudaSuccess);
    EQ(cudaMemcpyAsync(back.data(), h.data(), 256, cudaMemcpyDeviceToHost, s), cudaErrorInvalidValue);
    EQ(cudaStreamSynchronize(s), cudaSuccess);
    CHECK(back[0] == 9 && back[255] == 9);
    EQ(cudaStreamDestroy(s), cudaSuccess);
    EQ(cudaMemcpyAsync(back.data(), d, 256, cudaMemcpyDeviceToHost, s), cudaErrorInvalidResourceHandle);
    EQ(cudaStreamDestroy(s), cudaErrorInvalidResourceHandle);
    EQ(cudaStreamSynchronize((cudaStream_t)(uintptr_t)0x1234), cudaErrorInvalidResourceHandle);
    // cudaFree waits for queued work that uses the memory
    EQ(cudaStreamCreate(&s), cudaSuccess);
    std::atomic<int> flag{0};
    cudaLaunchHostFunc(s, host_sleep_set, &flag);
    EQ(cudaMemsetAsync(d, 1, 256, s), cudaSuccess);
    EQ(cudaFree(d), cudaSuccess);
    EQ(flag.load(), 1);
    EQ(cudaStreamQuery(s), cudaSuccess);
    cudaStreamDestroy(s);
    cudaGetLastError();
}

static void test_streams()
{
    cudaStream_t a, b;
    EQ(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
    EQ(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
    EQ(cudaStreamCreateWithFlags(&b, 7), cudaErrorInvalidValue);
    cudaGetLastError();
    cudaEvent_t e;
    EQ(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), cudaSuccess);
    EQ(cudaEventQuery(e), cudaSuccess); // never recorded
    EQ(cudaEventSynchronize(e), cudaSuccess);
    std::atomic<int> flag{0};
    Probe pr{&flag, {-1}};
    // a wait on an event never recorded does not wait
    EQ(cudaStreamWaitEvent(b, e, 0), cudaSuccess);
    cudaLaunchHostFunc(a, host_sleep_set, &flag);
    EQ(cudaStreamQuery(a), cudaErrorNotReady);
    EQ(cudaGetLastError(), cudaSuccess); // not-ready is not an error
    EQ(cudaEventRecord(e, a), cudaSuccess);
    EQ(cudaEventQuery(e), cudaErrorNotReady);
    EQ(cudaStreamWaitEvent(b, e, 0), cudaSuccess);
    cudaLaunchHostFunc(b, host_probe, &pr);
    EQ(cudaStreamSynchronize(b), cudaSuccess);
    EQ(pr.seen.load(), 1);
    EQ(cudaEventQuery(e), cudaSuccess);
    // re-recording does not affect earlier waits: record later on a, wait on b, event sync
    flag = 0;
    cudaLaunchHostFunc(a, host_sleep_set, &flag);
    cudaEventRecord(e, a);
    EQ(cudaEventSynchronize(e), cudaSuccess);
    EQ(flag.load(), 1);
    // timing
    cudaEvent_t t0, t1;
    cudaEventCreate(&t0);
    cudaEventCreate(&t1);
    float ms = 0;
    EQ(cudaEventElapsedTime(&ms, t0, t1), cudaErrorInvalidResourceHandle); // not recorded
    cudaEventRecord(t0, a);
    flag = 0;
    cudaLaunchHostFunc(a, host_sleep_set, &flag);
    cudaEventRecord(t1, a);
    EQ(cudaEventElapsedTime(&ms, t0, t1), cudaErrorNotReady);
    cudaEventSynchronize(t1);
    EQ(cudaEventElapsedTime(&ms, t0, t1), cudaSuccess);
    CHECK(ms >= 140 && ms < 2000);
    EQ(cudaEventElapsedTime(&ms, e, t1), cudaErrorInvalidResourceHandle); // DisableTiming
    EQ(cudaEventDestroy(t0), cudaSuccess);
    EQ(cudaEventDestroy(t0), cudaErrorInvalidResourceHandle);
    EQ(cudaEventRecord(t0, a), cudaErrorInvalidResourceHandle);
    EQ(cudaStreamWaitEvent(a, t0, 0), cudaErrorInvalidResourceHandle);
    EQ(cudaEventQuery(t0), cudaErrorInvalidResourceHandle);
    cudaEventDestroy(t1);
    // an event destroyed while its record is queued
    cudaLaunchHostFunc(a, host_sleep_set, &flag);
    cudaEventRecord(e, a);
    EQ(cudaEventDestroy(e), cudaSuccess);
    EQ(cudaStreamSynchronize(a), cudaSuccess);
    // stream device and flags
    unsigned fl = 9;
    int dev = -1;
    EQ(cudaStreamGetFlags(a, &fl), cudaSuccess);
    EQ(fl, (unsigned)cudaStreamNonBlocking);
    cudaSetDevice(1);
    cudaStream_t c;
    cudaStreamCreate(&c);
    cudaSetDevice(0);
    EQ(cudaStreamGetDevice(c, &dev), cudaSuccess);
    EQ(dev, 1);
    // work on a stream sees the stream's device
    struct DevProbe { static void fn(void *p) { cudaGetDevice((int *)p); } };
    int seen_dev = -1;
    cudaLaunchHostFunc(c, DevProbe::fn, &seen_dev);
    cudaStreamSynchronize(c);
    EQ(seen_dev, 1);
    cudaStreamDestroy(c);
    cudaStreamDestroy(a);
    cudaStreamDestroy(b);
    cudaGetLastError();
}

static void test_legacy()
{
    cudaStream_t blk, nb;
    cudaStreamCreate(&blk);
    cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking);
    // NULL stream waits for a blocking stream's earlier work
    std::atomic<int> f1{0};
    Probe p1{&f1, {-1}};
    cudaLaunchHostFunc(blk, host_sleep_set, &f1);
    cudaLaunchHostFunc(0, host_probe, &p1);
    EQ(cudaStreamSynchronize(0), cudaSuccess);
    EQ(p1.seen.load(), 1);
    // ... but not for a non-blocking stream's
    std::atomic<int> f2{0};
    Probe p2{&f2, {-1}};
    cudaLaunchHostFunc(nb, host_sleep_set, &f2);
    cudaLaunchHostFunc(cudaStreamLegacy, host_probe, &p2);
    cudaStreamSynchronize(cudaStreamLegacy);
    EQ(p2.seen.load(), 0);
    cudaStreamSynchronize(nb);
    // a blocking stream waits for the NULL stream's earlier work
    std::atomic<int> f3{0};
    Probe p3{&f3, {-1}};
    cudaLaunchHostFunc(0, host_sleep_set, &f3);
    cudaLaunchHostFunc(blk, host_probe, &p3);
    cudaStreamSynchronize(blk);
    EQ(p3.seen.load(), 1);
    // a synchronous copy waits for a blocking stream's earlier work
    char *d;
    cudaMalloc((void **)&d, 64);
    cudaMemset(d, 0, 64);
    std::atomic<int> f4{0};
    cudaLaunchHostFunc(blk, host_sleep_set, &f4);
    cudaMemsetAsync(d, 5, 64, blk);
    char h[64] = {0};
    EQ(cudaMemcpy(h, d, 64, cudaMemcpyDeviceToHost), cudaSuccess);
    EQ(h[63], 5);
    // device synchronize covers non-blocking streams too
    std::atomic<int> f5{0};
    cudaLaunchHostFunc(nb, host_sleep_set, &f5);
    EQ(cudaDeviceSynchronize(), cudaSuccess);
    EQ(f5.load(), 1);
    cudaFree(d);
    cudaStreamDestroy(blk);
    cudaStreamDestroy(nb);
}

static std::atomic<int> kernel_runs{0};

static void test_launch()
{
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    auto body = [] { kernel_runs++; };
    cudaGetLastError();
    EQ(orb_emu_launch(dim3(0), dim3(32), 0, s, body), cudaErrorInvalidConfiguration);
    EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
    EQ(orb_emu_launch(dim3(1), dim3(1025), 0, s, body), cudaErrorInvalidConfiguration);
    EQ(orb_emu_launch(dim3(1), dim3(32, 32, 2), 0, s, body), cudaErrorInvalidConfiguration);
    EQ(orb_emu_launch(dim3(1), dim3(1, 1, 65), 0, s, body), cudaErrorInvalidConfiguration);
    EQ(orb_emu_launch(dim3(1, 65536), dim3(1), 0, s, body), cudaErrorInvalidConfiguration);
    EQ(orb_emu_launch(dim3(1), dim3(32), 227 * 1024 + 1, s, body), cudaErrorInvalidConfiguration);
    EQ(orb_emu_launch(dim3(1), dim3(32), 0, (cudaStream_t)(uintptr_t)0x999, body), cudaErrorInvalidResourceHandle);
    EQ(cudaPeekAtLastError(), cudaErrorInvalidResourceHandle);
    cudaGetLastError();
    EQ(orb_emu_launch(dim3(2, 2), dim3(4, 2), 227 * 1024, s, body), cudaSuccess);
    EQ(orb_emu_launch(dim3(1), dim3(1), 0, 0, body), cudaSuccess);
    cudaStreamSynchronize(s);
    cudaDeviceSynchronize();
    EQ(kernel_runs.load(), 33);
    // a kernel on a stream of device 1 sees device 1
    cudaSetDevice(1);
    cudaStream_t s1;
    cudaStreamCreate(&s1);
    cudaSetDevice(0);
    int kdev = -1;
    orb_emu_launch(dim3(1), dim3(1), 0, s1, [&kdev] { cudaGetDevice(&kdev); });
    cudaStreamSynchronize(s1);
    EQ(kdev, 1);
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s);
}

static void test_graphs()
{
    cudaStream_t s, s2;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    int *d;
    cudaMalloc((void **)&d, 4 * sizeof(int));
    cudaMemset(d, 0, 4 * sizeof(int));
    int h[4] = {0, 0, 0, 0};
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusActive;
    EQ(cudaStreamIsCapturing(s, &cs), cudaSuccess);
    EQ(cs, cudaStreamCaptureStatusNone);
    EQ(cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal), cudaErrorStreamCaptureUnsupported);
    EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaErrorIllegalState);
    EQ(cudaStreamIsCapturing(s, &cs), cudaSuccess);
    EQ(cs, cudaStreamCaptureStatusActive);
    unsigned long long id = 0;
    EQ(cudaStreamGetCaptureInfo(s, &cs, &id), cudaSuccess);
    CHECK(id != 0);
    cudaEvent_t e;
    cudaEventCreate(&e);
    int runs = 0;
    EQ(cudaMemsetAsync(d, 0, 4 * sizeof(int), s), cudaSuccess);
    EQ(orb_emu_launch(dim3(1), dim3(3), 0, s, [d, &runs] { d[0]++; runs++; }), cudaSuccess);
    EQ(cudaEventRecord(e, s), cudaSuccess);
    EQ(cudaStreamWaitEvent(s, e, 0), cudaSuccess);
    EQ(cudaMemcpyAsync(d + 1, d, sizeof(int), cudaMemcpyDeviceToDevice, s), cudaSuccess);
    EQ(cudaMemcpyAsync(h, d, 4 * sizeof(int), cudaMemcpyDeviceToHost, s), cudaSuccess);
    EQ(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
    cudaGetLastError();
    sleep_ms(20);
    EQ(runs, 0); // nothing ran while capturing
    cudaGraph_t g;
    cudaGraphExec_t ge;
    EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
    EQ(cudaStreamEndCapture(s, &g), cudaErrorIllegalState);
    cudaGetLastError();
    EQ(cudaEventQuery(e), cudaSuccess); // capture does not record
    EQ(cudaGraphInstantiate(&ge, g, 0), cudaSuccess);
    for (int round = 0; round < 2; round++) {
        h[0] = h[1] = -1;
        EQ(cudaGraphLaunch(ge, s), cudaSuccess);
        EQ(cudaStreamSynchronize(s), cudaSuccess);
        EQ(h[0], 3);
        EQ(h[1], 3);
        EQ(runs, 3 * (round + 1));
    }
    // record node records the event at replay: another stream waits for it
    std::atomic<int> flag{0};
    Probe pr{&flag, {-1}};
    cudaLaunchHostFunc(s, host_sleep_set, &flag);
    cudaGraphLaunch(ge, s);
    cudaStreamWaitEvent(s2, e, 0);
    cudaLaunchHostFunc(s2, host_probe, &pr);
    cudaStreamSynchronize(s2);
    EQ(pr.seen.load(), 1);
    cudaStreamSynchronize(s);
    // a graph launched into a capture becomes part of it
    cudaGraph_t g2;
    cudaGraphExec_t ge2;
    EQ(cudaStreamBeginCapture(s2, cudaStreamCaptureModeRelaxed), cudaSuccess);
    EQ(cudaGraphLaunch(ge, s2), cudaSuccess);
    EQ(cudaGraphLaunch(ge, s2), cudaSuccess);
    EQ(cudaStreamEndCapture(s2, &g2), cudaSuccess);
    EQ(cudaGraphInstantiate(&ge2, g2, 0), cudaSuccess);
    int before = runs;
    cudaGraphLaunch(ge2, s);
    cudaStreamSynchronize(s);
    EQ(runs, before + 6);
    EQ(cudaGraphExecDestroy(ge2), cudaSuccess);
    EQ(cudaGraphDestroy(g2), cudaSuccess);
    EQ(cudaGraphExecDestroy(ge), cudaSuccess);
    EQ(cudaGraphDestroy(g), cudaSuccess);
    EQ(cudaGraphDestroy(g), cudaErrorInvalidValue);
    EQ(cudaGraphLaunch(ge, s), cudaErrorInvalidValue);
    cudaGetLastError();
    cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;
    EQ(cudaThreadExchangeStreamCaptureMode(&m), cudaSuccess);
    EQ(m, cudaStreamCaptureModeGlobal);
    EQ(cudaThreadExchangeStreamCaptureMode(&m), cudaSuccess);
    EQ(m, cudaStreamCaptureModeRelaxed);
    cudaEventDestroy(e);
    cudaFree(d);
    cudaStreamDestroy(s);
    cudaStreamDestroy(s2);
}

static std::string to_hex(const cudaIpcMemHandle_t &h)
{
    std::string s;
    char b[3];
    for (size_t i = 0; i < sizeof h.reserved; i++) {
        snprintf(b, sizeof b, "%02x", (unsigned char)h.reserved[i]);
        s += b;
    }
    return s;
}

static cudaIpcMemHandle_t from_hex(const char *s)
{
    cudaIpcMemHandle_t h;
    for (size_t i = 0; i < sizeof h.reserved; i++) {
        unsigned v;
        sscanf(s + 2 * i, "%2x", &v);
        h.reserved[i] = (char)v;
    }
    return h;
}

// The exec'd peer: opens the handle, checks and rewrites the data, as a fresh process.
static int ipc_child_main(const char *hex)
{
    cudaIpcMemHandle_t h = from_hex(hex);
    void *p = nullptr;
    if (cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess) != cudaSuccess)
        return 2;
    void *p2 = nullptr;
    if (cudaIpcOpenMemHandle(&p2, h, 0) != cudaSuccess || p2 != p) // shared, counted
        return 3;
    cudaPointerAttributes a;
    cudaPointerGetAttributes(&a, p);
    if (a.type != cudaMemoryTypeDevice)
        return 4;
    std::vector<int> v(1024);
    if (cudaMemcpy(v.data(), p, 4096, cudaMemcpyDeviceToHost) != cudaSuccess)
        return 5;
    for (int i = 0; i < 1024; i++)
        if (v[i] != i)
            return 6;
    cudaMemset(p, 0x11, 4096);
    if (cudaIpcCloseMemHandle(p) != cudaSuccess || cudaIpcCloseMemHandle(p) != cudaSuccess)
        return 7;
    if (cudaIpcCloseMemHandle(p) != cudaErrorInvalidValue)
        return 8;
    return 0;
}

static void test_ipc(const char *self)
{
    int *d;
    EQ(cudaMalloc((void **)&d, 4096), cudaSuccess);
    for (int i = 0; i < 1024; i++)
        d[i] = i;
    cudaIpcMemHandle_t h;
    EQ(cudaIpcGetMemHandle(&h, d + 1), cudaErrorInvalidValue);
    int local;
    EQ(cudaIpcGetMemHandle(&h, &local), cudaErrorInvalidValue);
    EQ(cudaIpcGetMemHandle(&h, d), cudaSuccess);
    void *p;
    EQ(cudaIpcOpenMemHandle(&p, h, 0), cudaErrorInvalidValue); // own process
    cudaIpcMemHandle_t bad;
    memset(&bad, 0, sizeof bad);
    EQ(cudaIpcOpenMemHandle(&p, bad, 0), cudaErrorInvalidValue);
    EQ(cudaIpcCloseMemHandle(d), cudaErrorInvalidValue);
    cudaGetLastError();
    // forked child: uses the handle (its own process id differs)
    pid_t pid = fork();
    if (pid == 0) {
        void *q = nullptr;
        if (cudaIpcOpenMemHandle(&q, h, 0) != cudaSuccess)
            _exit(2);
        int *qi = (int *)q;
        if (qi[1023] != 1023)
            _exit(3);
        qi[0] = -42;
        _exit(cudaIpcCloseMemHandle(q) == cudaSuccess ? 0 : 4);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
    EQ(d[0], -42);
    d[0] = 0;
    // exec'd process
    std::string hex = to_hex(h);
    pid = fork();
    if (pid == 0) {
        execl(self, self, "--ipc-child", hex.c_str(), (char *)nullptr);
        _exit(99);
    }
    waitpid(pid, &status, 0);
    EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
    EQ(d[0], 0x11111111);
    EQ(d[1023], 0x11111111);
    EQ(cudaFree(d), cudaSuccess);
}

// Many threads, many streams: for -fsanitize=thread.
static void test_stress()
{
    const int T = 6;
    std::vector<std::thread> th;
    std::atomic<int> bad{0};
    cudaEvent_t shared_ev;
    cudaEventCreate(&shared_ev);
    for (int t = 0; t < T; t++)
        th.emplace_back([t, &bad, shared_ev] {
            cudaSetDevice(t % 2);
            cudaStream_t s;
            cudaStreamCreateWithFlags(&s, t % 3 ? cudaStreamNonBlocking : cudaStreamDefault);
            int *d;
            cudaMalloc((void **)&d, 64 * sizeof(int));
            std::vector<int> h(64), back(64);
            for (int it = 0; it < 100; it++) {
                for (int i = 0; i < 64; i++)
                    h[i] = t * 1000 + it + i;
                cudaMemcpyAsync(d, h.data(), sizeof(int) * 64, cudaMemcpyHostToDevice, s);
                orb_emu_launch(dim3(1), dim3(1), 0, s, [d] { for (int i = 0; i < 64; i++) d[i] += 1; });
                cudaEventRecord(shared_ev, s);
                cudaStreamWaitEvent(s, shared_ev, 0);
                cudaMemcpyAsync(back.data(), d, sizeof(int) * 64, cudaMemcpyDeviceToHost, s);
                cudaStreamSynchronize(s);
                for (int i = 0; i < 64; i++)
                    if (back[i] != h[i] + 1)
                        bad++;
                if (it % 10 == 0)
                    cudaMemset(d, 0, 4); // sync, legacy ordering
                if (it % 25 == 0)
                    cudaDeviceSynchronize();
            }
            cudaFree(d);
            cudaStreamDestroy(s);
        });
    for (auto &x : th)
        x.join();
    EQ(bad.load(), 0);
    cudaEventDestroy(shared_ev);
}

/* ---- the grid runner -------------------------------------------------------------------- */

/* A block-wide tree reduction through static and dynamic shared memory: wrong barriers or
 * shared storage give a wrong sum. */
static void k_block_sum(const int *in, long long *out, int n)
{
    __shared__ long long part[512];
    long long *dyn = (long long *)orb_emu::dynamic_smem();
    const int t = (int)threadIdx.x;
    long long s = 0;
    for (int i = (int)(blockIdx.x * blockDim.x) + t; i < n; i += (int)(gridDim.x * blockDim.x))
        s += in[i];
    part[t] = s;
    dyn[t] = -s;
    __syncthreads();
    for (int w = (int)blockDim.x / 2; w > 0; w /= 2) {
        if (t < w) {
            part[t] += part[t + w];
            dyn[t] += dyn[t + w];
        }
        __syncthreads();
    }
    if (t == 0) {
        atomicAdd((unsigned long long *)&out[0], (unsigned long long)part[0]);
        atomicAdd((unsigned long long *)&out[1], (unsigned long long)dyn[0]);
    }
}

/* Block b waits for block b-1: only co-resident blocks finish. */
static void k_chain(int *flags)
{
    const unsigned b = blockIdx.x;
    if (threadIdx.x == 0) {
        if (b > 0)
            while (__atomic_load_n(&flags[b - 1], __ATOMIC_ACQUIRE) == 0)
                __nanosleep(100);
        __atomic_store_n(&flags[b], 1, __ATOMIC_RELEASE);
    }
    __syncthreads();
}

static void test_grid()
{
    cudaStream_t s;
    EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    const int n = 100003;
    int *in;
    long long *out;
    EQ(cudaMallocManaged((void **)&in, n * sizeof *in, cudaMemAttachGlobal), cudaSuccess);
    EQ(cudaMallocManaged((void **)&out, 2 * sizeof *out, cudaMemAttachGlobal), cudaSuccess);
    long long ref = 0;
    for (int i = 0; i < n; i++)
        ref += in[i] = i % 11 - 5 + (i & 64);
    const int grids[] = {1, 3, 7, 40}; /* 40 > the 7 emulated SMs: blocks queue */
    for (int g : grids) {
        out[0] = out[1] = 0;
        auto k = k_block_sum;
        EQ(orb_emu_launch_kernel(dim3(g), dim3(512), 512 * sizeof(long long), s, k, (const int *)in, out, n),
           cudaSuccess);
        EQ(cudaStreamSynchronize(s), cudaSuccess);
        EQ(out[0], ref);
        EQ(out[1], -ref);
    }
    int *flags;
    EQ(cudaMallocManaged((void **)&flags, 7 * sizeof *flags, cudaMemAttachGlobal), cudaSuccess);
    for (int it = 0; it < 20; it++) {
        memset(flags, 0, 7 * sizeof *flags);
        auto k = k_chain;
        EQ(orb_emu_launch_kernel(dim3(7), dim3(64), 0, s, k, flags), cudaSuccess);
        EQ(cudaStreamSynchronize(s), cudaSuccess);
        EQ(flags[6], 1);
    }
    cudaFree(in);
    cudaFree(out);
    cudaFree(flags);
    cudaStreamDestroy(s);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--ipc-child"))
        return ipc_child_main(argv[2]);
    setenv("ORBIT_CUDA_EMU_DEVICES", "2", 1);
    setenv("ORBIT_CUDA_EMU_SMS", "7", 1);
    auto t0 = std::chrono::steady_clock::now();
    test_errors();
    test_devices();
    test_memory();
    test_copies();
    test_streams();
    test_legacy();
    test_launch();
    test_grid();
    test_graphs();
    test_ipc("/proc/self/exe");
    test_stress();
    double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    printf("%d checks, %d failures (%.2f s)\n", checks, failures, sec);
    // exit with a stream still busy: must not hang or crash
    cudaStream_t s;
    cudaStreamCreate(&s);
    std::atomic<int> *leak = new std::atomic<int>(0);
    for (int i = 0; i < 20; i++)
        cudaLaunchHostFunc(s, host_sleep_set, leak);
    return failures ? 1 : 0;
}
