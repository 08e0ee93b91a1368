#include "judge/session.h"

#include <sys/random.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "judge/device_ops.h"
#include "judge/nvml_energy.h"
#include "task/dtype.h"
#include "verdict/statistics.h"
#include "verdict/timing_rule.h"
#include "verdict/worker_plan.h"

namespace kp::judge {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// A seed no one in the process saw coming: drawn from the OS when the call is about to be made.
uint64_t os_random() {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, 0) != static_cast<ssize_t>(sizeof v))
    v = static_cast<uint64_t>(Clock::now().time_since_epoch().count()) * 0x9E3779B97F4A7C15ull;
  return v;
}

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h;
}

int64_t numel(const kpj_tensor& t) {
  int64_t n = 1;
  for (int i = 0; i < t.rank; ++i) n *= t.shape[i];
  return n;
}

size_t nbytes(const kpj_tensor& t) {
  return static_cast<size_t>(numel(t)) * task::dtype_size(static_cast<task::DType>(t.dtype));
}

std::vector<int64_t> shape_of(const kpj_tensor& t) { return {t.shape, t.shape + t.rank}; }

std::string shape_text(const kpj_tensor& t) {
  std::string s = "[";
  for (int i = 0; i < t.rank; ++i) s += (i ? ", " : "") + std::to_string(t.shape[i]);
  return s + "]";
}

bool valid(const kpj_tensors& ts) {
  if (ts.count < 0 || ts.count > KPJ_MAX_TENSORS) return false;
  for (int i = 0; i < ts.count; ++i) {
    const kpj_tensor& t = ts.t[i];
    if (t.dtype < 0 || t.dtype > 6 || t.rank < 0 || t.rank > KPJ_MAX_RANK) return false;
    for (int d = 0; d < t.rank; ++d)
      if (t.shape[d] < 0) return false;
  }
  return true;
}

// One fingerprint of a tensor list from its per-tensor checksums (and sizes).
uint64_t mix_sums(const std::vector<uint64_t>& sums, const kpj_tensors& ts) {
  uint64_t h = 0x243F6A8885A308D3ull;
  for (int i = 0; i < ts.count; ++i) h = mix(mix(h, sums[static_cast<size_t>(i)]), nbytes(ts.t[i]));
  return h;
}

bool overlaps(const kpj_tensor& a, const kpj_tensor& b) {
  auto lo_a = reinterpret_cast<uintptr_t>(a.data), lo_b = reinterpret_cast<uintptr_t>(b.data);
  size_t na = nbytes(a), nb = nbytes(b);
  return na && nb && lo_a < lo_b + nb && lo_b < lo_a + na;
}

// NVML, opened once per process (nvmlInit costs tens of milliseconds): null with the reason when
// it is unavailable.
Nvml* process_nvml(std::string* why) {
  static std::unique_ptr<Nvml> nvml;
  static std::string error;
  static bool tried = false;
  if (!tried) {
    tried = true;
    char bus[32] = {};
    int device = 0;
    cudaGetDevice(&device);
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, device) != cudaSuccess) {
      cudaGetLastError();
      error = "the device's PCI bus id is unknown";
    } else if (auto n = Nvml::open(bus); n.ok()) {
      nvml = std::move(*n);
    } else {
      error = n.error().message;
    }
  }
  if (!nvml && why) *why = error;
  return nvml.get();
}

uint64_t epoch_us() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

// The first and last 64 bytes of t (fewer when it is smaller), copied to the host after its
// stream's work: how the core tells a buffer left as it flipped it.
std::vector<unsigned char> edge_bytes(const kpj_tensor& t) {
  const size_t b = nbytes(t);
  const size_t n = std::min<size_t>(b, 64);
  std::vector<unsigned char> out(2 * n);
  if (n == 0) return out;
  cudaDeviceSynchronize();
  if (cudaMemcpy(out.data(), t.data, n, cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaMemcpy(out.data() + n, static_cast<const unsigned char*>(t.data) + (b - n), n, cudaMemcpyDeviceToHost) !=
          cudaSuccess) {
    cudaGetLastError();
    out.clear();
  }
  return out;
}

}  // namespace

cudaError_t compare_tensor(const kpj_tensor& out, const kpj_tensor& want, const task::Tolerance& tol,
                           CompareScratch& scratch, cudaStream_t stream, eval::OutputCheck* check) {
  const auto dtype = static_cast<task::DType>(out.dtype);
  if (out.dtype != want.dtype || shape_of(out) != shape_of(want)) {
    *check = eval::OutputCheck{};
    check->elements = numel(want);
    check->reason = out.dtype != want.dtype
                        ? fmt::format("dtype {} but the reference's is {}", task::to_string(dtype),
                                      task::to_string(static_cast<task::DType>(want.dtype)))
                        : fmt::format("shape {} but the reference's is {} (shapes must match exactly)", shape_text(out),
                                      shape_text(want));
    return cudaSuccess;
  }
  eval::OutputTally tally;
  if (cudaError_t e = device_tally(out.data, want.data, dtype, numel(out), tol, scratch, stream, &tally);
      e != cudaSuccess)
    return e;
  *check = eval::conclude_check(tally, dtype, tol, shape_of(out));
  return cudaSuccess;
}

Session::Session(const kpj_config& config) : config_(config) {
  if (config_.sets < 1 || config_.sets > 64) {
    error_ = fmt::format("kpj_config.sets is {}; it must be 1 to 64", config_.sets);
    return;
  }
  stream_ = reinterpret_cast<cudaStream_t>(config_.stream);
  flush_bytes_ = eval::l2_flush_bytes(static_cast<int64_t>(config_.l2_bytes));
  cudaError_t e = cudaMalloc(&flush_, flush_bytes_);
  if (e == cudaSuccess) e = cudaMemset(flush_, 0, flush_bytes_);
  if (e == cudaSuccess) e = cudaMalloc(reinterpret_cast<void**>(&scratch_), sizeof(uint64_t));
  if (e == cudaSuccess) e = cudaEventCreate(&start_);
  if (e == cudaSuccess) e = cudaEventCreate(&end_);
  if (e == cudaSuccess) e = compare_.ensure();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e != cudaSuccess) error_ = fmt::format("the judge core could not set up on the GPU: {}", cudaGetErrorString(e));
}

Session::~Session() {
  if (start_) cudaEventDestroy(start_);
  if (end_) cudaEventDestroy(end_);
  if (flush_) cudaFree(flush_);
  if (scratch_) cudaFree(scratch_);
}

void Session::taint(const std::string& why) {
  if (tainted_.empty()) tainted_ = why;
}

