/* kp_judge.h: the judge core's C API (libkp_judge.so).
 *
 * The measurement and its checks, once, in native code: an adapter (the KernelBench worker in
 * Python, through ctypes) opens a session before the candidate is loaded, then hands the core two
 * three callbacks: one that gives an input set fresh contents, one that makes one call of the
 * candidate or the reference on a set, and one that describes what that call returned. The core draws the seeds, flushes L2, records the events, keeps the
 * samples, fingerprints the inputs before and after every call, compares every timed output with
 * the reference's on the GPU, applies the sampling rule, the escaped-work and physics-floor checks,
 * and decides. Its state lives in this library's memory, not in any Python object, and the
 * verdict block it writes into the report at the end overrides whatever the adapter's report says
 * about timing.
 *
 * Contract for the adapter:
 *  - every call of a callback is made by the core, on the thread that called kpj_time; a callback
 *    returns 0 when the call returned, KPJ_CALLBACK_FAILED when it raised (the adapter keeps its
 *    own reason and turns it into the outcome);
 *  - outputs handed back stay valid until the next call of the same role on the same session;
 *  - tensors are contiguous and row-major, dtype codes are kp_abi.h's (KP_FP32 = 0 ...).
 * Out-of-order or reentrant calls of this API (from a callback, or a second timing of one role)
 * taint the session: its verdict becomes a rejection (harness_tamper).
 */
#ifndef KERNELPRO_KP_JUDGE_H_
#define KERNELPRO_KP_JUDGE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define KPJ_API __attribute__((visibility("default")))
#else
#define KPJ_API
#endif

#define KPJ_MAX_TENSORS 16
#define KPJ_MAX_RANK 8

typedef struct kpj_tensor {
  void* data;     /* device pointer */
  int32_t dtype;  /* kp_abi.h dtype code */
  int32_t rank;
  int64_t shape[KPJ_MAX_RANK];
} kpj_tensor;

typedef struct kpj_tensors {
  int32_t count;
  kpj_tensor t[KPJ_MAX_TENSORS];
} kpj_tensors;

enum { KPJ_CANDIDATE = 0, KPJ_REFERENCE = 1 };
enum { KPJ_CALL_OK = 0, KPJ_CALLBACK_FAILED = 1 };

/* Gives input set `set` new contents drawn with `seed` and describes its inputs in *inputs. */
typedef int (*kpj_refresh_fn)(void* ctx, int32_t set, uint64_t seed, kpj_tensors* inputs);
/* Makes one call of `role` on set `set`'s current inputs and keeps what it returned. Timed: it
 * should do nothing else. */
typedef int (*kpj_call_fn)(void* ctx, int32_t role, int32_t set);
/* Describes the outputs of the last call of `role` in *outputs (after its end event: any checks
 * of the returned objects belong here, outside the timing). */
typedef int (*kpj_outputs_fn)(void* ctx, int32_t role, kpj_tensors* outputs);

typedef struct kpj_config {
  uint64_t stream;        /* cudaStream_t the events go on (the adapter's current stream) */
  int32_t sets;           /* input sets cycled through, >= 1 */
  int32_t inputs_vary;    /* 1: two seeds give different inputs, so repeated inputs are a fault */
  int32_t warmup_calls;   /* EvalOptions fields, same meaning and units */
  int32_t min_trials;
  int32_t max_trials;
  double median_ci;
  double timing_budget_s;
  double timing_cap_s;
  double wall_ratio;
  double wall_slack_us;   /* the adapter's host overhead included */
  double physics_margin;
  double dram_bytes_per_s;  /* measured; 0: no physics floor */
  uint64_t l2_bytes;        /* the GPU's L2; the flush buffer reads at least twice that */
  double tolerance[7][3];   /* atol, rtol, rel_norm per dtype code */
  int32_t reference_only;   /* 1: no candidate in this session (its verdict may be ok untimed) */
  uint64_t seed_space;      /* seeds handed to refresh are below this (0: any 64-bit value) */
} kpj_config;

typedef struct kpj_session kpj_session;

/* Opens a session on the current device. NULL on failure, with the reason in err. One session is
 * live at a time in a process: a second kpj_open before the first is closed fails. */
KPJ_API kpj_session* kpj_open(const kpj_config* config, char* err, size_t err_len);

/* Times `role`: warm-up, then timed calls until the sampling rule stops, each on fresh inputs.
 * Returns 0 when timed; KPJ_CALLBACK_FAILED when a callback failed (the adapter's reason
 * stands); 2 when the core stopped the evaluation (kpj_result_json says why). */
KPJ_API int kpj_time(kpj_session* s, int32_t role, kpj_refresh_fn refresh, kpj_call_fn call,
                     kpj_outputs_fn outputs, void* ctx);

