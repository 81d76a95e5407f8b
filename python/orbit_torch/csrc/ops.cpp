// Every torch.distributed operation as orbit calls: the tensor <-> buffer mapping, staging
// for list arguments and non-contiguous tensors, and the reduce-op table.
#include "backend.hpp"

#include <ATen/ATen.h>

namespace orbit_torch {

namespace {

using c10::ScalarType;

// A tensor as orbit sees it: contiguous memory, an orbit dtype and an element count.
struct Buf {
  at::Tensor t;  // contiguous: the caller's tensor itself or a staging copy
  orb_dtype_t dtype;
  size_t count;
  void* ptr() const { return t.numel() ? t.data_ptr() : nullptr; }
};

bool orbitDtype(ScalarType s, orb_dtype_t* out) {
  switch (s) {
    case ScalarType::Float: *out = ORB_FLOAT32; return true;
    case ScalarType::Double: *out = ORB_FLOAT64; return true;
    case ScalarType::Half: *out = ORB_FLOAT16; return true;
    case ScalarType::BFloat16: *out = ORB_BFLOAT16; return true;
    case ScalarType::Char: *out = ORB_INT8; return true;
    case ScalarType::Byte: *out = ORB_UINT8; return true;
    case ScalarType::Bool: *out = ORB_UINT8; return true;  // one byte, 0 or 1
    case ScalarType::Int: *out = ORB_INT32; return true;
    case ScalarType::UInt32: *out = ORB_UINT32; return true;
    case ScalarType::Long: *out = ORB_INT64; return true;
    case ScalarType::UInt64: *out = ORB_UINT64; return true;
    default: return false;
  }
}

// Data movement: any dtype travels, as itself where orbit has it, else as bytes.
Buf moving(const at::Tensor& t) {
  at::Tensor c = t.contiguous();
  orb_dtype_t d;
  if (orbitDtype(c.scalar_type(), &d))
    return {c, d, static_cast<size_t>(c.numel())};
  return {c, ORB_UINT8, static_cast<size_t>(c.numel()) * c.element_size()};
}

// Writes src back into the caller's tensor when orbit worked on a staging copy.
Post copyBack(const at::Tensor& user, const at::Tensor& staged) {
  if (user.is_same(staged))
    return nullptr;
  return [user, staged]() mutable { user.copy_(staged.view(user.sizes())); };
}


const char* redOpName(c10d::ReduceOp::RedOpType op) {
  switch (op) {
    case c10d::ReduceOp::SUM: return "SUM";
    case c10d::ReduceOp::AVG: return "AVG";
    case c10d::ReduceOp::PRODUCT: return "PRODUCT";
    case c10d::ReduceOp::MIN: return "MIN";
    case c10d::ReduceOp::MAX: return "MAX";
    case c10d::ReduceOp::BAND: return "BAND";
    case c10d::ReduceOp::BOR: return "BOR";
    case c10d::ReduceOp::BXOR: return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM: return "PREMUL_SUM";
    default: return "UNUSED";
  }
}

// A reduction's orbit op and its buffer. PREMUL_SUM scales a staging copy by its factor and
// sums; bool reduces as one byte with SUM as MAX (logical or) and PRODUCT as MIN (and), as
// NCCL does; complex SUM and AVG reduce their real and imaginary parts as floats.
struct Reduction {
  Buf buf;
  orb_op_t op;
};

// Refuses, at the call, an op or dtype orbit cannot reduce (before anything is queued).
void checkReduction(const OrbitBackend& be, const char* name, ScalarType st, const c10d::ReduceOp& rop) {
  const c10d::ReduceOp::RedOpType kind = rop.op_;
  if (kind == c10d::ReduceOp::BAND || kind == c10d::ReduceOp::BOR || kind == c10d::ReduceOp::BXOR ||
      kind == c10d::ReduceOp::UNUSED)
    be.failArg(name, std::string("ReduceOp.") + redOpName(kind) +
                         " is not supported by orbit (SUM, PRODUCT, MIN, MAX, AVG and PREMUL_SUM are); for flags, "
                         "MAX of a uint8 tensor is a logical or and MIN a logical and");
  orb_dtype_t d;
  if (at::isComplexType(st)) {
    if (kind != c10d::ReduceOp::SUM && kind != c10d::ReduceOp::AVG && kind != c10d::ReduceOp::PREMUL_SUM)
      be.failArg(name, std::string("ReduceOp.") + redOpName(kind) + " on complex " + c10::toString(st) +
                           ": complex tensors reduce with SUM, AVG or PREMUL_SUM only");
  } else if (!orbitDtype(st, &d)) {
    be.failArg(name, std::string("dtype ") + c10::toString(st) +
                         " cannot be reduced by orbit (float32/64, float16, bfloat16, int8/32/64, uint8/32/64, "
                         "bool and complex can)");
  }
  if (st == ScalarType::Bool && kind == c10d::ReduceOp::AVG)
    be.failArg(name, "ReduceOp.AVG of a bool tensor has no meaning; use SUM (logical or) or PRODUCT (and)");
  if (kind == c10d::ReduceOp::PREMUL_SUM && !dynamic_cast<c10d::PreMulSumSupplement*>(rop.supplement_.get()))
    be.failArg(name, "PREMUL_SUM without its factor (make it with torch.distributed._make_nccl_premul_sum)");
}

Reduction reducing(const OrbitBackend& be, const char* name, const at::Tensor& t, const c10d::ReduceOp& rop) {
  at::Tensor c = t.contiguous();
  const c10d::ReduceOp::RedOpType kind = rop.op_;
  const ScalarType st = c.scalar_type();  // checked by checkReduction when the call was made
  orb_op_t op = ORB_SUM;
  switch (kind) {
    case c10d::ReduceOp::AVG: op = ORB_AVG; break;
    case c10d::ReduceOp::PRODUCT: op = ORB_PROD; break;
    case c10d::ReduceOp::MIN: op = ORB_MIN; break;
    case c10d::ReduceOp::MAX: op = ORB_MAX; break;
    default: op = ORB_SUM; break;
  }
  if (kind == c10d::ReduceOp::PREMUL_SUM) {
    auto* sup = dynamic_cast<c10d::PreMulSumSupplement*>(rop.supplement_.get());
    // a copy: the caller's input must not change when the output is another tensor
    at::Tensor scaled = sup->tensor_factor.defined() ? c.mul(sup->tensor_factor.to(c.device()))
                                                     : c.mul(sup->double_factor);
    c = scaled.to(st);
  }
  if (at::isComplexType(st)) {
    at::Tensor r = at::view_as_real(c);
    orb_dtype_t d;
    orbitDtype(r.scalar_type(), &d);
    return {{c, d, static_cast<size_t>(r.numel())}, op};
  }
  orb_dtype_t d;
  orbitDtype(st, &d);
  if (st == ScalarType::Bool)
    op = op == ORB_SUM ? ORB_MAX : op == ORB_PROD ? ORB_MIN : op;
  return {{c, d, static_cast<size_t>(c.numel())}, op};
}

void checkOne(const OrbitBackend& be, const char* name, size_t n) {
  if (n != 1)
    be.failArg(name, "got " + std::to_string(n) +
                         " tensors: orbit takes one tensor per process and call (one process per device)");
}

// The tensors of a list, flattened and concatenated (a staging copy, for list arguments).
at::Tensor catFlat(const std::vector<at::Tensor>& list) {
  std::vector<at::Tensor> rows;
  for (const at::Tensor& t : list)
    rows.push_back(t.reshape({-1}));
  return at::cat(rows);
}

// Copies block i of flat (n elements each) into outs[i], once the call has filled flat.
Post unflatten(std::vector<at::Tensor> outs, at::Tensor flat, int64_t n) {
  return [outs, flat, n]() mutable {
    for (size_t i = 0; i < outs.size(); i++)
      outs[i].copy_(flat.narrow(0, static_cast<int64_t>(i) * n, n).view(outs[i].sizes()));
  };
}

// A list of same-shaped tensors as one flat staging tensor of n blocks.
at::Tensor flatLike(const at::Tensor& block, int64_t n) {
  std::vector<int64_t> sizes{n * block.numel()};
  return at::empty(sizes, block.options().memory_format(c10::MemoryFormat::Contiguous));
}

void checkSameShape(const OrbitBackend& be, const char* name, const std::vector<at::Tensor>& list,
                    const at::Tensor& like, int64_t want) {
  if (static_cast<int64_t>(list.size()) != want)
    be.failArg(name, "the tensor list has " + std::to_string(list.size()) + " entries; it needs one per rank (" +
                         std::to_string(want) + ")");
  for (const at::Tensor& t : list)
    if (t.numel() != like.numel() || t.scalar_type() != like.scalar_type())
      be.failArg(name, "every tensor of the list must have the input's " + std::to_string(like.numel()) +
                           " elements of " + c10::toString(like.scalar_type()) + "; one has " +
                           std::to_string(t.numel()) + " of " + c10::toString(t.scalar_type()));
}

}  // namespace

#define ORB_TRY(name, call, comm)        \
  do {                                   \
    orb_status_t st_ = (call);           \
    if (st_ != ORB_OK)                   \
      this->fail(name, st_, comm);       \
  } while (0)

// ---- bodies shared by a call and its coalesced form ----------------------------------------

Body OrbitBackend::allreduceBody(const char* name, at::Tensor t, c10d::ReduceOp rop) {
  return [=, this](orb_comm_t comm, orb_stream_t s) -> Post {
    Reduction r = reducing(*this, name, t, rop);
    ORB_TRY(name, orb_allreduce(r.buf.ptr(), r.buf.ptr(), r.buf.count, r.buf.dtype, r.op, comm, s), comm);
    return copyBack(t, r.buf.t);
  };
}

Body OrbitBackend::allgatherListBody(const char* name, std::vector<at::Tensor> outs, at::Tensor in) {
  return [=, this](orb_comm_t comm, orb_stream_t s) -> Post {
    Buf b = moving(in);
    at::Tensor flat = flatLike(b.t, getSize());
    ORB_TRY(name, orb_allgather(b.ptr(), flat.numel() ? flat.data_ptr() : nullptr, b.count, b.dtype, comm, s), comm);
    return unflatten(outs, flat, in.numel());
  };
}

Body OrbitBackend::allgatherTensorBody(const char* name, at::Tensor out, at::Tensor in) {
  return [=, this](orb_comm_t comm, orb_stream_t s) -> Post {
    Buf b = moving(in), o = moving(out);
    ORB_TRY(name, orb_allgather(b.ptr(), o.ptr(), b.count, b.dtype, comm, s), comm);
    return copyBack(out, o.t);
  };
}

Body OrbitBackend::reduceScatterTensorBody(const char* name, at::Tensor out, at::Tensor in, c10d::ReduceOp rop) {
  return [=, this](orb_comm_t comm, orb_stream_t s) -> Post {
    Reduction r = reducing(*this, name, in, rop);
    at::Tensor o = out.is_contiguous() ? out : at::empty_like(out, at::MemoryFormat::Contiguous);
    ORB_TRY(name,
            orb_reduce_scatter(r.buf.ptr(), o.numel() ? o.data_ptr() : nullptr, r.buf.count / getSize(),
                               r.buf.dtype, r.op, comm, s),
            comm);
    return copyBack(out, o);
  };
}


c10::intrusive_ptr<c10d::Work> OrbitBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                       const c10d::BroadcastOptions& opts) {
  const char* name = "broadcast";
  checkOne(*this, name, tensors.size());
  at::Tensor t = tensors[0];
  const int root = static_cast<int>(opts.rootRank);
  return launch(name, c10d::OpType::BROADCAST, tensors, tensors, [=, this](orb_comm_t comm, orb_stream_t s) -> Post {
    Buf b = moving(t);
    ORB_TRY(name, orb_broadcast(b.ptr(), b.ptr(), b.count, b.dtype, root, comm, s), comm);
    return copyBack(t, b.t);
  });
}