void Session::note_stop(std::string outcome, std::string reason, std::string cheat) {
  if (finished_ || in_callback_) {
    taint("a stop was reported to the judge core after its verdict or from inside its callbacks");
    return;
  }
  static const char* const kStops[] = {"compile_error", "load_error", "runtime_error", "crash", "timeout",
                                       "incorrect", "rejected", "gpu_unavailable"};
  if (std::find(std::begin(kStops), std::end(kStops), outcome) == std::end(kStops)) {
    taint("a stop of outcome \"" + outcome + "\" was reported to the judge core, which is no stop");
    return;
  }
  // A machine's failure is retried; a rejection found after it (a changed harness) is not.
  if (stop_ && stop_->outcome == "gpu_unavailable" && outcome == "rejected") stop_.reset();
  stop(std::move(outcome), std::move(reason), std::move(cheat));
}

int Session::stop(std::string outcome, std::string reason, std::string cheat) {
  if (!stop_) stop_ = CoreStop{std::move(outcome), std::move(reason), std::move(cheat)};
  return 2;
}

int Session::harness_failure(cudaError_t e, const char* what) {
  // An error here may be the candidate's (a sticky error from its kernels surfaces at the next
  // synchronization), so a lost context is a crash; anything else is the harness's runtime error.
  const bool sticky = e == cudaErrorIllegalAddress || e == cudaErrorLaunchFailure || e == cudaErrorIllegalInstruction ||
                      e == cudaErrorMisalignedAddress || e == cudaErrorHardwareStackError || e == cudaErrorInvalidPc ||
                      e == cudaErrorAssert || e == cudaErrorLaunchTimeout || e == cudaErrorUnknown;
  return stop(sticky ? "crash" : "runtime_error",
              fmt::format("{}: {} ({}){}", what, cudaGetErrorName(e), cudaGetErrorString(e),
                          sticky ? "\n(the CUDA context is lost)" : ""));
}

std::optional<std::vector<uint64_t>> Session::checksums(const kpj_tensors& ts) {
  std::vector<uint64_t> sums(static_cast<size_t>(ts.count), 0);
  for (int i = 0; i < ts.count; ++i) {
    const size_t b = nbytes(ts.t[i]);
    if (b && checksum(ts.t[i].data, b, scratch_, &sums[i], stream_) != cudaSuccess) return std::nullopt;
  }
  return sums;
}

std::optional<uint64_t> Session::fingerprint(const kpj_tensors& ts) {
  auto sums = checksums(ts);
  if (!sums) return std::nullopt;
  return mix_sums(*sums, ts);
}

int Session::refresh_set(int k, const Callbacks& cb, const char* when, std::optional<uint64_t> given) {
  kpj_tensors ins{};
  // A seed no earlier call had, within the adapter's seed space (KernelBench's set_seed takes
  // 32 bits): a repeated input then means a refresh that did not refresh, never chance.
  uint64_t seed = given.value_or(0);
  if (given) {
    if (!seeds_.insert(seed).second)
      return stop("runtime_error", fmt::format("the seed of {} was handed out before: trial seeds must be distinct", when));
  } else {
    do {
      seed = os_random();
      if (config_.seed_space > 0) seed %= config_.seed_space;
    } while (!seeds_.insert(seed).second);
  }
  in_callback_ = true;
  const int rc = cb.refresh(cb.ctx, k, seed, &ins);
  in_callback_ = false;
  if (rc != KPJ_CALL_OK) return KPJ_CALLBACK_FAILED;
  if (!valid(ins)) return stop("runtime_error", "the adapter described the inputs with a bad dtype, rank or count");
  auto sums = checksums(ins);
  if (!sums) return harness_failure(cudaGetLastError(), "fingerprinting the inputs");
  const uint64_t fp = mix_sums(*sums, ins);
  if (config_.inputs_vary && !seen_inputs_.insert(fp).second) {
    taint(fmt::format("the inputs of {} repeat inputs an earlier call had, although every call is given fresh ones: "
                      "the harness's input refresh was changed",
                      when));
    return 2;
  }
  inputs_[k] = ins;
  input_print_[k] = fp;
  input_sums_[k] = std::move(*sums);
  return 0;
}

int Session::one_timed_call(int role, int k, const Callbacks& cb, int index, double* event_s, double* wall_s,
                            double* tail_s, kpj_tensors* outs) {
  const char* who = role == KPJ_CANDIDATE ? "the candidate" : "the reference";
  // A cold, unreserved L2: the flush reads 4x the L2; no persisting lines, no access window.
  if (cudaError_t e = evict_l2(flush_, flush_bytes_, stream_); e != cudaSuccess) return harness_failure(e, "flushing L2");
  cudaStreamAttrValue window{};
  window.accessPolicyWindow.num_bytes = 0;
  cudaStreamSetAttribute(stream_, cudaStreamAttributeAccessPolicyWindow, &window);
  cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
  cudaCtxResetPersistingL2Cache();
  cudaGetLastError();  // either may be unsupported; nothing is left to clear then
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) return harness_failure(e, "before a timed call");
  const auto t0 = Clock::now();
  if (cudaError_t e = cudaEventRecord(start_, stream_); e != cudaSuccess) return harness_failure(e, "recording an event");
  in_callback_ = true;
  const int rc = cb.call(cb.ctx, role, k);
  in_callback_ = false;
  if (rc != KPJ_CALL_OK) return KPJ_CALLBACK_FAILED;
  if (cudaError_t e = cudaEventRecord(end_, stream_); e != cudaSuccess) return harness_failure(e, "recording an event");
  if (cudaError_t e = cudaEventSynchronize(end_); e != cudaSuccess)
    return harness_failure(e, fmt::format("{}'s timed call {}", who, index).c_str());
  const auto t1 = Clock::now();
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess)
    return harness_failure(e, fmt::format("{}'s timed call {}", who, index).c_str());
  const auto t2 = Clock::now();
  float ms = 0;
  if (cudaError_t e = cudaEventElapsedTime(&ms, start_, end_); e != cudaSuccess) return harness_failure(e, "reading events");
  *event_s = ms * 1e-3;
  *wall_s = seconds_between(t0, t2);
  *tail_s = seconds_between(t1, t2);
  *outs = kpj_tensors{};
  in_callback_ = true;
  const int described = cb.outputs(cb.ctx, role, outs);
  in_callback_ = false;
  if (described != KPJ_CALL_OK) return KPJ_CALLBACK_FAILED;
  if (!valid(*outs)) return stop("runtime_error", "the adapter described the outputs with a bad dtype, rank or count");
  if (role != KPJ_CANDIDATE) return 0;
  // What survives the flush: the candidate set aside persisting L2 or a window on the stream.
  size_t limit = 0;
  cudaStreamAttrValue after{};
  const bool has_limit = cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize) == cudaSuccess && limit > 0;
  const bool has_window =
      cudaStreamGetAttribute(stream_, cudaStreamAttributeAccessPolicyWindow, &after) == cudaSuccess &&
      after.accessPolicyWindow.num_bytes > 0;
  cudaGetLastError();
  if (has_limit || has_window)
    return stop("rejected",
                fmt::format("the candidate set aside persisting L2 ({}) in timed call {}, which survives the L2 flush "
                            "between timed calls; timed calls must start from a cold cache",
                            has_limit ? fmt::format("a limit of {} bytes", limit)
                                      : fmt::format("an access-policy window of {} bytes", after.accessPolicyWindow.num_bytes),
                            index),
                "persisting_l2");
  return 0;
}