/* The adapter's look at a correctness trial (kpj_trials), for what only it can compute (a float64
 * run of the reference on the trial's inputs, say). The trial's inputs and both roles' outputs are
 * as the last refresh and outputs callbacks described them.
 *  - KPJ_TRIAL_PASSED: every output of the trial on set `set` passed the core's check (`output` is
 *    -1); KPJ_CALLBACK_FAILED stops the evaluation with the adapter's own reason.
 *  - KPJ_TRIAL_FAILED: output `output` failed as a plain wrong answer; the adapter may write one
 *    clause that explains it into note (note_len bytes, NUL-terminated): it is added to the reason.
 */
enum { KPJ_TRIAL_PASSED = 0, KPJ_TRIAL_FAILED = 1 };
typedef int (*kpj_trial_fn)(void* ctx, int32_t kind, int32_t set, int32_t output, char* note, size_t note_len);

typedef struct kpj_trials_config {
  int32_t count;          /* trials, >= 1 */
  const uint64_t* seeds;  /* one per trial, distinct: set 0's seed (drawn by the adapter from the
                             evaluation's seed, so that a trial can be repeated) */
} kpj_trials_config;

/* The correctness trials. Each: set 0 refreshed with the trial's seed, one untimed call of the
 * candidate, its outputs described (the adapter's checks of the returned objects belong there),
 * then the checks of a timed call: no output aliases an input, the inputs are unchanged, the
 * outputs do not change while the reference runs on the same inputs after the call, and every
 * output is within tolerance of the reference's. A failure is named by what it looks like
 * (constant_output, precision_downgrade; result_cache when the output is an earlier trial's), and
 * a passing trial's outputs are flipped, so one handed back later unchanged is a result cache.
 * `look` may be NULL. Once per session, before kpj_time of the candidate. Returns as kpj_time. */
KPJ_API int kpj_trials(kpj_session* s, const kpj_trials_config* config, kpj_refresh_fn refresh, kpj_call_fn call,
                       kpj_outputs_fn outputs, kpj_trial_fn look, void* ctx);

typedef struct kpj_energy_config {
  double window_s;       /* seconds of back-to-back calls; <= 0: no energy ("disabled") */
  double idle_window_s;  /* seconds of idle power measured when idle_watts < 0 */
  double idle_watts;     /* this GPU's idle power if known (measured once per worker), else -1 */
  double call_s;         /* the candidate's timed median: paces the checks and the window's tests */
} kpj_energy_config;

/* The candidate's energy: NVML's total-energy counter over window_s of back-to-back calls on
 * input sets drawn fresh for the window. Before every call the core swaps a random run of each
 * input's 16-byte blocks with the next set's (a sixteenth of it, at most 1 MiB), so no call sees
 * the inputs an earlier one had; the blocks must be all there after the window. Calls drawn at
 * random by the core have their inputs and outputs copied; after the window the reference runs
 * on those inputs and the copies must match it. The
 * window must also look like work: its call rate and NVML's GPU utilization against the timed
 * median. Returns as kpj_time; the result ("energy" in kpj_finish's report) says what was
 * measured or why not. Once per session, after kpj_time of the candidate. */
KPJ_API int kpj_energy(kpj_session* s, const kpj_energy_config* config, kpj_refresh_fn refresh, kpj_call_fn call,
                       kpj_outputs_fn outputs, void* ctx);

/* The adapter's own stop (a check of its own failed: outcome, reason, cheat), recorded at once:
 * the first stop of the evaluation is the verdict, no timing is accepted after it, and nothing
 * said later changes it. */
KPJ_API void kpj_note_stop(kpj_session* s, const char* outcome, const char* reason, const char* cheat);

/* The session's verdict so far as JSON: {"candidate": TimingReport, "reference": TimingReport,
 * "energy": EnergyReport, "stop": {"outcome","reason","cheat"} or null, "tainted": reason or ""}. Owned by the session,
 * valid until the next call on it. */
KPJ_API const char* kpj_result_json(kpj_session* s);

/* The adapter's report (a WorkerReport JSON object) with the core's decisions written over it:
 * "timing", "reference_timing", "reference_seconds", "energy" (only what the core measured),
 * "physics_floor_s"/"_basis", and, when the evaluation stopped (the core's stop or the adapter's
 * noted one, whichever came first) or the session is tainted, "outcome", "reason" and "cheat".
 * Seals the session: a later call returns NULL. Refused (NULL, tainted) from inside a callback.
 * Owned by the session. */
KPJ_API const char* kpj_finish(kpj_session* s, const char* report_json);

/* One output against the reference's on the GPU, by the core's rule (no session needed: the
 * profiler's check before it profiles, say). tolerance: atol, rtol, rel_norm. Writes the check as
 * JSON (verdict/compare.h's OutputCheck) into json. Returns 1 passed, 0 failed, -1 when the
 * comparison could not run (the reason in json). */
KPJ_API int kpj_compare(const kpj_tensor* out, const kpj_tensor* want, const double tolerance[3], uint64_t stream,
                        char* json, size_t json_len);

/* Frees a session after its verdict; a session without one is not freed (its use by the adapter
 * goes on; the attempt is recorded and makes the verdict a rejection). */
KPJ_API void kpj_close(kpj_session* s);

#ifdef __cplusplus
}
#endif

#endif /* KERNELPRO_KP_JUDGE_H_ */