c10::intrusive_ptr<c10d::Work> OrbitBackend::allreduce(std::vector<at::Tensor>& tensors,
                                                       const c10d::AllreduceOptions& opts) {
  const char* name = "all_reduce";
  checkOne(*this, name, tensors.size());
  checkReduction(*this, name, tensors[0].scalar_type(), opts.reduceOp);
  return launch(name, c10d::OpType::ALLREDUCE, tensors, tensors, allreduceBody(name, tensors[0], opts.reduceOp));
}

c10::intrusive_ptr<c10d::Work> OrbitBackend::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                 const c10d::AllreduceCoalescedOptions& opts) {
  const char* name = "all_reduce_coalesced";
  std::vector<Body> parts;
  for (const at::Tensor& t : tensors) {
    checkReduction(*this, name, t.scalar_type(), opts.reduceOp);
    parts.push_back(allreduceBody(name, t, opts.reduceOp));
  }
  return launch(name, c10d::OpType::ALLREDUCE_COALESCED, tensors, tensors, groupOf(name, std::move(parts)));
}

c10::intrusive_ptr<c10d::Work> OrbitBackend::reduce(std::vector<at::Tensor>& tensors,
                                                    const c10d::ReduceOptions& opts) {
  const char* name = "reduce";
  checkOne(*this, name, tensors.size());
  at::Tensor t = tensors[0];
  c10d::ReduceOp rop = opts.reduceOp;
  const int root = static_cast<int>(opts.rootRank);
  const bool is_root = root == getRank();
  checkReduction(*this, name, t.scalar_type(), rop);
  return launch(name, c10d::OpType::REDUCE, tensors, tensors, [=, this](orb_comm_t comm, orb_stream_t s) -> Post {
    Reduction r = reducing(*this, name, t, rop);
    // only the root's tensor receives the result; the others' stay as they were
    ORB_TRY(name,
            orb_reduce(r.buf.ptr(), is_root ? r.buf.ptr() : nullptr, r.buf.count, r.buf.dtype, r.op, root, comm, s),
            comm);
    return is_root ? copyBack(t, r.buf.t) : nullptr;
  });
}

