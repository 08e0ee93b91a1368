// GPU tier: the judge core (judge/session.h) driven by plain C callbacks, as the KernelBench
// worker drives it through ctypes. The "kernel" is a device-to-device copy (output = input), so
// each case is one line of CUDA: an honest copy passes its trials, is timed and passes; a kept
// output, a constant, a wrong answer, a refresh that does not refresh, an input written, work left
// on a side stream, persisting L2 and a callback that re-enters the core are each caught with
// their class. Skipped without a GPU.
#include "judge/session.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "judge/device_ops.h"
#include "tests/support/paths.h"

namespace kp::judge {
namespace {

constexpr int64_t kElems = 1 << 20;  // 4 MiB of fp32
constexpr size_t kBytes = kElems * sizeof(float);

enum class Play {
  kHonest,
  kKeptOutput,
  kStaleRefresh,
  kWritesInput,
  kSideStream,
  kPersistingL2,
  kReenters,
  kWindowCache,        // in the energy window, a set it has computed once is served from what it kept
  kWindowPhase,        // the same, but honest again once the reference has run (after the window)
  kWindowWritesInput,  // in the energy window only, writes to its inputs
  kKeptAfterTrials,    // honest in the three trials, then hands back the last trial's output
  kZeros,              // writes zeros: a constant output
  kHalf,               // copies half its input, zeros the rest: a plain wrong answer
};

struct Adapter {
  Play play = Play::kHonest;
  cudaStream_t stream = nullptr;
  cudaStream_t side = nullptr;
  void* in[2] = {};
  void* cand_out[2] = {};
  void* ref_out = nullptr;
  void* big[2] = {};  // the side stream's extra work
  int last_set = 0;
  int calls = 0;
  bool in_window = false;                 // set by the test around the energy window
  bool reference_seen = false;            // a reference call came while in_window
  void* window_seen[2] = {nullptr, nullptr};  // the input buffer each set had at its last computed call
  Session* session = nullptr;
  std::string reentered;
  int looks_passed = 0;        // the adapter's look at passing trials
  bool look_refuses = false;   // its look stops the evaluation at the first passing trial
};

kpj_tensor fp32(void* data) {
  kpj_tensor t{};
  t.data = data;
  t.dtype = 0;
  t.rank = 1;
  t.shape[0] = kElems;
  return t;
}

int refresh(void* ctx, int32_t set, uint64_t seed, kpj_tensors* inputs) {
  auto* a = static_cast<Adapter*>(ctx);
  task::Distribution d;
  const uint64_t s = a->play == Play::kStaleRefresh ? 7 : seed;
  if (fill_random(a->in[set], task::DType::kFp32, kElems, d, s, 0, a->stream) != cudaSuccess) return KPJ_CALLBACK_FAILED;
  inputs->count = 1;
  inputs->t[0] = fp32(a->in[set]);
  return KPJ_CALL_OK;
}

int call(void* ctx, int32_t role, int32_t set) {
  auto* a = static_cast<Adapter*>(ctx);
  a->last_set = set;
  if (role == KPJ_REFERENCE && a->in_window) a->reference_seen = true;
  if (role == KPJ_REFERENCE)
    return cudaMemcpyAsync(a->ref_out, a->in[set], kBytes, cudaMemcpyDeviceToDevice, a->stream) == cudaSuccess
               ? KPJ_CALL_OK
               : KPJ_CALLBACK_FAILED;
  ++a->calls;
  switch (a->play) {
    case Play::kKeptOutput:  // computes once, then hands back what it kept
      if (a->calls > 1) return KPJ_CALL_OK;
      break;
    case Play::kKeptAfterTrials:
      if (a->calls > 3) return KPJ_CALL_OK;
      break;
    case Play::kZeros:
      return cudaMemsetAsync(a->cand_out[set], 0, kBytes, a->stream) == cudaSuccess ? KPJ_CALL_OK : KPJ_CALLBACK_FAILED;
    case Play::kHalf:
      cudaMemsetAsync(a->cand_out[set], 0, kBytes, a->stream);
      return cudaMemcpyAsync(a->cand_out[set], a->in[set], kBytes / 2, cudaMemcpyDeviceToDevice, a->stream) ==
                     cudaSuccess
                 ? KPJ_CALL_OK
                 : KPJ_CALLBACK_FAILED;
    case Play::kWritesInput:
      cudaMemsetAsync(a->in[set], 0, 64, a->stream);
      break;
    case Play::kSideStream: {  // its own copy, then a large copy nobody waits for, queued after it
      // (queued first, the H100 ran the large copy ahead of the small one, and the end event
      // waited for both: 2026-12-07, a gain of nothing and no tail)
      const cudaError_t e =
          cudaMemcpyAsync(a->cand_out[set], a->in[set], kBytes, cudaMemcpyDeviceToDevice, a->stream);
      cudaMemcpyAsync(a->big[1], a->big[0], size_t{256} << 20, cudaMemcpyDeviceToDevice, a->side);
      return e == cudaSuccess ? KPJ_CALL_OK : KPJ_CALLBACK_FAILED;
    }
    case Play::kPersistingL2:
      cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, size_t{1} << 20);
      break;
    case Play::kReenters:
      if (a->session->time(KPJ_REFERENCE, {refresh, call, nullptr, ctx}) != 0) a->reentered = "refused";
      break;
    case Play::kWindowCache:  // the same buffer as last time: what it kept for it is "still right"
    case Play::kWindowPhase:
      if (a->play == Play::kWindowPhase && a->reference_seen) break;
      if (a->in_window && a->window_seen[set] == a->in[set]) return KPJ_CALL_OK;
      if (a->in_window) a->window_seen[set] = a->in[set];
      break;
    case Play::kWindowWritesInput:
      if (a->in_window) cudaMemsetAsync(a->in[set], 0, 64, a->stream);
      break;
    default: break;
  }
  return cudaMemcpyAsync(a->cand_out[set], a->in[set], kBytes, cudaMemcpyDeviceToDevice, a->stream) == cudaSuccess
             ? KPJ_CALL_OK
             : KPJ_CALLBACK_FAILED;
}

int outputs(void* ctx, int32_t role, kpj_tensors* out) {
  auto* a = static_cast<Adapter*>(ctx);
  out->count = 1;
  const bool kept = a->play == Play::kKeptOutput || a->play == Play::kKeptAfterTrials;
  out->t[0] = fp32(role == KPJ_REFERENCE ? a->ref_out : a->cand_out[kept ? 0 : a->last_set]);
  return KPJ_CALL_OK;
}

int look(void* ctx, int32_t kind, int32_t, int32_t output, char* note, size_t note_len) {
  auto* a = static_cast<Adapter*>(ctx);
  if (kind == KPJ_TRIAL_PASSED) {
    ++a->looks_passed;
    return a->look_refuses ? KPJ_CALLBACK_FAILED : KPJ_CALL_OK;
  }
  std::snprintf(note, note_len, "the adapter's note on output %d", output);
  return KPJ_CALL_OK;
}

constexpr uint64_t kTrialSeeds[3] = {11, 22, 33};

class JudgeSessionGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = testing::gpu_missing()) GTEST_SKIP() << *why;
    ASSERT_EQ(cudaStreamCreateWithFlags(&a_.stream, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&a_.side, cudaStreamNonBlocking), cudaSuccess);
    for (auto* p : {&a_.in[0], &a_.in[1], &a_.cand_out[0], &a_.cand_out[1], &a_.ref_out})
      ASSERT_EQ(cudaMalloc(p, kBytes), cudaSuccess);
    for (auto* p : {&a_.big[0], &a_.big[1]}) ASSERT_EQ(cudaMalloc(p, size_t{256} << 20), cudaSuccess);
    int l2 = 0;
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0);
    config_.stream = reinterpret_cast<uint64_t>(a_.stream);
    config_.sets = 2;
    config_.inputs_vary = 1;
    config_.warmup_calls = 2;
    config_.min_trials = 10;
    config_.max_trials = 40;
    config_.median_ci = 0.005;
    config_.timing_budget_s = 0.2;
    config_.timing_cap_s = 5;
    config_.wall_ratio = 1.5;
    config_.wall_slack_us = 100;
    config_.physics_margin = 1.3;
    config_.dram_bytes_per_s = 0;
    config_.l2_bytes = static_cast<uint64_t>(l2);
    config_.tolerance[0][0] = 1e-5;
    config_.tolerance[0][1] = 1e-4;
    config_.tolerance[0][2] = 1e-5;
  }
  void TearDown() override {
    cudaDeviceSynchronize();
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
    for (void* p : {a_.in[0], a_.in[1], a_.cand_out[0], a_.cand_out[1], a_.ref_out, a_.big[0], a_.big[1]})
      if (p) cudaFree(p);
    if (a_.stream) cudaStreamDestroy(a_.stream);
    if (a_.side) cudaStreamDestroy(a_.side);
  }
  // Times the candidate and then the reference as the KernelBench worker does; the verdict.
  nlohmann::json judge(Play play) {
    a_.play = play;
    Session s(config_);
    EXPECT_EQ(s.error(), "");
    a_.session = &s;
    Callbacks cb{refresh, call, outputs, &a_, look};
    const kpj_trials_config trials{3, kTrialSeeds};
    if (s.trials(trials, cb) == 0 && s.time(KPJ_CANDIDATE, cb) == 0) s.time(KPJ_REFERENCE, cb);
    auto r = s.finish(R"({"outcome":"ok","reason":"","cheat":""})");
    EXPECT_TRUE(r.has_value());
    EXPECT_FALSE(s.finish("{}").has_value()) << "a second verdict from one session";
    return nlohmann::json::parse(*r);
  }
  // As judge(), then the energy window (0.3 s) as the KernelBench worker runs it.
  nlohmann::json judge_energy(Play play) {
    a_.play = play;
    Session s(config_);
    a_.session = &s;
    Callbacks cb{refresh, call, outputs, &a_, look};
    const kpj_trials_config trials{3, kTrialSeeds};
    if (s.trials(trials, cb) == 0 && s.time(KPJ_CANDIDATE, cb) == 0 && s.time(KPJ_REFERENCE, cb) == 0) {
      const auto timed = nlohmann::json::parse(s.result_json());
      std::vector<double> xs = timed["candidate"]["samples_s"].get<std::vector<double>>();
      std::sort(xs.begin(), xs.end());
      kpj_energy_config e{0.3, 0.1, 50.0, xs.empty() ? 1e-5 : xs[xs.size() / 2]};
      a_.in_window = true;
      s.energy(e, cb);
      a_.in_window = false;
    }
    return nlohmann::json::parse(*s.finish(R"({"outcome":"ok","reason":"","cheat":""})"));
  }
  Adapter a_;
  kpj_config config_{};
};

