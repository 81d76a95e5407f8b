// orbit as a torch.distributed backend: a thin c10d::Backend over liborbit's public API.
// C++ only because c10d's interface is C++; every collective is one or a few orbit calls.
//
// CPU tensors run on one worker thread per backend, in issue order (so DDP's bucket
// all-reduces overlap backward, as with Gloo); CUDA tensors are enqueued on the caller's
// current stream through orbit's device path, on a communicator of their own.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

extern "C" {
#include "orbit.h"
}

namespace orbit_torch {

// What runs after the orbit call(s) have completed: copies out of staging buffers.
using Post = std::function<void()>;
// One operation: stages its buffers, makes its orbit calls on comm (stream NULL for host
// tensors) and returns what must run once they completed. Throws on an orbit error.
using Body = std::function<Post(orb_comm_t comm, orb_stream_t stream)>;

class OrbitWork : public c10d::Work {
 public:
  OrbitWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, std::vector<c10::Device> devices);
  bool isCompleted() override;
  bool isSuccess() const override;
  std::vector<at::Tensor> result() override { return outputs_; }
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  // Completes the work and its future, with err the failure (nullptr: success).
  void complete(std::exception_ptr err);
  // Run before anyone looks at or waits for this work (the backend's p2p flush).
  void setBeforeWait(std::function<void()> fn) { before_wait_ = std::move(fn); }

 private:
  void beforeWait();
  std::function<void()> before_wait_;
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

class OrbitBackend : public c10d::Backend {
 public:
  // Rendezvous through store: group rank 0 publishes a fresh orbit id, the others read it.
  // With parent (an orbit backend of a process group that every rank of it calls this
  // from), the communicator is split from the parent's instead (orb_comm_split).
  OrbitBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout,
               const c10::intrusive_ptr<OrbitBackend>& parent = {}, bool member = true);
  // A split child: comm is already made.
  OrbitBackend(orb_comm_t comm, int rank, int size, std::chrono::milliseconds timeout);
  ~OrbitBackend() override;

  const std::string getBackendName() const override { return "orbit"; }
  bool supportsSplitting() const override { return true; }
  bool supportsCoalescing() const override { return true; }
  void setTimeout(std::chrono::milliseconds timeout) override;
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;
  void abort() override;
  void shutdown() override;
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<c10d::Backend::Options>& opts) override;
  // The part of a split that a rank outside every new group takes (torch's
  // perform_nocolor_split): it must join the parent's split call, with no color.
  void performNocolorSplit();
  // The host communicator's timeout in seconds (0: none), as orbit holds it.
  double commTimeout();

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplits, std::vector<int64_t>& inputSplits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

  // Throws the orbit error of st (not ORB_OK) on comm, in the one format every rank uses:
  // "orbit: <op> on rank R of W failed: ORB_ERR_<NAME>: <orbit's detail>".
  [[noreturn]] void fail(const char* op, orb_status_t st, orb_comm_t comm) const;
  [[noreturn]] void failArg(const char* op, const std::string& what) const;

  // Bodies run as one orbit group (closed on error too); their copy-outs run after it. The
  // coalesced operations and torch's coalescing manager are this over the single calls' bodies.
  Body groupOf(const char* op, std::vector<Body> parts) const;

 private:
  struct Pending {
    std::string op;
    Body body;
    c10::intrusive_ptr<OrbitWork> work;
  };

  // The bodies of calls that also run inside a coalesced form (ops.cpp).
  Body allreduceBody(const char* name, at::Tensor t, c10d::ReduceOp rop);
  Body allgatherListBody(const char* name, std::vector<at::Tensor> outs, at::Tensor in);
  Body allgatherTensorBody(const char* name, at::Tensor out, at::Tensor in);
  Body reduceScatterTensorBody(const char* name, at::Tensor out, at::Tensor in, c10d::ReduceOp rop);

  // Runs body for op on the worker (host tensors) or on the caller's stream (CUDA).
  c10::intrusive_ptr<c10d::Work> launch(const char* op, c10d::OpType type, const std::vector<at::Tensor>& tensors,
                                        std::vector<at::Tensor> outputs, Body body);
  // Runs a batch's bodies as one group (groupOf), with the batch's name in an error.
  void runGroup(std::vector<Pending>& batch, orb_comm_t comm, orb_stream_t stream);
  // Queues a batch on the worker as one group; its works and all (if any) complete with it.
  void postGroup(std::shared_ptr<std::vector<Pending>> batch, c10::intrusive_ptr<OrbitWork> all);
  // The host send/recv issued since the last flush, run as one group (see launch()).
  void flushP2P();
  // Records a failure: later calls fail at once with it (argument errors excepted).
  void markBroken(const std::exception_ptr& err);
  // The first failure as an exception for op, or nullptr while there is none.
  std::exception_ptr brokenError(const std::string& op);
  void post(std::function<void()> task);
  // Runs fn on the worker after everything queued before it, and waits for it.
  void runOnWorker(const std::function<void()>& fn);
  void workerLoop();
  void stopWorker();
  orb_comm_t cudaComm();

  orb_comm_t comm_ = nullptr;      // host tensors, used by the worker thread only
  orb_comm_t cuda_comm_ = nullptr; // CUDA tensors (a dup of comm_, made on first use)
  double timeout_s_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread worker_;

  // After a failure the communicator is not used again: every later call fails at once
  // with the first error, as NCCL's aborted communicators do.
  std::mutex err_mu_;
  std::string broken_;

  std::mutex p2p_mu_;
  std::vector<Pending> p2p_;

  bool coalescing_ = false;
  std::vector<Pending> coalesced_;
  c10::Device coalesced_device_{c10::kCPU};
};

}  // namespace orbit_torch
