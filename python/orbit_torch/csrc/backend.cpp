// The backend's machinery: rendezvous, the worker thread, launching a call on the host or
// a CUDA stream, coalescing, errors, splitting. The collectives themselves: ops.cpp.
#include "backend.hpp"

#include <c10/core/impl/VirtualGuardImpl.h>

#include <algorithm>

namespace orbit_torch {

namespace {

double to_seconds(std::chrono::milliseconds t) { return static_cast<double>(t.count()) / 1000.0; }

// Rendezvous keys live under the group's PrefixStore, so each group has its own.
const char* kIdKey = "orbit/unique_id";

}  // namespace

// ---- work ---------------------------------------------------------------------------------

OrbitWork::OrbitWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, std::vector<c10::Device> devices)
    : c10d::Work(rank, type), outputs_(std::move(outputs)) {
  future_ = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()), devices);
}

void OrbitWork::beforeWait() {
  if (before_wait_)
    before_wait_();
}

c10::intrusive_ptr<c10::ivalue::Future> OrbitWork::getFuture() {
  beforeWait();
  return future_;
}

bool OrbitWork::isCompleted() {
  beforeWait();
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_;
}

bool OrbitWork::isSuccess() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_ && !exception_;
}

bool OrbitWork::wait(std::chrono::milliseconds timeout) {
  beforeWait();
  std::unique_lock<std::mutex> lock(mutex_);
  if (timeout == kNoTimeout) {
    cv_.wait(lock, [&] { return completed_; });
  } else if (!cv_.wait_for(lock, timeout, [&] { return completed_; })) {
    C10_THROW_ERROR(DistBackendError, "orbit: wait() timed out after " + std::to_string(timeout.count()) +
                                          " ms; the operation is still running (orbit's own timeout, set by "
                                          "init_process_group(timeout=...), ends it)");
  }
  if (exception_)
    std::rethrow_exception(exception_);
  lock.unlock();
  // CUDA: the caller's current stream waits for the collective's (no host blocking)
  future_->wait();
  return true;
}

void OrbitWork::complete(std::exception_ptr err) {
  if (err)
    future_->setError(err);
  else
    future_->markCompleted(c10::IValue(outputs_));
  finish(err);
}

// ---- construction ---------------------------------------------------------------------------

OrbitBackend::OrbitBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                           std::chrono::milliseconds timeout, const c10::intrusive_ptr<OrbitBackend>& parent,
                           bool member)
    : c10d::Backend(rank, size), timeout_s_(to_seconds(timeout)) {
  orb_status_t st;
  if (parent) {
    // every rank of the parent calls this (torch's split path): members take color 0
    orb_status_t s = ORB_OK;
    parent->runOnWorker([&] { s = orb_comm_split(parent->comm_, member ? 0 : ORB_SPLIT_NOCOLOR, parent->getRank(), &comm_); });
    if (s != ORB_OK)
      parent->fail("new_group (orb_comm_split)", s, parent->comm_);
  } else {
    orb_unique_id_t id;
    if (rank == 0) {
      st = orb_get_unique_id(&id);
      if (st != ORB_OK)
        fail("init_process_group (orb_get_unique_id)", st, nullptr);
      char text[ORB_UNIQUE_ID_STR_BYTES];
      orb_unique_id_to_string(&id, text, sizeof text);
      store->set(kIdKey, std::vector<uint8_t>(text, text + sizeof text - 1));
    } else {
      std::vector<uint8_t> v = store->get(kIdKey);  // blocks up to the store's timeout
      std::string text(v.begin(), v.end());
      st = orb_unique_id_from_string(text.c_str(), &id);
      if (st != ORB_OK)
        fail("init_process_group (orb_unique_id_from_string)", st, nullptr);
    }
    st = orb_comm_init_rank(&comm_, size, id, rank);
    if (st != ORB_OK)
      fail("init_process_group (orb_comm_init_rank)", st, nullptr);
  }
  if (comm_)
    orb_comm_set_timeout(comm_, timeout_s_);
  worker_ = std::thread([this] { workerLoop(); });
}