c10::intrusive_ptr<c10d::Work> OrbitBackend::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                       std::vector<at::Tensor>& inputs,
                                                       const c10d::AllgatherOptions& /*opts*/) {
  const char* name = "all_gather";
  checkOne(*this, name, inputs.size());
  checkOne(*this, name, outputs.size());
  checkSameShape(*this, name, outputs[0], inputs[0], getSize());
  std::vector<at::Tensor> all = outputs[0];
  all.push_back(inputs[0]);
  return launch(name, c10d::OpType::ALLGATHER, all, outputs[0], allgatherListBody(name, outputs[0], inputs[0]));
}

c10::intrusive_ptr<c10d::Work> OrbitBackend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                             const c10d::AllgatherOptions& /*opts*/) {
  const char* name = "all_gather_into_tensor";
  if (output.numel() != input.numel() * getSize() || output.scalar_type() != input.scalar_type())
    failArg(name, "the output has " + std::to_string(output.numel()) + " elements of " +
                      c10::toString(output.scalar_type()) + "; it needs world size x input = " +
                      std::to_string(input.numel() * getSize()) + " of " + c10::toString(input.scalar_type()));
  return launch(name, c10d::OpType::_ALLGATHER_BASE, {output, input}, {output},
                allgatherTensorBody(name, output, input));
}

