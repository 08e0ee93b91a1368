#include "judge/session.h"

#include <sys/random.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "judge/device_ops.h"
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

bool overlaps(const kpj_tensor& a, const kpj_tensor& b) {
  auto lo_a = reinterpret_cast<uintptr_t>(a.data), lo_b = reinterpret_cast<uintptr_t>(b.data);
  size_t na = nbytes(a), nb = nbytes(b);
  return na && nb && lo_a < lo_b + nb && lo_b < lo_a + na;
}

}  // namespace

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

std::optional<uint64_t> Session::fingerprint(const kpj_tensors& ts) {
  uint64_t h = 0x243F6A8885A308D3ull;
  for (int i = 0; i < ts.count; ++i) {
    uint64_t v = 0;
    const size_t b = nbytes(ts.t[i]);
    if (b && checksum(ts.t[i].data, b, scratch_, &v, stream_) != cudaSuccess) return std::nullopt;
    h = mix(mix(h, v), b);
  }
  return h;
}

int Session::refresh_set(int k, const Callbacks& cb, const char* when) {
  kpj_tensors ins{};
  in_callback_ = true;
  const int rc = cb.refresh(cb.ctx, k, os_random(), &ins);
  in_callback_ = false;
  if (rc != KPJ_CALL_OK) return KPJ_CALLBACK_FAILED;
  if (!valid(ins)) return stop("runtime_error", "the adapter described the inputs with a bad dtype, rank or count");
  auto fp = fingerprint(ins);
  if (!fp) return harness_failure(cudaGetLastError(), "fingerprinting the inputs");
  if (config_.inputs_vary && !seen_inputs_.insert(*fp).second) {
    taint(fmt::format("the inputs of {} repeat inputs an earlier call had, although every call is given fresh ones: "
                      "the harness's input refresh was changed",
                      when));
    return 2;
  }
  inputs_[k] = ins;
  input_print_[k] = *fp;
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

int Session::check_outputs(int k, const kpj_tensors& got, const Callbacks& cb, int index) {
  const kpj_tensors& ins = inputs_[k];
  for (int j = 0; j < got.count; ++j)
    for (int i = 0; i < ins.count; ++i)
      if (overlaps(got.t[j], ins.t[i]))
        return stop("rejected",
                    fmt::format("output {} of timed call {} shares memory with input {}: it is an alias of the input, "
                                "not a computed result",
                                j, index, i),
                    "aliased_output");
  auto after = fingerprint(ins);
  if (!after) return harness_failure(cudaGetLastError(), "fingerprinting the inputs");
  if (*after != input_print_[k])
    return stop("incorrect", fmt::format("timed call {} wrote to its inputs (their fingerprint changed); inputs are "
                                         "read-only", index),
                "input_mutation");
  kpj_tensors want{};
  in_callback_ = true;
  int rc = cb.call(cb.ctx, KPJ_REFERENCE, k);
  if (rc == KPJ_CALL_OK) rc = cb.outputs(cb.ctx, KPJ_REFERENCE, &want);
  in_callback_ = false;
  if (rc != KPJ_CALL_OK) return KPJ_CALLBACK_FAILED;
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) return harness_failure(e, "the reference's call");
  if (!valid(want)) return stop("runtime_error", "the adapter described the reference's outputs badly");
  if (want.count != got.count)
    return stop("rejected",
                fmt::format("timed call {} returned {} outputs where the reference returns {}, although the correctness "
                            "trials passed",
                            index, got.count, want.count),
                "batched_calls");
  for (int j = 0; j < got.count; ++j) {
    const kpj_tensor& o = got.t[j];
    const kpj_tensor& w = want.t[j];
    if (o.dtype != w.dtype || shape_of(o) != shape_of(w))
      return stop("rejected",
                  fmt::format("output {} of timed call {} has shape {} and dtype {} where the reference's has {} and {}",
                              j, index, shape_text(o), task::to_string(static_cast<task::DType>(o.dtype)),
                              shape_text(w), task::to_string(static_cast<task::DType>(w.dtype))),
                  "batched_calls");
    const auto dtype = static_cast<task::DType>(o.dtype);
    const task::Tolerance tol{config_.tolerance[o.dtype][0], config_.tolerance[o.dtype][1],
                              config_.tolerance[o.dtype][2]};
    eval::OutputTally tally;
    if (cudaError_t e = device_tally(o.data, w.data, dtype, numel(o), tol, compare_, stream_, &tally); e != cudaSuccess)
      return harness_failure(e, "comparing outputs");
    eval::OutputCheck c = eval::conclude_check(tally, dtype, tol, shape_of(o));
    if (!c.passed) {
      const bool kept = std::find(returned_.begin(), returned_.end(), o.data) != returned_.end();
      return stop("rejected",
                  fmt::format("output {} of timed call {} (input set {}, fresh inputs no call had seen) is wrong although "
                              "the correctness trials passed: {}; {}",
                              j, index, k + 1, c.reason,
                              kept ? "it is a buffer an earlier call returned, still holding that call's values (flipped "
                                     "after its check): results are cached across calls"
                                   : "work is deferred to, batched with or cached from other calls, or the call behaves "
                                     "differently when it is timed"),
                  kept ? "result_cache" : "batched_calls");
    }
  }
  for (int j = 0; j < got.count; ++j) {
    if (cudaError_t e = flip_bits(got.t[j].data, nbytes(got.t[j]), stream_); e != cudaSuccess)
      return harness_failure(e, "flipping a checked output");
    if (std::find(returned_.begin(), returned_.end(), got.t[j].data) == returned_.end() && returned_.size() < 4096)
      returned_.push_back(got.t[j].data);
  }
  last_output_bytes_ = 0;
  for (int j = 0; j < got.count; ++j) last_output_bytes_ += nbytes(got.t[j]);
  if (cudaError_t e = cudaStreamSynchronize(stream_); e != cudaSuccess) return harness_failure(e, "after a check");
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
      if (int rc = check_outputs(k, outs, cb, index)) return rc;
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

std::string Session::result_json() const {
  nlohmann::json j;
  if (timed_[0]) j["candidate"] = eval::to_json(timing_[0]);
  if (timed_[1]) j["reference"] = eval::to_json(timing_[1]);
  j["stop"] = stop_ ? nlohmann::json{{"outcome", stop_->outcome}, {"reason", stop_->reason}, {"cheat", stop_->cheat}}
                    : nlohmann::json(nullptr);
  j["tainted"] = tainted_;
  j["tail_median_s"] = tail_median_s_;
  return j.dump();
}

std::optional<std::string> Session::finish(const std::string& report_json) {
  if (finished_) return std::nullopt;
  finished_ = true;
  nlohmann::json r = nlohmann::json::parse(report_json, nullptr, false);
  if (r.is_discarded() || !r.is_object()) {
    r = nlohmann::json::object();
    taint("the adapter's report was not a JSON object");
  }
  if (timed_[0] && !timing_[0].samples_s.empty()) r["timing"] = eval::to_json(timing_[0]);
  if (timed_[1] && !timing_[1].samples_s.empty()) {
    r["reference_timing"] = eval::to_json(timing_[1]);
    r["reference_seconds"] = eval::summarize(timing_[1].samples_s).median;
  }
  if (physics_floor_s_ > 0 || !physics_floor_basis_.empty()) {
    r["physics_floor_s"] = physics_floor_s_;
    r["physics_floor_basis"] = physics_floor_basis_;
  }
  r["judge_core"] = {{"tail_median_s", tail_median_s_}, {"inputs_seen", seen_inputs_.size()}};
  const std::string outcome = r.value("outcome", std::string());
  if (stop_ && (outcome == "ok" || outcome.empty() || outcome == stop_->outcome)) {
    r["outcome"] = stop_->outcome;
    r["reason"] = stop_->reason;
    r["cheat"] = stop_->cheat;
  }
  if (outcome == "ok" && !stop_ && (!timed_[0] || timing_[0].samples_s.empty()))
    taint("the report says ok, but the judge core never timed the candidate");
  if (!tainted_.empty()) {
    r["outcome"] = "rejected";
    r["reason"] = "the harness was tampered with: " + tainted_;
    r["cheat"] = "harness_tamper";
  }
  return r.dump();
}

}  // namespace kp::judge