TEST_F(JudgeSessionGpu, AnHonestCopyIsTimedOnFreshInputsAndPasses) {
  auto r = judge(Play::kHonest);
  EXPECT_EQ(r["outcome"], "ok") << r.dump(1);
  EXPECT_GE(r["timing"]["samples_s"].size(), 10u);
  EXPECT_GT(r["reference_seconds"].get<double>(), 0);
  // Every call, trials, warm-ups and the reference's included, had inputs no call had before.
  EXPECT_EQ(r["judge_core"]["inputs_seen"].get<size_t>(),
            3 + r["timing"]["samples_s"].size() + 2 + r["reference_timing"]["samples_s"].size() + 2);
  EXPECT_EQ(r["trials_run"], 3);
  EXPECT_EQ(a_.looks_passed, 3) << "the adapter looked at each passing trial";
  ASSERT_EQ(r["checks"].size(), 1u);
  EXPECT_TRUE(r["checks"][0]["passed"].get<bool>());
}

TEST_F(JudgeSessionGpu, ARefreshThatRepeatsInputsTaintsTheSession) {
  auto r = judge(Play::kStaleRefresh);
  EXPECT_EQ(r["outcome"], "rejected");
  EXPECT_EQ(r["cheat"], "harness_tamper");
  EXPECT_NE(r["reason"].get<std::string>().find("repeat inputs"), std::string::npos) << r["reason"];
}