c10::intrusive_ptr<c10d::Work> OrbitBackend::allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& /*opts*/) {
  const char* name = "all_gather_coalesced";
  if (outputs.size() != static_cast<size_t>(getSize()))
    failArg(name, "the output has " + std::to_string(outputs.size()) + " lists; it needs one per rank");
  std::vector<at::Tensor> all = inputs;
  for (auto& l : outputs) {
    if (l.size() != inputs.size())
      failArg(name, "every output list needs one tensor per input (" + std::to_string(inputs.size()) + ")");
    all.insert(all.end(), l.begin(), l.end());
  }
  // outputs[r][j] is input j of rank r: all-gather j fills column j
  std::vector<Body> parts;
  for (size_t j = 0; j < inputs.size(); j++) {
    std::vector<at::Tensor> column;
    for (auto& l : outputs)
      column.push_back(l[j]);
    checkSameShape(*this, name, column, inputs[j], getSize());
    parts.push_back(allgatherListBody(name, column, inputs[j]));
  }
  return launch(name, c10d::OpType::ALLGATHER_COALESCED, all, {}, groupOf(name, std::move(parts)));
}

c10::intrusive_ptr<c10d::Work> OrbitBackend::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                             std::vector<at::Tensor>& inputs,
                                                                             const c10d::AllgatherOptions& /*opts*/) {
  const char* name = "all_gather_into_tensor_coalesced";
  if (outputs.size() != inputs.size())
    failArg(name, std::to_string(outputs.size()) + " outputs for " + std::to_string(inputs.size()) + " inputs");
  std::vector<at::Tensor> all = inputs;
  all.insert(all.end(), outputs.begin(), outputs.end());
  std::vector<Body> parts;
  for (size_t i = 0; i < inputs.size(); i++) {
    if (outputs[i].numel() != inputs[i].numel() * getSize())
      failArg(name, "output " + std::to_string(i) + " needs world size x its input's elements");
    parts.push_back(allgatherTensorBody(name, outputs[i], inputs[i]));
  }
  return launch(name, c10d::OpType::COALESCED, all, outputs, groupOf(name, std::move(parts)));
}