OrbitBackend::OrbitBackend(orb_comm_t comm, int rank, int size, std::chrono::milliseconds timeout)
    : c10d::Backend(rank, size), comm_(comm), timeout_s_(to_seconds(timeout)) {
  orb_comm_set_timeout(comm_, timeout_s_);
  worker_ = std::thread([this] { workerLoop(); });
}

OrbitBackend::~OrbitBackend() { shutdown(); }

void OrbitBackend::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_)
      return;
  }
  try {
    flushP2P();
  } catch (...) {  // a send nobody waited for: its error has no one to go to
  }
  stopWorker();  // runs what was queued first
  if (cuda_comm_)
    orb_comm_destroy(cuda_comm_);
  if (comm_)
    orb_comm_destroy(comm_);
  cuda_comm_ = comm_ = nullptr;
}

void OrbitBackend::abort() {
  // safe from any thread: a call blocked in orbit returns ORB_ERR_ABORTED
  if (comm_)
    orb_comm_abort(comm_);
  if (cuda_comm_)
    orb_comm_abort(cuda_comm_);
  shutdown();
}

void OrbitBackend::setTimeout(std::chrono::milliseconds timeout) {
  timeout_s_ = to_seconds(timeout);
  double s = timeout_s_;
  post([this, s] {
    if (comm_)
      orb_comm_set_timeout(comm_, s);
    if (cuda_comm_)
      orb_comm_set_timeout(cuda_comm_, s);
  });
}

// ---- the worker -----------------------------------------------------------------------------

void OrbitBackend::post(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(mu_);
  TORCH_CHECK(!stopping_, "orbit: the process group was shut down or aborted; create a new one");
  queue_.push_back(std::move(task));
  cv_.notify_one();
}

void OrbitBackend::runOnWorker(const std::function<void()>& fn) {
  flushP2P();  // send/recv issued before fn run before it
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  post([&] {
    fn();
    std::lock_guard<std::mutex> l(m);
    done = true;
    cv.notify_all();
  });
  std::unique_lock<std::mutex> l(m);
  cv.wait(l, [&] { return done; });
}

void OrbitBackend::workerLoop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty())
        return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

void OrbitBackend::stopWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_one();
  }
  if (worker_.joinable() && worker_.get_id() != std::this_thread::get_id())
    worker_.join();
}

// ---- errors ---------------------------------------------------------------------------------

void OrbitBackend::fail(const char* op, orb_status_t st, orb_comm_t comm) const {
  std::string msg = std::string("orbit: ") + op + " on rank " + std::to_string(getRank()) + " of " +
                    std::to_string(getSize()) + " failed: " + orb_status_name(st) + ": " +
                    orb_comm_last_error(comm);
  if (st == ORB_ERR_INVALID_ARG || st == ORB_ERR_UNSUPPORTED)
    C10_THROW_ERROR(ValueError, msg);
  C10_THROW_ERROR(DistBackendError, msg);
}

void OrbitBackend::failArg(const char* op, const std::string& what) const {
  C10_THROW_ERROR(ValueError, std::string("orbit: ") + op + " on rank " + std::to_string(getRank()) + " of " +
                                  std::to_string(getSize()) + ": " + what);
}

void OrbitBackend::markBroken(const std::exception_ptr& err) {
  try {
    std::rethrow_exception(err);
  } catch (const c10::ValueError&) {  // an argument refused: nothing was sent, the comm is fine
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(err_mu_);
    if (broken_.empty())
      broken_ = e.what();
  }
}