TEST_F(JudgeSessionGpu, AWrittenInputIsInputMutation) {
  auto r = judge(Play::kWritesInput);
  EXPECT_EQ(r["outcome"], "incorrect") << r.dump(1);
  EXPECT_EQ(r["cheat"], "input_mutation");
}

TEST_F(JudgeSessionGpu, WorkLeftOnASideStreamIsSeenAfterTheEndEvent) {
  auto r = judge(Play::kSideStream);
  EXPECT_EQ(r["outcome"], "rejected") << r.dump(1);
  EXPECT_EQ(r["cheat"], "side_stream");
  EXPECT_NE(r["reason"].get<std::string>().find("after the end event"), std::string::npos) << r["reason"];
}

TEST_F(JudgeSessionGpu, PersistingL2IsRejected) {
  auto r = judge(Play::kPersistingL2);
  EXPECT_EQ(r["outcome"], "rejected") << r.dump(1);
  EXPECT_EQ(r["cheat"], "persisting_l2");
}

TEST_F(JudgeSessionGpu, ACallbackThatReentersTheCoreTaintsIt) {
  auto r = judge(Play::kReenters);
  EXPECT_EQ(a_.reentered, "refused");
  EXPECT_EQ(r["outcome"], "rejected");
  EXPECT_EQ(r["cheat"], "harness_tamper");
}