c10::intrusive_ptr<c10d::Work> OrbitBackend::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                    std::vector<at::Tensor>& inputs,
                                                    const c10d::GatherOptions& opts) {
  const char* name = "gather";
  checkOne(*this, name, inputs.size());
  const int root = static_cast<int>(opts.rootRank);
  const bool is_root = root == getRank();
  at::Tensor in = inputs[0];
  std::vector<at::Tensor> outs;
  if (is_root) {
    checkOne(*this, name, outputs.size());
    outs = outputs[0];
    checkSameShape(*this, name, outs, in, getSize());
  } else if (!outputs.empty() && !outputs[0].empty()) {
    failArg(name, "gather_list is given on rank " + std::to_string(getRank()) + ", which is not the root (" +
                      std::to_string(root) + "); pass it on the root only");
  }
  std::vector<at::Tensor> all = outs;
  all.push_back(in);
  return launch(name, c10d::OpType::GATHER, all, outs, [=, this](orb_comm_t comm, orb_stream_t s) -> Post {
    Buf b = moving(in);
    at::Tensor flat = is_root ? flatLike(b.t, getSize()) : at::Tensor();
    void* dst = is_root && flat.numel() ? flat.data_ptr() : nullptr;
    ORB_TRY(name, orb_gather(b.ptr(), dst, b.count, b.dtype, root, comm, s), comm);
    return is_root ? unflatten(outs, flat, in.numel()) : nullptr;
  });
}

c10::intrusive_ptr<c10d::Work> OrbitBackend::scatter(std::vector<at::Tensor>& outputs,
                                                     std::vector<std::vector<at::Tensor>>& inputs,
                                                     const c10d::ScatterOptions& opts) {
  const char* name = "scatter";
  checkOne(*this, name, outputs.size());
  const int root = static_cast<int>(opts.rootRank);
  const bool is_root = root == getRank();
  at::Tensor out = outputs[0];
  std::vector<at::Tensor> ins;
  if (is_root) {
    checkOne(*this, name, inputs.size());
    ins = inputs[0];
    checkSameShape(*this, name, ins, out, getSize());
  } else if (!inputs.empty() && !inputs[0].empty()) {
    failArg(name, "scatter_list is given on rank " + std::to_string(getRank()) + ", which is not the root (" +
                      std::to_string(root) + "); pass it on the root only");
  }
  std::vector<at::Tensor> all = ins;
  all.push_back(out);
  return launch(name, c10d::OpType::SCATTER, all, {out}, [=, this](orb_comm_t comm, orb_stream_t s) -> Post {
    Buf o = moving(out);
    at::Tensor flat = is_root ? moving(catFlat(ins)).t : at::Tensor();
    const void* src = is_root && flat.numel() ? flat.data_ptr() : nullptr;
    ORB_TRY(name, orb_scatter(src, o.ptr(), o.count, o.dtype, root, comm, s), comm);
    return copyBack(out, o.t);
  });
}