cudaError_t Session::compare_output(const kpj_tensor& out, const kpj_tensor& want, eval::OutputCheck* check) {
  const task::Tolerance tol{config_.tolerance[out.dtype][0], config_.tolerance[out.dtype][1],
                            config_.tolerance[out.dtype][2]};
  return compare_tensor(out, want, tol, compare_, stream_, check);
}

int Session::check_outputs(Phase phase, int k, const kpj_tensors& got, const Callbacks& cb, int index) {
  const bool trial = phase == Phase::kTrial;
  const std::string call = trial ? fmt::format("trial {}", index) : fmt::format("timed call {}", index);
  if (trial) checks_.clear();  // the report's checks are this trial's, as far as it got
  const kpj_tensors& ins = inputs_[k];
  for (int j = 0; j < got.count; ++j)
    for (int i = 0; i < ins.count; ++i)
      if (overlaps(got.t[j], ins.t[i]))
        return stop("rejected",
                    fmt::format("output {} of {} shares memory with input {}: it is an alias of the input, not a "
                                "computed result",
                                j, call, i),
                    "aliased_output");
  auto after = checksums(ins);
  if (!after) return harness_failure(cudaGetLastError(), "fingerprinting the inputs");
  if (mix_sums(*after, ins) != input_print_[k]) {
    size_t i = 0;
    while (i + 1 < after->size() && i < input_sums_[k].size() && (*after)[i] == input_sums_[k][i]) ++i;
    mutated_input_ = fmt::format("input {}", i);
    return stop("incorrect", fmt::format("{} wrote to input {} (its fingerprint changed during the call); inputs are "
                                         "read-only",
                                         trial ? fmt::format("the candidate's call in {}", call) : call, i),
                "input_mutation");
  }
  // The candidate's outputs as its call left them: they must be the same after the reference
  // has run (nothing of the candidate's may finish its work while the reference runs).
  auto outputs_before = fingerprint(got);
  if (!outputs_before) return harness_failure(cudaGetLastError(), "fingerprinting the outputs");
  kpj_tensors want{};
  in_callback_ = true;
  int rc = cb.call(cb.ctx, KPJ_REFERENCE, k);
  if (rc == KPJ_CALL_OK) rc = cb.outputs(cb.ctx, KPJ_REFERENCE, &want);
  in_callback_ = false;
  if (rc != KPJ_CALL_OK) return KPJ_CALLBACK_FAILED;
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) return harness_failure(e, "the reference's call");
  auto outputs_after = fingerprint(got);
  if (!outputs_after) return harness_failure(cudaGetLastError(), "fingerprinting the outputs");
  if (*outputs_after != *outputs_before)
    return stop("rejected",
                fmt::format("the outputs of {} changed while the reference ran, after the call had returned: its work "
                            "was finished by other code later (deferred), not by the call",
                            call),
                "batched_calls");
  if (!valid(want)) return stop("runtime_error", "the adapter described the reference's outputs badly");
  if (want.count != got.count)
    return trial ? stop("incorrect", fmt::format("{} outputs in {} but the reference returns {}", got.count, call,
                                                 want.count))
                 : stop("rejected",
                        fmt::format("{} returned {} outputs where the reference returns {}, although the correctness "
                                    "trials passed",
                                    call, got.count, want.count),
                        "batched_calls");
  for (int j = 0; j < got.count; ++j) {
    const kpj_tensor& o = got.t[j];
    const kpj_tensor& w = want.t[j];
    if (o.dtype != w.dtype || shape_of(o) != shape_of(w)) {
      const std::string what =
          fmt::format("output {} of {} has shape {} and dtype {} where the reference's has {} and {}", j, call,
                      shape_text(o), task::to_string(static_cast<task::DType>(o.dtype)), shape_text(w),
                      task::to_string(static_cast<task::DType>(w.dtype)));
      return trial ? stop("incorrect", what) : stop("rejected", what, "batched_calls");
    }
    eval::OutputCheck c;
    if (cudaError_t e = compare_output(o, w, &c); e != cudaSuccess) return harness_failure(e, "comparing outputs");
    if (trial) checks_.push_back(c);
    if (!c.passed && c.reference_nonfinite > 0) {
      const bool first = !stop_;
      stop("runtime_error", fmt::format("the reference produced {} NaN/Inf values on the inputs of {}: the problem "
                                        "cannot judge a candidate on them",
                                        c.reference_nonfinite, call));
      if (first) stop_->reference_failed = true;
      return 2;
    }
    if (!c.passed)
      return trial ? trial_failure(k, j, o, c, *outputs_before, cb, index) : timed_failure(k, j, o, c, index);
  }
  if (trial && cb.look) {  // the adapter's own look at a passing trial, before its outputs are flipped
    in_callback_ = true;
    rc = cb.look(cb.ctx, KPJ_TRIAL_PASSED, k, -1, nullptr, 0);
    in_callback_ = false;
    if (rc != KPJ_CALL_OK) return KPJ_CALLBACK_FAILED;
  }
  if (trial) trial_results_.insert(*outputs_before);
  if (cudaError_t e = flip_outputs(got); e != cudaSuccess) return harness_failure(e, "flipping a checked output");
  last_output_bytes_ = 0;
  for (int j = 0; j < got.count; ++j) last_output_bytes_ += nbytes(got.t[j]);
  if (cudaError_t e = cudaStreamSynchronize(stream_); e != cudaSuccess) return harness_failure(e, "after a check");
  return 0;
}