TEST_F(JudgeSessionGpu, AnAdaptersStopIsTheVerdictAndNoTimingFollowsIt) {
  Session s(config_);
  s.note_stop("rejected", "no kernel of its own ran", "no_custom_kernel");
  // A candidate's code that times "itself" after its rejection (a finalizer, say) gets nothing.
  EXPECT_EQ(s.time(KPJ_CANDIDATE, {refresh, call, outputs, &a_}), 2);
  auto r = nlohmann::json::parse(*s.finish(R"({"outcome":"ok","reason":"","cheat":""})"));
  EXPECT_EQ(r["outcome"], "rejected");
  EXPECT_EQ(r["cheat"], "no_custom_kernel");
  EXPECT_FALSE(r.contains("timing"));
}

TEST_F(JudgeSessionGpu, TheCApiHasOneLiveSessionThatIsNotClosedBeforeItsVerdict) {
  void* lib = dlopen((std::string(KP_BINARY_DIR) + "/libkp_judge.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto open = reinterpret_cast<kpj_session* (*)(const kpj_config*, char*, size_t)>(dlsym(lib, "kpj_open"));
  auto finish = reinterpret_cast<const char* (*)(kpj_session*, const char*)>(dlsym(lib, "kpj_finish"));
  auto close = reinterpret_cast<void (*)(kpj_session*)>(dlsym(lib, "kpj_close"));
  char err[256] = {};
  kpj_session* first = open(&config_, err, sizeof err);
  ASSERT_NE(first, nullptr) << err;
  EXPECT_EQ(open(&config_, err, sizeof err), nullptr) << "a second session beside the harness's";
  EXPECT_NE(std::string(err).find("already open"), std::string::npos) << err;
  close(first);  // before its verdict: refused, and the verdict says so
  const char* verdict = finish(first, R"({"outcome":"ok"})");
  ASSERT_NE(verdict, nullptr);
  auto r = nlohmann::json::parse(verdict);
  EXPECT_EQ(r["cheat"], "harness_tamper");
  EXPECT_NE(r["reason"].get<std::string>().find("closed before its verdict"), std::string::npos) << r["reason"];
  close(first);
  kpj_session* next = open(&config_, err, sizeof err);
  EXPECT_NE(next, nullptr) << "after the verdict and the close, the next evaluation opens its own: " << err;
  if (next) {
    finish(next, "{}");
    close(next);
  }
}

// The correctness trials, in the core: a trial's output handed back by a later trial, or by a timed
// call, is a result cache; a written input, a constant and a plain wrong answer are named as such.
TEST_F(JudgeSessionGpu, TheCoresTrialsNameWhatAFailedTrialLooksLike) {
  auto kept = judge(Play::kKeptOutput);  // trial 2 hands back trial 1's output, flipped
  EXPECT_EQ(kept["outcome"], "incorrect") << kept.dump(1);
  EXPECT_EQ(kept["cheat"], "result_cache") << kept["reason"];
  EXPECT_EQ(kept["trials_run"], 1);
  a_.calls = 0;
  auto later = judge(Play::kKeptAfterTrials);
  EXPECT_EQ(later["outcome"], "rejected") << later.dump(1);
  EXPECT_EQ(later["cheat"], "result_cache") << later["reason"];
  EXPECT_EQ(later["trials_run"], 3);
  auto writes = judge(Play::kWritesInput);
  EXPECT_EQ(writes["outcome"], "incorrect") << writes.dump(1);
  EXPECT_EQ(writes["cheat"], "input_mutation");
  EXPECT_EQ(writes["mutated_input"], "input 0");
  EXPECT_EQ(writes["trials_run"], 0) << "caught in the first trial, not in the timing";
  auto zeros = judge(Play::kZeros);
  EXPECT_EQ(zeros["outcome"], "incorrect") << zeros.dump(1);
  EXPECT_EQ(zeros["cheat"], "constant_output");
  auto half = judge(Play::kHalf);
  EXPECT_EQ(half["outcome"], "incorrect") << half.dump(1);
  EXPECT_EQ(half["cheat"], "");
  EXPECT_NE(half["reason"].get<std::string>().find("the adapter's note on output 0"), std::string::npos)
      << half["reason"];
  ASSERT_EQ(half["checks"].size(), 1u);
  EXPECT_FALSE(half["checks"][0]["passed"].get<bool>());
}

// The adapter's look at a passing trial can stop the evaluation (its own check, such as a float64
// run of the reference); the trials end there and nothing is timed.
TEST_F(JudgeSessionGpu, TheAdaptersLookAtAPassingTrialCanStopIt) {
  a_.look_refuses = true;
  Session s(config_);
  const kpj_trials_config trials{3, kTrialSeeds};
  EXPECT_EQ(s.trials(trials, {refresh, call, outputs, &a_, look}), KPJ_CALLBACK_FAILED);
  EXPECT_EQ(a_.looks_passed, 1);
  s.note_stop("incorrect", "the adapter's float64 check", "precision_downgrade");
  auto r = nlohmann::json::parse(*s.finish(R"({"outcome":"ok","reason":"","cheat":""})"));
  EXPECT_EQ(r["outcome"], "incorrect");
  EXPECT_EQ(r["trials_run"], 0);
  EXPECT_EQ(s.trials(trials, {refresh, call, outputs, &a_, look}), 2) << "no trials after the verdict";
}

// The energy window's calls each see inputs no earlier call had (their blocks stirred), so a cache
// keyed on the inputs' buffers serves stale outputs there, and a checked call shows it.
TEST_F(JudgeSessionGpu, TheEnergyWindowStirsItsInputsSoACacheOfThemIsSeen) {
  auto honest = judge_energy(Play::kHonest);
  EXPECT_EQ(honest["outcome"], "ok") << honest.dump(1);
  if (!honest["energy"].value("measured", false))
    GTEST_SKIP() << "no energy on this machine: " << honest["energy"].dump();
  EXPECT_GT(honest["energy"]["checked_calls"].get<int>(), 0);
  // Wrong in the window and wrong again on the same inputs after it (the cache still hits): the
  // energy is not measured (an honest kernel relying on a structure the stir breaks looks so too).
  a_.window_seen[0] = a_.window_seen[1] = nullptr;
  // (Its skipped calls may also be seen by the window's rate or the GPU's idle time: rejected.)
  auto cache = judge_energy(Play::kWindowCache);
  const bool unmeasured =
      cache["outcome"] == "ok" && !cache["energy"].value("measured", true) &&
      cache["energy"].value("unavailable_reason", std::string()).find("after the window") != std::string::npos;
  const bool rejected = cache["outcome"] == "rejected" && cache["cheat"] == "phase_dependent";
  EXPECT_TRUE(unmeasured || rejected) << cache.dump(1);
  // Wrong in the window, right on the same inputs after it: phase_dependent.
  a_.window_seen[0] = a_.window_seen[1] = nullptr;
  a_.reference_seen = false;
  auto phase = judge_energy(Play::kWindowPhase);
  EXPECT_EQ(phase["outcome"], "rejected") << phase.dump(1);
  EXPECT_EQ(phase["cheat"], "phase_dependent");
  EXPECT_NE(phase["reason"].get<std::string>().find("after the window a right one"), std::string::npos)
      << phase["reason"];
  auto writes = judge_energy(Play::kWindowWritesInput);
  EXPECT_EQ(writes["outcome"], "incorrect") << writes.dump(1);
  EXPECT_EQ(writes["cheat"], "input_mutation");
}

TEST_F(JudgeSessionGpu, AReportOfOkWithoutTheCandidateTimedIsATamper) {
  Session s(config_);
  auto r = nlohmann::json::parse(*s.finish(R"({"outcome":"ok"})"));
  EXPECT_EQ(r["outcome"], "rejected");
  EXPECT_EQ(r["cheat"], "harness_tamper");
}

}  // namespace
}  // namespace kp::judge
