// The judge core: one evaluation's measurement and its checks, driven by callbacks that make one
// call of the candidate or the reference (include/kernelpro/kp_judge.h is its C face,
// libkp_judge.cc the library that exports it).
//
// What the core owns, and the adapter (the KernelBench worker) cannot change from Python:
//  - the seeds of every timed call's inputs, drawn from the OS when the call is about to be made
//    (never earlier, so nothing in the process can predict them);
//  - the fingerprints of every input set it has timed on: a call whose inputs repeat earlier
//    ones (a refresh that did not refresh) taints the session, so every timed call, warm-ups
//    included, sees inputs no call has seen before and a cache of any kind has nothing to serve;
//  - the check that the call left its inputs as they were (fingerprints before and after);
//  - the correctness trials (kpj_trials): each an untimed call on set 0 refreshed with the
//    trial's seed, held to the checks of a timed call below, a failure named by what it looks like
//    (eval::failure_kind; result_cache when it is an earlier trial's output);
//  - the comparison of every timed output with the reference's output on the same inputs, made
//    by the reference *after* the candidate's call (no reference output for those inputs exists
//    while the candidate runs), on the GPU, with the tolerance the adapter configured;
//  - after each check, every bit of the candidate's output flipped, so a kept output holds wrong
//    values the next time it is seen (an output probe, or a static buffer, gains nothing);
//  - the L2 flush and persisting-L2 reset before every timed call, the event pair around it, the
//    wall time, and the tail from the end event to an idle device (work left running elsewhere);
//  - the samples, the sampling rule (verdict/timing_rule.h), the median, the physics floor;
//  - the energy window: which of its calls are checked (drawn from the OS), copies of those
//    outputs, the reference run on their sets after the window, and the window's own tests of
//    work (its call rate, NVML's utilization against the timed median);
//  - the order of the API's calls: a second timing of one role, a call from inside a callback or
//    after the verdict taints the session, and a tainted session's verdict is a rejection.
// Thread-compatible: one session is driven by one thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <nlohmann/json.hpp>

#include "judge/device_compare.h"
#include "kernelpro/kp_judge.h"
#include "verdict/protocol.h"

namespace kp::judge {

// Why the core stopped an evaluation: an outcome name (verdict/outcome.h's strings), a reason for
// people and the cheat it caught, if any.
struct CoreStop {
  std::string outcome;
  std::string reason;
  std::string cheat;
  bool reference_failed = false;  // the problem's fault (its reference failed), not the candidate's
};

// `out` against `want` on the GPU with the core's rule (eval::conclude_check): a dtype or shape
// that differs fails with that reason. Returns the first CUDA error.
cudaError_t compare_tensor(const kpj_tensor& out, const kpj_tensor& want, const task::Tolerance& tol,
                           CompareScratch& scratch, cudaStream_t stream, eval::OutputCheck* check);

// The adapter's callbacks for one kpj_time (kp_judge.h says what each does).
struct Callbacks {
  kpj_refresh_fn refresh = nullptr;
  kpj_call_fn call = nullptr;
  kpj_outputs_fn outputs = nullptr;
  void* ctx = nullptr;
  kpj_trial_fn look = nullptr;  // kpj_trials only
};

class Session {
 public:
  // Allocates the flush buffer, events and scratch on the current device. Check error() after.
  explicit Session(const kpj_config& config);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Empty when the session is usable, else why it is not.
  const std::string& error() const { return error_; }

  // kpj_trials: 0 passed, KPJ_CALLBACK_FAILED, or 2 when the core stopped the evaluation.
  int trials(const kpj_trials_config& config, const Callbacks& cb);

  // kpj_time: 0 timed, KPJ_CALLBACK_FAILED, or 2 when the core stopped the evaluation.
  int time(int role, const Callbacks& cb);

  // kpj_energy: 0 measured (or unavailable, said in the report), KPJ_CALLBACK_FAILED, or 2.
  int energy(const kpj_energy_config& config, const Callbacks& cb);

  // kpj_result_json and kpj_finish.
  std::string result_json() const;
  std::optional<std::string> finish(const std::string& report_json);

  // Marks an out-of-order use of the API (kept: the first reason wins).
  void taint(const std::string& why);

  // kpj_note_stop: the adapter's own stop, kept unless the core stopped first.
  void note_stop(std::string outcome, std::string reason, std::string cheat);

  bool finished() const { return finished_; }
  bool in_callback() const { return in_callback_; }