c10::intrusive_ptr<c10d::Work> OrbitBackend::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                            std::vector<std::vector<at::Tensor>>& inputs,
                                                            const c10d::ReduceScatterOptions& opts) {
  const char* name = "reduce_scatter";
  checkOne(*this, name, outputs.size());
  checkOne(*this, name, inputs.size());
  at::Tensor out = outputs[0];
  std::vector<at::Tensor> ins = inputs[0];
  checkSameShape(*this, name, ins, out, getSize());
  c10d::ReduceOp rop = opts.reduceOp;
  checkReduction(*this, name, out.scalar_type(), rop);
  std::vector<at::Tensor> all = ins;
  all.push_back(out);
  return launch(name, c10d::OpType::REDUCE_SCATTER, all, {out}, [=, this](orb_comm_t comm, orb_stream_t s) -> Post {
    Reduction r = reducing(*this, name, catFlat(ins), rop);
    at::Tensor o = at::empty({out.numel()}, r.buf.t.options());
    ORB_TRY(name,
            orb_reduce_scatter(r.buf.ptr(), o.numel() ? o.data_ptr() : nullptr, r.buf.count / getSize(),
                               r.buf.dtype, r.op, comm, s),
            comm);
    return [out, o]() mutable { out.copy_(o.view(out.sizes())); };
  });
}

c10::intrusive_ptr<c10d::Work> OrbitBackend::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                  const c10d::ReduceScatterOptions& opts) {
  const char* name = "reduce_scatter_tensor";
  if (input.numel() != output.numel() * getSize() || output.scalar_type() != input.scalar_type())
    failArg(name, "the input has " + std::to_string(input.numel()) + " elements of " +
                      c10::toString(input.scalar_type()) + "; it needs world size x output = " +
                      std::to_string(output.numel() * getSize()) + " of " + c10::toString(output.scalar_type()));
  checkReduction(*this, name, output.scalar_type(), opts.reduceOp);
  return launch(name, c10d::OpType::_REDUCE_SCATTER_BASE, {output, input}, {output},
                reduceScatterTensorBody(name, output, input, opts.reduceOp));
}

c10::intrusive_ptr<c10d::Work> OrbitBackend::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::ReduceScatterOptions& opts) {
  const char* name = "reduce_scatter_tensor_coalesced";
  if (outputs.size() != inputs.size())
    failArg(name, std::to_string(outputs.size()) + " outputs for " + std::to_string(inputs.size()) + " inputs");
  std::vector<at::Tensor> all = inputs;
  all.insert(all.end(), outputs.begin(), outputs.end());
  std::vector<Body> parts;
  for (size_t i = 0; i < inputs.size(); i++) {
    if (inputs[i].numel() != outputs[i].numel() * getSize())
      failArg(name, "input " + std::to_string(i) + " needs world size x its output's elements");
    checkReduction(*this, name, outputs[i].scalar_type(), opts.reduceOp);
    parts.push_back(reduceScatterTensorBody(name, outputs[i], inputs[i], opts.reduceOp));
  }
  return launch(name, c10d::OpType::COALESCED, all, outputs, groupOf(name, std::move(parts)));
}