cudaError_t Session::flip_outputs(const kpj_tensors& got) {
  // Each byte once: outputs that share memory ((y, y), or a view of another) would be put back by
  // a second flip. The ranges are merged, flipped, and only then is each buffer's edge recorded.
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  for (int j = 0; j < got.count; ++j)
    if (const size_t b = nbytes(got.t[j]); b > 0) {
      const auto lo = reinterpret_cast<uintptr_t>(got.t[j].data);
      ranges.emplace_back(lo, lo + b);
    }
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<uintptr_t, uintptr_t>> merged;
  for (const auto& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  for (const auto& [lo, hi] : merged)
    if (cudaError_t e = flip_bits(reinterpret_cast<void*>(lo), hi - lo, stream_); e != cudaSuccess) return e;
  for (int j = 0; j < got.count; ++j)
    if (returned_.size() < 4096 || returned_.count(got.t[j].data)) returned_[got.t[j].data] = edge_bytes(got.t[j]);
  return cudaSuccess;
}

int Session::trial_failure(int k, int j, const kpj_tensor& o, const eval::OutputCheck& c, uint64_t outputs_print,
                           const Callbacks& cb, int index) {
  auto it = returned_.find(o.data);
  const bool kept = it != returned_.end() && edge_bytes(o) == it->second;
  std::string reason = fmt::format("output {} in trial {}: {}", j, index, c.reason);
  if (kept || trial_results_.count(outputs_print))
    return stop("incorrect",
                reason + " -- and it is an earlier trial's output, on different inputs: results are cached across calls",
                "result_cache");
  const eval::FailureKind kind = eval::failure_kind(c, static_cast<task::DType>(o.dtype));
  if (!kind.hint.empty()) reason += " (" + kind.hint + ")";
  if (kind.cheat.empty() && cb.look) {  // a plain wrong answer: the adapter may say more of it
    char note[1024] = {};
    in_callback_ = true;
    const int rc = cb.look(cb.ctx, KPJ_TRIAL_FAILED, k, j, note, sizeof note);
    in_callback_ = false;
    note[sizeof note - 1] = '\0';
    if (rc == KPJ_CALL_OK && note[0]) reason += std::string("; ") + note;
  }
  return stop("incorrect", reason, kind.cheat);
}

int Session::timed_failure(int k, int j, const kpj_tensor& o, const eval::OutputCheck& c, int index) {
  auto it = returned_.find(o.data);
  const bool kept = it != returned_.end() && edge_bytes(o) == it->second;
  // Grossly wrong (unwritten, non-finite, constant, or far off in norm): work skipped or served
  // from elsewhere. A near miss on fresh inputs is an honest kernel's numerics.
  const bool gross = c.unwritten > 0 || c.nonfinite > 0 || c.constant_output || c.rel_norm_error > 0.5;
  if (!kept && !gross)
    return stop("incorrect", fmt::format("output {} of timed call {} (input set {}, fresh inputs) is outside the "
                                         "tolerance: {}",
                                         j, index, k + 1, c.reason));
  const std::string reason =
      fmt::format("output {} of timed call {} (input set {}, fresh inputs no call had seen) is wrong although the "
                  "correctness trials passed: {}; ",
                  j, index, k + 1, c.reason);
  if (kept)
    return stop("rejected",
                reason + "it is a buffer an earlier call returned, still holding that call's values (flipped after "
                         "its check): results are cached across calls",
                "result_cache");
  return stop("rejected",
              reason + "work is deferred to, batched with or cached from other calls, or the call behaves "
                       "differently when it is timed",
              "batched_calls");
}

int Session::trials(const kpj_trials_config& config, const Callbacks& cb) {
  if (in_callback_ || finished_ || trials_done_ || timed_[KPJ_CANDIDATE]) {
    taint(in_callback_ ? "the correctness trials were started from inside one of the judge core's callbacks"
                       : "the correctness trials were started a second time, or after the timing or the verdict");
    return 2;
  }
  trials_done_ = true;
  if (stop_) return 2;
  if (config.count < 1 || !config.seeds) return stop("runtime_error", "kpj_trials: no trials, or no seeds for them");
  for (int t = 0; t < config.count; ++t) {
    const std::string when = fmt::format("trial {}", t + 1);
    if (int rc = refresh_set(0, cb, when.c_str(), config.seeds[t])) return rc;
    in_callback_ = true;
    int rc = cb.call(cb.ctx, KPJ_CANDIDATE, 0);
    in_callback_ = false;
    if (rc != KPJ_CALL_OK) return KPJ_CALLBACK_FAILED;
    if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess)
      return harness_failure(e, fmt::format("the candidate's call in {}", when).c_str());
    kpj_tensors outs{};
    in_callback_ = true;
    rc = cb.outputs(cb.ctx, KPJ_CANDIDATE, &outs);
    in_callback_ = false;
    if (rc != KPJ_CALL_OK) return KPJ_CALLBACK_FAILED;
    if (!valid(outs)) return stop("runtime_error", "the adapter described the outputs with a bad dtype, rank or count");
    if (int rc2 = check_outputs(Phase::kTrial, 0, outs, cb, t + 1)) return rc2;
    trials_run_ = t + 1;
  }
  return 0;
}

int Session::time(int role, const Callbacks& cb) {
  if (in_callback_) {
    taint("the judge core's timing was started from inside one of its own callbacks (the candidate's code)");
    return 2;
  }
  if (finished_) {
    taint("the judge core's timing was started after its verdict");
    return 2;
  }
  if (role != KPJ_CANDIDATE && role != KPJ_REFERENCE) return stop("runtime_error", "kpj_time: an unknown role");
  if (timed_[role]) {
    taint(fmt::format("the {} was timed a second time in one evaluation", role == KPJ_CANDIDATE ? "candidate" : "reference"));
    return 2;
  }
  timed_[role] = true;
  if (stop_) return 2;
  return time_inner(role, cb);
}