std::exception_ptr OrbitBackend::brokenError(const std::string& op) {
  std::lock_guard<std::mutex> lock(err_mu_);
  if (broken_.empty())
    return nullptr;
  return std::make_exception_ptr(c10::DistBackendError(
      {__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
      "orbit: " + op + " on rank " + std::to_string(getRank()) +
          ": the communicator failed earlier and is not used again: " + broken_));
}

// ---- launching ------------------------------------------------------------------------------

orb_comm_t OrbitBackend::cudaComm() {
  if (cuda_comm_)
    return cuda_comm_;
  // a dup made in issue order on the worker: every rank makes it at the same point
  orb_comm_t dup = nullptr;
  orb_status_t st = ORB_OK;
  runOnWorker([&] { st = orb_comm_dup(comm_, &dup); });
  if (st != ORB_OK)
    fail("the first CUDA collective (orb_comm_dup)", st, comm_);
  cuda_comm_ = dup;
  return cuda_comm_;
}

c10::intrusive_ptr<c10d::Work> OrbitBackend::launch(const char* op, c10d::OpType type,
                                                    const std::vector<at::Tensor>& tensors,
                                                    std::vector<at::Tensor> outputs, Body body) {
  c10::Device device(c10::kCPU);
  bool first = true;
  for (const at::Tensor& t : tensors) {
    if (!t.defined())
      continue;
    if (first)
      device = t.device();
    else if (t.device() != device)
      failArg(op, "its tensors are on " + device.str() + " and " + t.device().str() +
                      ": one call takes tensors of one device");
    first = false;
  }
  if (device.type() != c10::kCPU && device.type() != c10::kCUDA)
    failArg(op, "tensors on " + device.str() + ": orbit takes CPU and CUDA tensors");
  if (std::exception_ptr err = brokenError(op))
    std::rethrow_exception(err);
  const bool cuda = device.type() == c10::kCUDA;
  std::vector<c10::Device> devices;
  if (cuda)
    devices.push_back(device);
  auto work = c10::make_intrusive<OrbitWork>(getRank(), type, std::move(outputs), devices);

  if (coalescing_) {
    if (!coalesced_.empty() && coalesced_device_ != device)
      failArg(op, "a coalesced batch mixes " + coalesced_device_.str() + " and " + device.str() + " tensors");
    coalesced_device_ = device;
    coalesced_.push_back({op, std::move(body), work});
    return work;
  }
  if (cuda) {
    orb_comm_t comm = cudaComm();
    c10::impl::VirtualGuardImpl impl(c10::kCUDA);
    c10::Device prev = impl.exchangeDevice(device);
    orb_stream_t stream = impl.getStream(device).native_handle();
    try {
      Post after = body(comm, stream);  // enqueued on the stream, in stream order
      if (after)
        after();
    } catch (...) {
      impl.setDevice(prev);
      throw;
    }
    work->complete(nullptr);  // the future records an event on the current stream
    impl.setDevice(prev);
    return work;
  }
  // Host send/recv wait to be flushed together, as one orbit group, by the next other call
  // or by the first wait on any of them: then a receive posted before the send it depends
  // on (a ring's irecv before isend) cannot block the worker, which runs calls one by one.
  if (type == c10d::OpType::SEND || type == c10d::OpType::RECV) {
    c10::weak_intrusive_ptr<OrbitBackend> self(c10::intrusive_ptr<OrbitBackend>::unsafe_reclaim_from_nonowning(this));
    work->setBeforeWait([self] {
      if (auto be = self.lock())
        be->flushP2P();
    });
    std::lock_guard<std::mutex> lock(p2p_mu_);
    p2p_.push_back({op, std::move(body), work});
    return work;
  }
  flushP2P();
  post([this, op = std::string(op), body = std::move(body), work] {
    std::exception_ptr err = brokenError(op);
    if (!err) {
      try {
        Post after = body(comm_, nullptr);
        if (after)
          after();
      } catch (...) {
        err = std::current_exception();
        markBroken(err);
      }
    }
    work->complete(err);
  });
  return work;
}

void OrbitBackend::flushP2P() {
  std::shared_ptr<std::vector<Pending>> batch;
  {
    std::lock_guard<std::mutex> lock(p2p_mu_);
    if (p2p_.empty())  // the usual case: it runs before every host call
      return;
    batch = std::make_shared<std::vector<Pending>>(std::move(p2p_));
    p2p_.clear();
  }
  postGroup(batch, {});
}

void OrbitBackend::postGroup(std::shared_ptr<std::vector<Pending>> batch, c10::intrusive_ptr<OrbitWork> all) {
  post([this, batch, all] {
    std::exception_ptr err = brokenError(batch->size() == 1 ? (*batch)[0].op : "a batch of send/recv");
    if (!err) {
      try {
        runGroup(*batch, comm_, nullptr);
      } catch (...) {
        err = std::current_exception();
        markBroken(err);
      }
    }
    for (Pending& p : *batch)
      p.work->complete(err);
    if (all)
      all->complete(err);
  });
}

void OrbitBackend::startCoalescing() {
  TORCH_CHECK(!coalescing_, "orbit: startCoalescing called twice without endCoalescing");
  coalescing_ = true;
  coalesced_.clear();
}

Body OrbitBackend::groupOf(const char* op, std::vector<Body> parts) const {
  return [this, op, parts = std::move(parts)](orb_comm_t comm, orb_stream_t stream) -> Post {
    std::vector<Post> afters;
    orb_status_t st = orb_group_start();
    if (st != ORB_OK)
      fail(op, st, comm);
    try {
      for (const Body& b : parts)
        afters.push_back(b(comm, stream));  // each call checked as it is queued
    } catch (...) {
      orb_group_end();
      throw;
    }
    st = orb_group_end();
    if (st != ORB_OK)
      fail(op, st, comm);
    return [afters = std::move(afters)] {
      for (const Post& a : afters)
        if (a)
          a();
    };
  };
}

void OrbitBackend::runGroup(std::vector<Pending>& batch, orb_comm_t comm, orb_stream_t stream) {
  std::vector<Body> parts;
  for (Pending& p : batch)
    parts.push_back(p.body);
  Post after = groupOf(batch.size() == 1 ? batch[0].op.c_str() : "a coalesced batch", std::move(parts))(comm, stream);
  if (after)
    after();
}

c10::intrusive_ptr<c10d::Work> OrbitBackend::endCoalescing() {
  TORCH_CHECK(coalescing_, "orbit: endCoalescing without startCoalescing");
  coalescing_ = false;
  auto batch = std::make_shared<std::vector<Pending>>(std::move(coalesced_));
  coalesced_.clear();
  const bool cuda = coalesced_device_.type() == c10::kCUDA;
  std::vector<c10::Device> devices;
  if (cuda)
    devices.push_back(coalesced_device_);
  auto all = c10::make_intrusive<OrbitWork>(getRank(), c10d::OpType::COALESCED, std::vector<at::Tensor>{}, devices);
  if (batch->empty()) {
    all->complete(nullptr);
    return all;
  }
  if (cuda) {
    c10::impl::VirtualGuardImpl impl(c10::kCUDA);
    orb_stream_t stream = impl.getStream(coalesced_device_).native_handle();
    runGroup(*batch, cudaComm(), stream);
    for (Pending& p : *batch)
      p.work->complete(nullptr);
    all->complete(nullptr);
    return all;
  }
  flushP2P();  // what came before the batch runs before it
  postGroup(batch, all);
  return all;
}

// ---- splitting ------------------------------------------------------------------------------

c10::intrusive_ptr<c10d::Backend> OrbitBackend::split(const c10::intrusive_ptr<c10d::Store>& /*store*/,
                                                      const std::vector<int>& ranks,
                                                      const c10::intrusive_ptr<c10d::Backend::Options>& opts) {
  // ranks: the global ranks of this rank's new group; the lowest one names its color
  int color = ranks.empty() ? ORB_SPLIT_NOCOLOR : *std::min_element(ranks.begin(), ranks.end());
  orb_comm_t child = nullptr;
  orb_status_t st = ORB_OK;
  runOnWorker([&] { st = orb_comm_split(comm_, color, getRank(), &child); });
  if (st != ORB_OK)
    fail("split_group (orb_comm_split)", st, comm_);
  if (!child)
    return {};
  int r = 0, n = 0;
  orb_comm_rank(child, &r);
  orb_comm_size(child, &n);
  auto timeout = opts ? std::chrono::duration_cast<std::chrono::milliseconds>(opts->timeout)
                      : std::chrono::milliseconds(static_cast<int64_t>(timeout_s_ * 1000));
  return c10::make_intrusive<OrbitBackend>(child, r, n, timeout);
}

double OrbitBackend::commTimeout() {
  double t = 0;
  runOnWorker([&] { orb_comm_get_timeout(comm_, &t); });
  return t;
}

void OrbitBackend::performNocolorSplit() {
  c10::intrusive_ptr<c10d::Backend> none = split({}, {}, {});
  TORCH_CHECK(!none, "orbit: a split with no color made a communicator");
}

}  // namespace orbit_torch