namespace {

// Split sizes along dim 0 (empty: equal blocks) as element counts and displacements.
void splitsToCounts(const OrbitBackend& be, const char* name, const char* which, const at::Tensor& t,
                    const std::vector<int64_t>& splits, int n, std::vector<size_t>& counts,
                    std::vector<size_t>& displs, size_t unit) {
  const int64_t rows = t.dim() ? t.size(0) : 1;
  const int64_t row = rows ? t.numel() / rows : 0;
  counts.assign(n, 0);
  displs.assign(n, 0);
  if (splits.empty()) {
    if (rows % n)
      be.failArg(name, std::string(which) + " has " + std::to_string(rows) + " rows, not a multiple of the world size " +
                           std::to_string(n) + "; pass split sizes");
    for (int i = 0; i < n; i++)
      counts[i] = static_cast<size_t>(rows / n * row) * unit;
  } else {
    if (static_cast<int>(splits.size()) != n)
      be.failArg(name, std::string(which) + " split sizes have " + std::to_string(splits.size()) +
                           " entries; they need one per rank (" + std::to_string(n) + ")");
    int64_t sum = 0;
    for (int i = 0; i < n; i++) {
      if (splits[i] < 0)
        be.failArg(name, std::string(which) + " split size " + std::to_string(i) + " is negative");
      counts[i] = static_cast<size_t>(splits[i] * row) * unit;
      sum += splits[i];
    }
    if (sum != rows)
      be.failArg(name, std::string(which) + " split sizes add up to " + std::to_string(sum) + " rows but the tensor has " +
                           std::to_string(rows));
  }
  for (int i = 1; i < n; i++)
    displs[i] = displs[i - 1] + counts[i - 1];
}

}  // namespace

c10::intrusive_ptr<c10d::Work> OrbitBackend::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                           std::vector<int64_t>& outputSplits,
                                                           std::vector<int64_t>& inputSplits,
                                                           const c10d::AllToAllOptions& /*opts*/) {
  const char* name = "all_to_all_single";
  if (output.scalar_type() != input.scalar_type())
    failArg(name, "input is " + std::string(c10::toString(input.scalar_type())) + " but output is " +
                      c10::toString(output.scalar_type()));
  const int n = getSize();
  at::Tensor out = output, in = input;
  orb_dtype_t d;
  const bool native = orbitDtype(in.scalar_type(), &d);
  const size_t unit = native ? 1 : in.element_size();  // bytes for dtypes orbit lacks
  std::vector<size_t> sc, sd, rc, rd;
  splitsToCounts(*this, name, "input", in, inputSplits, n, sc, sd, unit);
  splitsToCounts(*this, name, "output", out, outputSplits, n, rc, rd, unit);
  const bool even = inputSplits.empty() && outputSplits.empty();
  return launch(name, c10d::OpType::ALLTOALL_BASE, {out, in}, {out}, [=, this](orb_comm_t comm, orb_stream_t s) -> Post {
    Buf b = moving(in);
    // orbit's alltoallv takes no overlapping buffers: the output is always its own
    at::Tensor o = at::empty({out.numel()}, out.options().memory_format(c10::MemoryFormat::Contiguous));
    void* dst = o.numel() ? o.data_ptr() : nullptr;
    if (even)
      ORB_TRY(name, orb_alltoall(b.ptr(), dst, b.count / n, b.dtype, comm, s), comm);
    else
      ORB_TRY(name, orb_alltoallv(b.ptr(), sc.data(), sd.data(), dst, rc.data(), rd.data(), b.dtype, comm, s), comm);
    return [out, o]() mutable { out.copy_(o.view(out.sizes())); };
  });
}

