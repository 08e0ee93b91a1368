// CUDA resources of an evaluation: stream, events, the flush buffer, input sets, calls, and the
// reference's outputs.
#include "worker/evaluation.h"

namespace kp::worker {

void NativeEvaluator::Impl::begin_evaluation(const task::Task& t, const eval::EvalOptions& o, uint64_t s) {
  task = &t;
  options = &o;
  seed = s;
  poisoned = false;
  retire = false;
  threads_before_load = -1;
  scalars.clear();
  end_evaluation();
}

void NativeEvaluator::Impl::end_evaluation() {
  core.reset();
  ref_lib = cand_lib = nullptr;
  graph_views.clear();
  graph_refs.clear();
  sets.clear();
  ref_outputs.clear();
  prev_ref.clear();
  ref_workspace = DeviceBuffer();
  cand_workspace = DeviceBuffer();
}

int64_t NativeEvaluator::Impl::device_bytes_outside_harness() const {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return static_cast<int64_t>(total_bytes - free_bytes) - static_cast<int64_t>(DeviceBuffer::live_bytes().load());
}

void NativeEvaluator::Impl::retire_if_memory_left() {
  if (poisoned || outside_baseline < 0) return;
  const int64_t now = device_bytes_outside_harness();
  if (now < 0) return;
  // Other processes' memory counts too (cudaMemGetInfo is device-wide): a retire then only costs
  // a fresh worker.
  if (now - outside_baseline > kLeakRetireBytes) {
    std::fprintf(stderr, "kp-worker: %.1f MiB of device memory held beyond the harness's buffers after the evaluation "
                         "(the candidate left it allocated): this worker retires\n",
                 static_cast<double>(now - outside_baseline) / (1 << 20));
    retire = true;
  }
}

MaybeStop NativeEvaluator::Impl::ensure_resources() {
  if (stream) return std::nullopt;
  KP_STOP_IF(harness(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "creating a stream"));
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  const auto flush_bytes = static_cast<size_t>(eval::l2_flush_bytes(device.l2_bytes));
  KP_STOP_IF(harness(flush.allocate(flush_bytes), "allocating the L2 flush buffer"));
  KP_STOP_IF(harness(cudaMemset(flush.get(), 0, flush.bytes()), "clearing the L2 flush buffer"));
  return harness(scratch.allocate(8), "allocating scratch");
}

std::string compute_apps() {
  FILE* p = popen("nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader,nounits "
                  "2>/dev/null",
                  "r");
  if (!p) return "";
  std::string out;
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0 && out.size() < (1 << 20)) out.append(buf, n);
  pclose(p);
  return out;
}

MaybeStop NativeEvaluator::Impl::cuda_failure(cudaError_t e, const std::string& what) {
  if (e == cudaSuccess) return std::nullopt;
  if (is_sticky(e)) {
    poisoned = true;
    return Stop{Outcome::kCrash,
                fmt::format("{}: {} ({}); the CUDA context is lost", what, cudaGetErrorName(e), cudaGetErrorString(e))};
  }
  if (e == cudaErrorMemoryAllocation) {
    // Another process holding the GPU (a worker left behind, another user) is the machine's
    // failure: gpu_unavailable, retried by the judge on a fresh worker, never the verdict.
    cudaGetLastError();
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) cudaGetLastError();
    const eval::GpuHolders h = eval::parse_gpu_holders(compute_apps(), static_cast<int>(getpid()));
    const uint64_t elsewhere = eval::bytes_held_elsewhere(h, total_bytes, free_bytes, DeviceBuffer::live_bytes());
    if (total_bytes > 0 && eval::held_elsewhere(elsewhere)) {
      retire = true;  // the retry starts on a fresh worker, holding nothing of this one
      return Stop{Outcome::kGpuUnavailable,
                  fmt::format("{}: out of device memory while {:.1f} GiB of the GPU are held outside this worker{}; "
                              "the GPU is not free, the candidate is not at fault",
                              what, static_cast<double>(elsewhere) / (1 << 30),
                              h.description.empty() ? "" : " (nvidia-smi: " + h.description + ")")};
    }
    return Stop{Outcome::kRuntimeError, fmt::format("{}: out of device memory", what)};
  }
  return Stop{Outcome::kRuntimeError, fmt::format("{}: {} ({})", what, cudaGetErrorName(e), cudaGetErrorString(e))};
}

MaybeStop NativeEvaluator::Impl::harness(cudaError_t e, const std::string& what) {
  return cuda_failure(e, "kernelpro " + what);
}

kp_args NativeEvaluator::Impl::make_args(TensorSet& set, DeviceBuffer& workspace) {
  kp_args a{};
  a.abi_version = KP_ABI_VERSION;
  a.num_inputs = static_cast<int32_t>(set.in_desc.size());
  a.inputs = set.in_desc.data();
  a.num_outputs = static_cast<int32_t>(set.out_desc.size());
  a.outputs = set.out_desc.data();
  a.num_scalars = static_cast<int32_t>(scalars.size());
  a.scalars = scalars.data();
  a.workspace = workspace.get();
  a.workspace_bytes = workspace.bytes();
  a.stream = stream;
  return a;
}

MaybeStop NativeEvaluator::Impl::call(const CandidateLibrary& lib, kp_args& args, const char* who) {
  args.message[0] = '\0';
  int status = lib.run()(&args);
  args.message[sizeof(args.message) - 1] = '\0';
  if (status != KP_OK)
    return Stop{Outcome::kRuntimeError, fmt::format("{} kp_run returned {} ({}){}{}", who, status, status_name(status),
                                                    args.message[0] ? ": " : "", args.message)};
  return cuda_failure(cudaGetLastError(), fmt::format("{} launch", who));
}