int Session::time_inner(int role, const Callbacks& cb) {
  const bool candidate = role == KPJ_CANDIDATE;
  eval::TimingReport& t = timing_[role];
  t.method = "events";
  t.input_sets = config_.sets;
  t.l2_flush_bytes = static_cast<int64_t>(flush_bytes_);
  eval::EvalOptions options;
  options.warmup_calls = config_.warmup_calls;
  options.min_trials = config_.min_trials;
  options.max_trials = config_.max_trials;
  options.median_ci = config_.median_ci;
  options.timing_budget_s = config_.timing_budget_s;
  options.timing_cap_s = config_.timing_cap_s;
  options.wall_ratio = config_.wall_ratio;
  options.wall_slack_us = config_.wall_slack_us;
  int index = 0;
  // One call: fresh inputs, the timed call, and for the candidate its check.
  auto one = [&](const char* kind, double* e, double* w, double* tail) -> int {
    const int k = index % config_.sets;
    ++index;
    const std::string when = fmt::format("{} {}", kind, index);
    if (int rc = refresh_set(k, cb, when.c_str())) return rc;
    kpj_tensors outs{};
    if (int rc = one_timed_call(role, k, cb, index, e, w, tail, &outs)) return rc;
    if (candidate)
      if (int rc = check_outputs(Phase::kTimed, k, outs, cb, index)) return rc;
    return 0;
  };
  const int warm = std::max(config_.warmup_calls, 1);
  for (int i = 0; i < warm; ++i) {
    double e = 0, w = 0, tail = 0;
    if (int rc = one("warm-up call", &e, &w, &tail)) return rc;
  }
  t.warmup_calls = warm;
  const auto loop_start = Clock::now();
  std::vector<double> tails;
  eval::SamplingStop decision = eval::SamplingStop::kContinue;
  while (decision == eval::SamplingStop::kContinue) {
    double e = 0, w = 0, tail = 0;
    if (int rc = one("timed call", &e, &w, &tail)) return rc;
    t.samples_s.push_back(e);
    t.wall_s.push_back(w);
    tails.push_back(tail);
    decision = eval::sampling_decision(t.samples_s, seconds_between(loop_start, Clock::now()), options);
  }
  t.stop = eval::to_string(decision);
  t.median_ci_rel = eval::median_interval95(t.samples_s).relative_half_width();
  t.loop_wall_s = seconds_between(loop_start, Clock::now());
  if (!candidate) return 0;
  const double median = eval::summarize(t.samples_s).median;
  const double wall = eval::summarize(t.wall_s).median;
  const double tail = eval::summarize(tails).median;
  tail_median_s_ = tail;
  if (eval::tail_says_work_escaped(tail, median))
    return stop("rejected",
                fmt::format("work escaped the stream: the device stayed busy a median {:.1f} us after the end event of "
                            "the timed stream (calls of {:.1f} us): work on another stream or from another thread ran on "
                            "past the call; launch on the current stream or join other streams back into it",
                            tail * 1e6, median * 1e6),
                "side_stream");
  if (eval::wall_says_work_escaped(wall, median, options))
    return stop("rejected",
                fmt::format("work escaped the stream: the median call takes {:.1f} us of wall time to a device-wide sync "
                            "but {:.1f} us between events on the current stream (a side stream or a background thread)",
                            wall * 1e6, median * 1e6),
                "side_stream");
  physics_floor(median);
  if (physics_floor_s_ > 0 && median < physics_floor_s_)
    return stop("rejected",
                fmt::format("the median call takes {:.1f} us, below the physics floor of {:.1f} us ({}): no kernel reads "
                            "its inputs and writes its outputs that fast; the timing is not of the real work",
                            median * 1e6, physics_floor_s_ * 1e6, physics_floor_basis_),
                "physics_floor");
  return 0;
}

void Session::physics_floor(double) {
  if (config_.dram_bytes_per_s <= 0) {
    physics_floor_basis_ = "not applied: no bandwidth measured";
    return;
  }
  size_t b = last_output_bytes_;
  for (int i = 0; i < inputs_[0].count; ++i) b += nbytes(inputs_[0].t[i]);
  if (b == 0) return;
  physics_floor_s_ = static_cast<double>(b) / (config_.dram_bytes_per_s * config_.physics_margin);
  physics_floor_basis_ = fmt::format("{:.3g} B of inputs and outputs / ({:.3g} B/s measured copy bandwidth x {:g}); every "
                                     "timed call starts with a flushed L2",
                                     static_cast<double>(b), config_.dram_bytes_per_s, config_.physics_margin);
}

int Session::energy(const kpj_energy_config& config, const Callbacks& cb) {
  if (in_callback_) {
    taint("the judge core's energy window was started from inside one of its own callbacks (the candidate's code)");
    return 2;
  }
  if (finished_ || energy_done_) {
    taint("the judge core's energy window was started twice or after its verdict");
    return 2;
  }
  energy_done_ = true;
  if (stop_) return 2;
  energy_ = eval::EnergyReport{};
  return energy_inner(config, cb);
}

std::optional<std::vector<uint64_t>> Session::input_multisets() {
  int count = 0;
  for (int k = 0; k < config_.sets; ++k) count = std::max(count, inputs_[k].count);
  std::vector<uint64_t> sums(static_cast<size_t>(count), 0);
  for (int k = 0; k < config_.sets; ++k)
    for (int i = 0; i < inputs_[k].count; ++i) {
      uint64_t v = 0;
      const size_t b = nbytes(inputs_[k].t[i]);
      if (b && block_multiset(inputs_[k].t[i].data, b, scratch_, &v, stream_) != cudaSuccess) return std::nullopt;
      sums[static_cast<size_t>(i)] += v;
    }
  return sums;
}