c10::intrusive_ptr<c10d::Work> OrbitBackend::alltoall(std::vector<at::Tensor>& outputs,
                                                      std::vector<at::Tensor>& inputs,
                                                      const c10d::AllToAllOptions& /*opts*/) {
  const char* name = "all_to_all";
  const int n = getSize();
  if (static_cast<int>(outputs.size()) != n || static_cast<int>(inputs.size()) != n)
    failArg(name, "the lists have " + std::to_string(inputs.size()) + " inputs and " +
                      std::to_string(outputs.size()) + " outputs; they need one per rank (" + std::to_string(n) + ")");
  for (int i = 0; i < n; i++)
    if (inputs[i].scalar_type() != inputs[0].scalar_type() || outputs[i].scalar_type() != inputs[0].scalar_type())
      failArg(name, "every tensor of both lists must have one dtype");
  std::vector<at::Tensor> outs = outputs, ins = inputs, all = inputs;
  all.insert(all.end(), outputs.begin(), outputs.end());
  orb_dtype_t d;
  const bool native = orbitDtype(ins[0].scalar_type(), &d);
  const size_t unit = native ? 1 : ins[0].element_size();
  std::vector<size_t> sc(n), sd(n), rc(n), rd(n);
  for (int i = 0; i < n; i++) {
    sc[i] = static_cast<size_t>(ins[i].numel()) * unit;
    rc[i] = static_cast<size_t>(outs[i].numel()) * unit;
    if (i) {
      sd[i] = sd[i - 1] + sc[i - 1];
      rd[i] = rd[i - 1] + rc[i - 1];
    }
  }
  return launch(name, c10d::OpType::ALLTOALL, all, outs, [=, this](orb_comm_t comm, orb_stream_t s) -> Post {
    Buf b = moving(catFlat(ins));
    int64_t total = 0;
    for (const at::Tensor& t : outs)
      total += t.numel();
    at::Tensor o = at::empty({total}, outs[0].options().memory_format(c10::MemoryFormat::Contiguous));
    ORB_TRY(name,
            orb_alltoallv(b.ptr(), sc.data(), sd.data(), o.numel() ? o.data_ptr() : nullptr, rc.data(), rd.data(),
                          b.dtype, comm, s),
            comm);
    return [outs, o]() mutable {
      int64_t at = 0;
      for (at::Tensor& t : outs) {
        t.copy_(o.narrow(0, at, t.numel()).view(t.sizes()));
        at += t.numel();
      }
    };
  });
}

c10::intrusive_ptr<c10d::Work> OrbitBackend::send(std::vector<at::Tensor>& tensors, int dst, int tag) {
  const char* name = "send";
  checkOne(*this, name, tensors.size());
  if (tag < 0)
    failArg(name, "tag " + std::to_string(tag) + " is negative");
  at::Tensor t = tensors[0];
  return launch(name, c10d::OpType::SEND, tensors, {}, [=, this](orb_comm_t comm, orb_stream_t s) -> Post {
    Buf b = moving(t);
    ORB_TRY(name, orb_send_tagged(b.ptr(), b.count, b.dtype, dst, static_cast<uint32_t>(tag), comm, s), comm);
    return [b] {};  // keeps a staging copy alive until a grouped send has gone
  });
}

c10::intrusive_ptr<c10d::Work> OrbitBackend::recv(std::vector<at::Tensor>& tensors, int src, int tag) {
  const char* name = "recv";
  checkOne(*this, name, tensors.size());
  if (tag < 0)
    failArg(name, "tag " + std::to_string(tag) + " is negative");
  at::Tensor t = tensors[0];
  return launch(name, c10d::OpType::RECV, tensors, tensors, [=, this](orb_comm_t comm, orb_stream_t s) -> Post {
    Buf b = moving(t);
    ORB_TRY(name, orb_recv_tagged(b.ptr(), b.count, b.dtype, src, static_cast<uint32_t>(tag), comm, s), comm);
    return copyBack(t, b.t);
  });
}

c10::intrusive_ptr<c10d::Work> OrbitBackend::recvAnysource(std::vector<at::Tensor>& /*tensors*/, int /*tag*/) {
  failArg("recv", "orbit has no receive from any source: name the sending rank (recv(tensor, src=...))");
}

c10::intrusive_ptr<c10d::Work> OrbitBackend::barrier(const c10d::BarrierOptions& /*opts*/) {
  const char* name = "barrier";
  // a host barrier on the worker, after every host call issued before it
  return launch(name, c10d::OpType::BARRIER, {}, {}, [=, this](orb_comm_t comm, orb_stream_t) -> Post {
    ORB_TRY(name, orb_barrier(comm), comm);
    return nullptr;
  });
}

}  // namespace orbit_torch