MaybeStop NativeEvaluator::Impl::call_and_sync(const CandidateLibrary& lib, kp_args& args, const char* who) {
  KP_STOP_IF(call(lib, args, who));
  return cuda_failure(cudaDeviceSynchronize(), fmt::format("{} execution", who));
}

MaybeStop NativeEvaluator::Impl::allocate_set(TensorSet& set) {
  for (const auto& s : task->inputs) {
    set.inputs.emplace_back();
    KP_STOP_IF(harness(set.inputs.back().allocate(s.bytes()), "allocating input " + s.name));
    set.in_desc.push_back(describe(s, set.inputs.back().get()));
  }
  for (const auto& s : task->outputs) {
    set.outputs.emplace_back();
    KP_STOP_IF(harness(set.outputs.back().allocate(s.bytes()), "allocating output " + s.name));
    set.out_desc.push_back(describe(s, set.outputs.back().get()));
  }
  return std::nullopt;
}

MaybeStop NativeEvaluator::Impl::fill_inputs(TensorSet& set, uint64_t draw) {
  for (size_t i = 0; i < task->inputs.size(); ++i) {
    const auto& s = task->inputs[i];
    KP_STOP_IF(
        harness(fill_random(set.inputs[i].get(), s.dtype, s.numel(), s.init, seed + draw * 1000003ull, i, stream),
                "generating input " + s.name));
  }
  return harness(cudaStreamSynchronize(stream), "generating inputs");
}

MaybeStop NativeEvaluator::Impl::poison_outputs(TensorSet& set, bool sync) {
  for (size_t i = 0; i < task->outputs.size(); ++i) {
    const auto& s = task->outputs[i];
    KP_STOP_IF(harness(
        fill_pattern(set.outputs[i].get(), task::dtype_size(s.dtype), s.numel(), eval::poison_bits(s.dtype), stream),
        "poisoning output " + s.name));
  }
  return sync ? harness(cudaStreamSynchronize(stream), "poisoning outputs") : std::nullopt;
}

MaybeStop NativeEvaluator::Impl::input_checksums(TensorSet& set, std::vector<uint64_t>* sums) {
  sums->clear();
  for (size_t i = 0; i < set.inputs.size(); ++i) {
    uint64_t v = 0;
    KP_STOP_IF(cuda_failure(
        checksum(set.inputs[i].get(), set.inputs[i].bytes(), static_cast<uint64_t*>(scratch.get()), &v, stream),
        "checksumming inputs"));
    sums->push_back(v);
  }
  return std::nullopt;
}

MaybeStop NativeEvaluator::Impl::run_reference(const CandidateLibrary& ref, size_t k, eval::WorkerReport* report) {
  // The reference writes into its own buffers, viewed through a copy of the descriptors.
  TensorSet view;
  view.in_desc = sets[k].in_desc;
  for (size_t i = 0; i < task->outputs.size(); ++i)
    view.out_desc.push_back(describe(task->outputs[i], ref_outputs[k][i].get()));
  kp_args ra = make_args(view, ref_workspace);
  if (MaybeStop s = call_and_sync(ref, ra, "the reference")) {
    s->reason = "the task's reference failed: " + s->reason;
    report->reference_failed = true;
    return s;
  }
  return std::nullopt;
}

MaybeStop NativeEvaluator::Impl::setup(const CandidateLibrary& ref, const CandidateLibrary* cand) {
  for (const auto& s : task->scalars) scalars.push_back({s.name.c_str(), s.is_integer ? 1 : 0, s.f, s.i});
  size_t free_bytes = 0, total_bytes = 0;
  KP_STOP_IF(harness(cudaMemGetInfo(&free_bytes, &total_bytes), "querying memory"));
  uint64_t io = task->io_bytes(), out_bytes = 0;
  for (const auto& s : task->outputs) out_bytes += s.bytes();
  // Each set: its inputs, its outputs and the reference's outputs for it.
  const int n_sets = eval::input_sets_that_fit(io + out_bytes, free_bytes, options->input_sets);
  sets.resize(static_cast<size_t>(n_sets));
  for (auto& s : sets) KP_STOP_IF(allocate_set(s));
  ref_outputs.resize(sets.size());
  for (auto& bufs : ref_outputs) {
    for (const auto& s : task->outputs) {
      bufs.emplace_back();
      KP_STOP_IF(harness(bufs.back().allocate(s.bytes()), "allocating reference outputs"));
    }
  }
  kp_args probe = make_args(sets[0], ref_workspace);
  size_t rb = ref.workspace_bytes(probe), cb = cand ? cand->workspace_bytes(probe) : 0;
  if (rb) KP_STOP_IF(harness(ref_workspace.allocate(rb), "allocating the reference workspace"));
  if (cb)
    KP_STOP_IF(
        cuda_failure(cand_workspace.allocate(cb), fmt::format("allocating the candidate's workspace of {} bytes", cb)));
  return std::nullopt;
}

MaybeStop NativeEvaluator::Impl::flush_l2() {
  KP_STOP_IF(harness(evict_l2(flush.get(), flush.bytes(), stream), "flushing L2"));
  cudaCtxResetPersistingL2Cache();
  cudaGetLastError();
  return harness(cudaStreamSynchronize(stream), "flushing L2");
}

}  // namespace kp::worker