cudaError_t Session::stir(int k, uint64_t* rng) {
  auto next = [rng]() {  // splitmix64, seeded from the OS once per window
    uint64_t z = (*rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  if (!config_.inputs_vary) return cudaSuccess;  // a problem whose inputs are fixed keeps them
  const int partner = (k + 1) % config_.sets;
  for (int i = 0; i < inputs_[k].count; ++i) {
    const kpj_tensor& a = inputs_[k].t[i];
    const size_t blocks = nbytes(a) / 16;
    if (blocks == 0) continue;  // under 16 bytes: a scalar's worth, left as drawn
    // Across sets only between buffers of their own (a problem may hand every set one tensor).
    const bool across = partner != k && i < inputs_[partner].count && nbytes(inputs_[partner].t[i]) == nbytes(a) &&
                        !overlaps(a, inputs_[partner].t[i]);
    // A sixteenth of the input, at most 1 MiB: enough to change many outputs, little energy.
    size_t run = std::min<size_t>(std::max<size_t>(blocks / 16, 1), (size_t{1} << 20) / 16);
    if (!across) run = std::min(run, blocks / 2);
    if (run == 0) continue;
    auto* mine = static_cast<unsigned char*>(a.data);
    unsigned char* one = nullptr;
    unsigned char* other = nullptr;
    if (across) {
      // The same place in both: what get_inputs puts at fixed places (a triangle's zeros, a mask,
      // a band) stays where it was.
      const size_t at = 16 * (next() % (blocks - run + 1));
      one = mine + at;
      other = static_cast<unsigned char*>(inputs_[partner].t[i].data) + at;
    } else {  // two runs of the same input, [at, at + run) before [to, to + run)
      const size_t at = next() % (blocks - 2 * run + 1);
      const size_t to = at + run + next() % (blocks - 2 * run - at + 1);
      one = mine + 16 * at;
      other = mine + 16 * to;
    }
    if (cudaError_t e = swap_bytes(one, other, 16 * run, stream_); e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

// The energy window's state across its steps: the NVML counter, the checked calls' copies (freed
// with it) and what the window measured.
struct Session::EnergyWindow {
  Nvml* nvml = nullptr;
  bool ended = false;  // ended without a measurement; the report says why
  std::optional<std::vector<uint64_t>> multisets_before;
  size_t out_bytes = 0, in_bytes = 0;
  struct Pick {
    int64_t call = 0;
    int set = 0;
    kpj_tensors outs{};               // dtype and shape of the call's outputs; data: the copy
    unsigned char* inputs = nullptr;  // the set's inputs as the call got them
  };
  std::vector<void*> copies;  // one per check: the outputs, then the inputs
  std::vector<Pick> picks;
  std::set<int64_t> drawn;  // the calls to check
  std::optional<uint64_t> e0, e1;
  std::string input_mismatch;  // a checked call wrong inside the window and outside it: not measured
  int64_t calls = 0;
  double window_s = 0, utilization = 0;

  ~EnergyWindow() {
    for (void* p : copies)
      if (p) cudaFree(p);
  }
  std::optional<uint64_t> read() const {
    auto r = nvml->total_energy_mj();
    return r.ok() ? std::optional<uint64_t>(*r) : std::nullopt;
  }
  // The counter updates about every 100 ms: waits for its next change.
  std::optional<uint64_t> next_tick(uint64_t from) const {
    const auto t0 = Clock::now();
    while (seconds_between(t0, Clock::now()) < 0.5) {
      auto v = read();
      if (!v || *v != from) return v;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return from;
  }
};

int Session::energy_inner(const kpj_energy_config& config, const Callbacks& cb) {
  eval::EnergyReport& e = *energy_;
  if (config.window_s <= 0) {
    e.unavailable_reason = "disabled (--no-energy)";
    return 0;
  }
  EnergyWindow w;
  std::string why;
  w.nvml = process_nvml(&why);
  if (!w.nvml) {
    e.unavailable_reason = why.empty() ? "NVML unavailable" : why;
    return 0;
  }
  if (cudaError_t err = cudaDeviceSynchronize(); err != cudaSuccess) return harness_failure(err, "before the energy window");
  auto first = w.read();
  if (!first) {
    e.unavailable_reason = "NVML energy read failed";
    return 0;
  }
  e.idle_watts = config.idle_watts;
  if (config.idle_watts < 0) {
    auto a = w.next_tick(*first);
    const auto t0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(std::max(config.idle_window_s, 0.1)));
    auto b = w.next_tick(w.read().value_or(a.value_or(0)));
    const double dt = seconds_between(t0, Clock::now());
    e.idle_watts = (a && b && dt > 0) ? static_cast<double>(*b - *a) * 1e-3 / dt : 0.0;
  }
  if (int rc = energy_prepare(config, cb, &w); rc || w.ended) return rc;
  w.e0 = w.next_tick(w.read().value_or(*first));
  if (!w.e0) {
    e.unavailable_reason = "NVML energy read failed";
    return 0;
  }
  if (int rc = energy_calls(config, cb, &w)) return rc;
  if (int rc = energy_check(cb, &w)) return rc;
  return energy_conclude(config, w);
}

int Session::energy_prepare(const kpj_energy_config& config, const Callbacks& cb, EnergyWindow* w) {
  // Sets drawn fresh for the window, and one call first (unmeasured) for the outputs' sizes.
  for (int k = 0; k < config_.sets; ++k)
    if (int rc = refresh_set(k, cb, "the energy window's inputs")) return rc;
  // What the stir keeps, from before the first call: any write to an input changes it.
  w->multisets_before = input_multisets();
  if (!w->multisets_before) return harness_failure(cudaGetLastError(), "summing the energy window's inputs");
  in_callback_ = true;
  int rc = cb.call(cb.ctx, KPJ_CANDIDATE, 0);
  kpj_tensors first_outs{};
  if (rc == KPJ_CALL_OK) rc = cb.outputs(cb.ctx, KPJ_CANDIDATE, &first_outs);
  in_callback_ = false;
  if (rc != KPJ_CALL_OK) return KPJ_CALLBACK_FAILED;
  if (!valid(first_outs)) return stop("runtime_error", "the adapter described the outputs badly");
  for (int j = 0; j < first_outs.count; ++j) w->out_bytes += nbytes(first_outs.t[j]);
  for (int k = 0; k < config_.sets; ++k) {
    size_t b = 0;
    for (int i = 0; i < inputs_[k].count; ++i) b += nbytes(inputs_[k].t[i]);
    w->in_bytes = std::max(w->in_bytes, b);
  }
  // For each checked call, its inputs as the call got them (copied just before it) and its
  // outputs (copied just after), in stream order: kEnergyChecks of them while they fit in an
  // eighth of free memory.
  size_t free_bytes = 0, total_bytes = 0;
  cudaMemGetInfo(&free_bytes, &total_bytes);
  int checks = eval::kEnergyChecks;
  while (checks > 0 && (w->out_bytes + w->in_bytes) * static_cast<size_t>(checks) > free_bytes / 8) --checks;
  if (checks == 0) {
    // A window none of whose calls can be checked is not measured (a candidate that holds the
    // device's memory would otherwise switch the checks off).
    energy_->unavailable_reason = "not measured: too little free device memory to check the window's calls";
    w->ended = true;
    return 0;
  }
  w->copies.assign(static_cast<size_t>(checks), nullptr);
  for (auto& p : w->copies)
    if (cudaMalloc(&p, std::max<size_t>(w->out_bytes + w->in_bytes, 16)) != cudaSuccess) {
      cudaGetLastError();
      p = nullptr;
    }
  // The checked calls are drawn among the first eighth of the calls the window should hold at the
  // timed rate, so that a host-bound adapter, slower than that rate, still reaches them.
  const double call_s = std::max(config.call_s, 1e-7);
  const int64_t expected = std::max<int64_t>(1, static_cast<int64_t>(config.window_s / call_s) / 8);
  while (static_cast<int>(w->drawn.size()) < checks && static_cast<int64_t>(w->drawn.size()) < expected)
    w->drawn.insert(static_cast<int64_t>(os_random() % static_cast<uint64_t>(expected)));
  return 0;
}

int Session::energy_calls(const kpj_energy_config& config, const Callbacks& cb, EnergyWindow* w) {
  const int64_t chunk = eval::energy_chunk_calls(std::max(config.call_s, 1e-7));
  const uint64_t u0 = epoch_us();
  const auto t0 = Clock::now();
  uint64_t last = *w->e0;
  uint64_t rng = os_random();
  for (;;) {
    for (int64_t c = 0; c < chunk; ++c)
      if (int rc = energy_call(cb, w, &rng)) return rc;
    if (cudaError_t err = cudaDeviceSynchronize(); err != cudaSuccess)
      return harness_failure(err, "the candidate's energy calls");
    const double elapsed = seconds_between(t0, Clock::now());
    if (elapsed < config.window_s) continue;
    auto v = w->read();
    if (!v) break;
    if (*v != last) {
      w->e1 = v;
      break;
    }
    last = *v;
    if (elapsed > config.window_s + 1.0) break;
  }
  w->window_s = seconds_between(t0, Clock::now());
  w->utilization = w->nvml->utilization_since(u0);
  energy_->sm_clock_mhz = w->nvml->sm_clock_mhz();
  energy_->temperature_c = w->nvml->temperature_c();
  return 0;
}

int Session::energy_call(const Callbacks& cb, EnergyWindow* w, uint64_t* rng) {
  const int k = static_cast<int>(w->calls % config_.sets);
  if (cudaError_t err = stir(k, rng); err != cudaSuccess)
    return harness_failure(err, "stirring the energy window's inputs");
  const size_t n = w->picks.size();
  const bool checked = w->drawn.count(w->calls) && n < w->copies.size() && w->copies[n];
  unsigned char* kept_inputs = nullptr;
  if (checked) {
    kept_inputs = static_cast<unsigned char*>(w->copies[n]) + w->out_bytes;
    size_t at = 0;
    for (int i = 0; i < inputs_[k].count; ++i) {
      const size_t b = nbytes(inputs_[k].t[i]);
      if (at + b > w->in_bytes) break;  // in_bytes is the largest set's: never, but never past the copy
      cudaMemcpyAsync(kept_inputs + at, inputs_[k].t[i].data, b, cudaMemcpyDeviceToDevice, stream_);
      at += b;
    }
  }
  in_callback_ = true;
  int rc = cb.call(cb.ctx, KPJ_CANDIDATE, k);
  in_callback_ = false;
  if (rc != KPJ_CALL_OK) return KPJ_CALLBACK_FAILED;
  if (checked) {
    EnergyWindow::Pick p{w->calls, k, {}, kept_inputs};
    in_callback_ = true;
    rc = cb.outputs(cb.ctx, KPJ_CANDIDATE, &p.outs);
    in_callback_ = false;
    if (rc != KPJ_CALL_OK) return KPJ_CALLBACK_FAILED;
    auto* dst = static_cast<unsigned char*>(w->copies[n]);
    size_t at = 0;
    for (int j = 0; valid(p.outs) && j < p.outs.count; ++j) {
      const size_t b = nbytes(p.outs.t[j]);
      if (at + b > w->out_bytes) break;  // a call returned more than the first: checked as wrong below
      cudaMemcpyAsync(dst + at, p.outs.t[j].data, b, cudaMemcpyDeviceToDevice, stream_);
      p.outs.t[j].data = dst + at;
      at += b;
    }
    w->picks.push_back(p);
  }
  ++w->calls;
  return 0;
}

// Whether `got` matches `want` output by output; *what says how not, *reference_bad whether the
// reference itself gave NaN/Inf. A non-zero return is a harness failure's.
int Session::outputs_match(const kpj_tensors& got, const kpj_tensors& want, bool* right, std::string* what,
                           bool* reference_bad) {
  *right = valid(want) && valid(got) && want.count == got.count;
  *what = *right ? "" : "it returned other outputs than the reference";
  *reference_bad = false;
  for (int j = 0; *right && j < want.count; ++j) {
    const kpj_tensor& o = got.t[j];
    const kpj_tensor& r = want.t[j];
    if (o.dtype != r.dtype || shape_of(o) != shape_of(r)) {
      *right = false;
      *what = "an output of another shape or dtype";
      break;
    }
    eval::OutputCheck c;
    if (cudaError_t err = compare_output(o, r, &c); err != cudaSuccess)
      return harness_failure(err, "comparing an energy call's output");
    if (!c.passed) {
      *right = false;
      *what = c.reason;
      *reference_bad = c.reference_nonfinite > 0;
    }
  }
  return 0;
}

int Session::energy_check(const Callbacks& cb, EnergyWindow* w) {
  // After the window: the inputs' blocks as they were (only moved by the stir), and each checked
  // call's output against the reference on the inputs that call got (put back in its set), which
  // did not exist while the candidate ran.
  const auto multisets_after = input_multisets();
  if (!multisets_after) return harness_failure(cudaGetLastError(), "summing the energy window's inputs");
  if (*multisets_after != *w->multisets_before)
    return stop("incorrect", "the energy window's calls wrote to their inputs; inputs are read-only", "input_mutation");
  for (const EnergyWindow::Pick& p : w->picks) {
    size_t at = 0;
    for (int i = 0; i < inputs_[p.set].count; ++i) {
      const size_t b = nbytes(inputs_[p.set].t[i]);
      if (at + b > w->in_bytes) break;
      cudaMemcpyAsync(inputs_[p.set].t[i].data, p.inputs + at, b, cudaMemcpyDeviceToDevice, stream_);
      at += b;
    }
    if (cudaError_t err = cudaStreamSynchronize(stream_); err != cudaSuccess)
      return harness_failure(err, "restoring a checked energy call's inputs");
    kpj_tensors want{};
    in_callback_ = true;
    int rc = cb.call(cb.ctx, KPJ_REFERENCE, p.set);
    if (rc == KPJ_CALL_OK) rc = cb.outputs(cb.ctx, KPJ_REFERENCE, &want);
    in_callback_ = false;
    if (rc != KPJ_CALL_OK) return KPJ_CALLBACK_FAILED;
    cudaDeviceSynchronize();
    bool right = false, reference_bad = false;
    std::string what;
    if (int rc2 = outputs_match(p.outs, want, &right, &what, &reference_bad)) return rc2;
    if (right) {
      ++energy_->checked_calls;
      continue;
    }
    // Wrong. Phase or inputs? The stir moves blocks of the inputs, which can break a structure
    // get_inputs gives them (a symmetric matrix, say) that an honest kernel may rely on. The
    // candidate is called again now, outside the window, on the same inputs: right now, it
    // behaved differently while its energy was measured; wrong again (or the reference itself
    // failed on them), the window's inputs are not ones it can be judged on, and its energy is
    // not measured.
    bool again = false;
    if (!reference_bad) {
      kpj_tensors now{};
      in_callback_ = true;
      rc = cb.call(cb.ctx, KPJ_CANDIDATE, p.set);
      if (rc == KPJ_CALL_OK) rc = cb.outputs(cb.ctx, KPJ_CANDIDATE, &now);
      in_callback_ = false;
      if (rc != KPJ_CALL_OK) return KPJ_CALLBACK_FAILED;
      if (cudaError_t err = cudaDeviceSynchronize(); err != cudaSuccess)
        return harness_failure(err, "the candidate's call after the energy window");
      std::string what_now;
      bool bad_now = false;
      if (int rc2 = outputs_match(now, want, &again, &what_now, &bad_now)) return rc2;
    }
    if (again)
      return stop("rejected",
                  fmt::format("energy call {} (input set {}), one of the window's calls checked at random, returned a "
                              "wrong output ({}), and a call on the same inputs after the window a right one: the "
                              "candidate behaves differently while its energy is measured",
                              p.call + 1, p.set + 1, what),
                  "phase_dependent");
    if (w->input_mismatch.empty())
      w->input_mismatch = fmt::format("energy call {} (input set {}) was checked and its output differs from the "
                                      "reference's ({}), {}",
                                      p.call + 1, p.set + 1, what,
                                      reference_bad ? "which gave NaN or Inf on those inputs"
                                                    : "and so did a call on the same inputs after the window");
  }
  return 0;
}

int Session::energy_conclude(const kpj_energy_config& config, const EnergyWindow& w) {
  eval::EnergyReport& e = *energy_;
  const double call_s = std::max(config.call_s, 1e-7);
  const double window = w.window_s;
  const int64_t calls = w.calls;
  if (eval::energy_rate_says_skipped(window, calls, call_s))
    return stop("rejected",
                fmt::format("the energy window's {} back-to-back calls took {:.1f} us each, far less than the {:.1f} us "
                            "of a timed call: the candidate skips work while its energy is measured",
                            calls, window / static_cast<double>(std::max<int64_t>(calls, 1)) * 1e6, call_s * 1e6),
                "phase_dependent");
  if (eval::energy_gpu_idle(window, calls, call_s, w.utilization))
    return stop("rejected",
                fmt::format("in the energy window the GPU ran kernels {:.0f}% of the time, where {} calls of the timed "
                            "{:.1f} us would keep it busy {:.0f}%: the calls did not do the timed work (kept outputs "
                            "replayed, or work skipped) while their energy was measured",
                            w.utilization, calls, call_s * 1e6,
                            std::min(1.0, static_cast<double>(calls) * call_s / window) * 100),
                "phase_dependent");
  if (!w.input_mismatch.empty()) {
    e.unavailable_reason = "not measured: " + w.input_mismatch +
                           ": the window's inputs, whose blocks it moves between calls, may break a structure the "
                           "candidate relies on (a symmetric matrix, say), so its calls there cannot be judged";
    return 0;
  }
  if (e.checked_calls == 0) {
    e.unavailable_reason = "not measured: none of the window's calls could be checked";
    return 0;
  }
  if (!w.e1) {
    e.unavailable_reason = "the NVML energy counter did not advance";
    return 0;
  }
  const double joules = static_cast<double>(*w.e1 - *w.e0) * 1e-3;
  e.measured = true;
  e.calls = calls;
  e.window_s = window;
  e.joules_per_call = joules / static_cast<double>(calls);
  e.average_watts = joules / window;
  e.dynamic_joules_per_call = std::max(0.0, joules - e.idle_watts * window) / static_cast<double>(calls);
  gpu_utilization_pct_ = w.utilization;
  return 0;
}

std::string Session::result_json() const {
  nlohmann::json j;
  if (timed_[0]) j["candidate"] = eval::to_json(timing_[0]);
  if (timed_[1]) j["reference"] = eval::to_json(timing_[1]);
  if (energy_) j["energy"] = eval::to_json(*energy_);
  j["stop"] = stop_ ? nlohmann::json{{"outcome", stop_->outcome},
                                      {"reason", stop_->reason},
                                      {"cheat", stop_->cheat},
                                      {"reference_failed", stop_->reference_failed}}
                    : nlohmann::json(nullptr);
  j["trials_run"] = trials_run_;
  j["tainted"] = tainted_;
  j["tail_median_s"] = tail_median_s_;
  return j.dump();
}

std::optional<std::string> Session::finish(const std::string& report_json) {
  if (finished_) return std::nullopt;
  if (in_callback_) {
    taint("the judge core's verdict was asked for from inside one of its own callbacks");
    return std::nullopt;
  }
  finished_ = true;
  nlohmann::json r = nlohmann::json::parse(report_json, nullptr, false);
  if (r.is_discarded() || !r.is_object()) {
    r = nlohmann::json::object();
    taint("the adapter's report was not a JSON object");
  }
  // Only what the core measured: a timing or energy the report carries from elsewhere goes.
  r.erase("timing");
  r.erase("reference_timing");
  r.erase("reference_seconds");
  r.erase("energy");
  if (timed_[0] && !timing_[0].samples_s.empty()) r["timing"] = eval::to_json(timing_[0]);
  r["reference_seconds"] = 0.0;  // WorkerReport's "not timed here"
  if (timed_[1] && !timing_[1].samples_s.empty()) {
    r["reference_timing"] = eval::to_json(timing_[1]);
    r["reference_seconds"] = eval::summarize(timing_[1].samples_s).median;
  }
  if (physics_floor_s_ > 0 || !physics_floor_basis_.empty()) {
    r["physics_floor_s"] = physics_floor_s_;
    r["physics_floor_basis"] = physics_floor_basis_;
  }
  if (energy_) r["energy"] = eval::to_json(*energy_);
  if (trials_done_) {  // the trials' record is the core's too
    r["trials_run"] = trials_run_;
    r["checks"] = nlohmann::json::array();
    for (const auto& c : checks_) r["checks"].push_back(eval::to_json(c));
    if (checks_.size() > 1) {
      r["output_names"] = nlohmann::json::array();
      for (size_t j = 0; j < checks_.size(); ++j) r["output_names"].push_back(fmt::format("output{}", j));
    } else {
      r["output_names"] = {"output"};
    }
  }
  if (!mutated_input_.empty()) r["mutated_input"] = mutated_input_;
  r["judge_core"] = {{"tail_median_s", tail_median_s_},
                     {"inputs_seen", seen_inputs_.size()},
                     {"energy_gpu_utilization_pct", gpu_utilization_pct_}};
  const std::string outcome = r.contains("outcome") && r["outcome"].is_string() ? r["outcome"].get<std::string>() : "";
  // The first stop of the evaluation is the verdict: the core's own, or the adapter's, reported
  // the moment it happened (kpj_note_stop), whatever the report says now.
  if (stop_) {
    r["outcome"] = stop_->outcome;
    r["reason"] = stop_->reason;
    r["cheat"] = stop_->cheat;
    if (stop_->reference_failed) r["reference_failed"] = true;
  }
  if (outcome == "ok" && !stop_ && !config_.reference_only && (!timed_[0] || timing_[0].samples_s.empty()))
    taint("the report says ok, but the judge core never timed the candidate");
  if (!tainted_.empty()) {
    r["outcome"] = "rejected";
    r["reason"] = "the harness was tampered with: " + tainted_;
    r["cheat"] = "harness_tamper";
  }
  return r.dump();
}

}  // namespace kp::judge