 private:
  int time_inner(int role, const Callbacks& cb);
  // Calls refresh for set k with `seed` (a fresh one from the OS when none is given) and
  // fingerprints the inputs it describes.
  int refresh_set(int k, const Callbacks& cb, const char* when, std::optional<uint64_t> seed = std::nullopt);
  std::optional<uint64_t> fingerprint(const kpj_tensors& ts);
  // Per tensor: a checksum of its bytes (fingerprint() mixes these).
  std::optional<std::vector<uint64_t>> checksums(const kpj_tensors& ts);
  // One call between events (L2 flushed before), then its outputs described into *outs.
  int one_timed_call(int role, int k, const Callbacks& cb, int index, double* event_s, double* wall_s, double* tail_s,
                     kpj_tensors* outs);
  // Where a checked call was made: a correctness trial (a wrong output is incorrect, named by what
  // it looks like) or a timed call (after the trials passed, a wrong output is a rejection).
  enum class Phase { kTrial, kTimed };
  // The candidate's outputs `got` of call `index` on set k against the reference's, which is
  // called now, on the same inputs; after a pass the outputs are flipped.
  int check_outputs(Phase phase, int k, const kpj_tensors& got, const Callbacks& cb, int index);
  // A trial's output j that failed check c: incorrect, named by what it looks like.
  int trial_failure(int k, int j, const kpj_tensor& o, const eval::OutputCheck& c, uint64_t outputs_print,
                    const Callbacks& cb, int index);
  // Every bit of the checked outputs flipped once (outputs that share memory included), each
  // buffer's edges then remembered as returned.
  cudaError_t flip_outputs(const kpj_tensors& got);
  // A timed call's output j that failed check c, after the trials passed.
  int timed_failure(int k, int j, const kpj_tensor& o, const eval::OutputCheck& c, int index);
  // `out` against `want` (same dtype and shape) on the device with the configured tolerance.
  cudaError_t compare_output(const kpj_tensor& out, const kpj_tensor& want, eval::OutputCheck* check);
  int stop(std::string outcome, std::string reason, std::string cheat = {});
  int harness_failure(cudaError_t e, const char* what);
  void physics_floor(double median_s);  // fills physics_floor_s_ and its basis
  // The energy window, in its steps: sets and checks drawn (prepare), the calls (calls, each
  // energy_call), the checked calls against the reference (check), the window's tests and the
  // report (conclude).
  struct EnergyWindow;
  int energy_inner(const kpj_energy_config& config, const Callbacks& cb);
  int energy_prepare(const kpj_energy_config& config, const Callbacks& cb, EnergyWindow* w);
  int energy_calls(const kpj_energy_config& config, const Callbacks& cb, EnergyWindow* w);
  int energy_call(const Callbacks& cb, EnergyWindow* w, uint64_t* rng);
  int energy_check(const Callbacks& cb, EnergyWindow* w);
  int energy_conclude(const kpj_energy_config& config, const EnergyWindow& w);
  int outputs_match(const kpj_tensors& got, const kpj_tensors& want, bool* right, std::string* what,
                    bool* reference_bad);
  // The energy window's stir before a call on set k: for each input, a random run of its 16-byte
  // blocks swapped with one of the next set's same input (with another run of its own when there
  // is one set). A cache keyed on the inputs' identity, pointers or a sample then serves a stale
  // output, which the window's checked calls see; the blocks only move, so input_multisets() is
  // unchanged by it and changed by any write of the candidate's.
  cudaError_t stir(int k, uint64_t* rng);
  // Per input index, the sum over every set of block_multiset(): what the stir keeps.
  std::optional<std::vector<uint64_t>> input_multisets();

  kpj_config config_;
  std::string error_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, end_ = nullptr;
  void* flush_ = nullptr;
  size_t flush_bytes_ = 0;
  uint64_t* scratch_ = nullptr;  // 8 bytes for checksums
  CompareScratch compare_;

  bool in_callback_ = false;
  bool finished_ = false;
  bool timed_[2] = {false, false};
  bool energy_done_ = false;
  bool trials_done_ = false;
  int trials_run_ = 0;
  std::vector<eval::OutputCheck> checks_;  // per output, of the failing trial or the last one
  std::set<uint64_t> trial_results_;       // fingerprints of each passing trial's outputs
  std::string mutated_input_;              // "input i" when a call wrote to its inputs
  std::optional<eval::EnergyReport> energy_;
  std::string tainted_;
  std::optional<CoreStop> stop_;
  eval::TimingReport timing_[2];
  std::vector<double> tails_s_;
  double physics_floor_s_ = 0;
  std::string physics_floor_basis_;
  std::set<uint64_t> seen_inputs_;  // fingerprints of every input set timed on
  std::set<uint64_t> seeds_;        // every seed handed to a refresh
  kpj_tensors inputs_[64] = {};     // the current inputs of each set (sets <= 64)
  uint64_t input_print_[64] = {};
  std::vector<uint64_t> input_sums_[64];  // per input of each set, what input_print_ mixes
  // Every output buffer the candidate has handed back, with its first and last 64 bytes as the
  // core left them (flipped after the check): a wrong output whose buffer still holds exactly
  // that was kept and handed back untouched, a result cache.
  std::map<void*, std::vector<unsigned char>> returned_;
  size_t last_output_bytes_ = 0;        // bytes of the candidate's outputs, for the physics floor
  double tail_median_s_ = 0;            // end event to idle device, median over the timed calls
  double gpu_utilization_pct_ = -1;     // NVML's over the energy window, -1 when unknown
};

}  // namespace kp::judge
