/* kp_rangeprof: hardware counters of every kernel launched between kp_rp_begin and kp_rp_end,
 * collected inside the calling process with the CUPTI Range Profiler (CUDA 13.0: auto range,
 * kernel replay). Plain C, so that kp-worker (C++) and the KernelBench worker (Python ctypes,
 * python/kernelpro_torch/rangeprof.py) load the same libkp_rangeprof.so.
 *
 * Life of a collection:
 *     kp_rp_session* s = kp_rp_create(names, n, 64, err, sizeof err);  // context current
 *     kp_rp_begin(s, err, sizeof err);
 *     ... launch kernels (each launch becomes one range; launches are serialised and every
 *         kernel is replayed once per pass, its memory saved and restored by CUPTI) ...
 *     kp_rp_end(s, err, sizeof err);
 *     puts(kp_rp_result_json(s));
 *     kp_rp_destroy(s);
 * kp_rp_collect is the same collection with the caller replaying its own work (user replay),
 * without CUPTI's save and restore of device memory: much faster when the work can be repeated.
 * A session may collect many times; each collection replaces the previous result. Sessions may be
 * created and destroyed many times in one process (CUPTI's profiler is initialised once, on the
 * first kp_rp_create, and never torn down). At most one session per CUDA context at a time.
 *
 * Threads: one session is used from one thread; kernels launched by other threads on the same
 * context between begin and end are profiled too. The library registers a CUPTI callback
 * subscriber between begin and end only, to learn kernel names; where another CUPTI subscriber
 * holds the process (ncu, nsys, torch.profiler, libkp_trace) the ranges keep CUPTI's numeric
 * names ("names_from": "range" in the result).
 *
 * Errors: every function that takes `err` writes a NUL-terminated message of at most err_len-1
 * bytes there (err may be NULL or err_len 0: then nothing is written). The message starts with
 * a fixed tag, then says what failed and what to do:
 *     "privileges: "      counters restricted to administrators (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
 *     "unsupported: "     the device or its configuration cannot be profiled (vGPU, MIG, CC, ...)
 *     "unknown-metric: "  a metric name is not known for this chip, or cannot be collected by
 *                         the range profiler; the message lists every such name
 *     "no-context: "      no CUDA context is current on the calling thread
 *     "invalid-argument: " a NULL or empty argument, begin twice, end without begin
 *     "dropped: "         more kernels ran than max_kernels (the result holds the first ones)
 *     "replay: "          kp_rp_collect: a pass launched other kernels than the first pass did
 *     "pass: "            kp_rp_collect: the caller's prepare or run function returned nonzero
 *     "cupti: "           any other CUPTI or driver failure (the call and CUPTI's own words)
 */
#ifndef KP_RANGEPROF_API_H_
#define KP_RANGEPROF_API_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define KP_RP_EXPORT __attribute__((visibility("default")))
#else
#define KP_RP_EXPORT
#endif

/* Return codes of kp_rp_begin and kp_rp_end; the same classes as the err tags above. */
enum {
  KP_RP_OK = 0,
  KP_RP_ERR_INVALID_ARGUMENT = 1,
  KP_RP_ERR_NO_CONTEXT = 2,
  KP_RP_ERR_PRIVILEGES = 3,
  KP_RP_ERR_UNSUPPORTED = 4,
  KP_RP_ERR_UNKNOWN_METRIC = 5,
  KP_RP_ERR_DROPPED = 6,
  KP_RP_ERR_CUPTI = 7,
  KP_RP_ERR_REPLAY = 8,
  KP_RP_ERR_PASS = 9
};

typedef struct kp_rp_session kp_rp_session;

/* Creates a session on the CUDA context current to the calling thread (cuCtxGetCurrent: with
 * the runtime API, call cudaFree(0) first; with torch, run any CUDA operation).
 * metric_names: num_metrics Perfworks metric names as ncu --metrics takes them
 * ("dram__bytes_read.sum"); copied.
 * max_kernels: the most kernel launches one begin/end may profile (the counter-data image is
 * sized for it; more are dropped and reported).
 * Validates every name against the chip, builds the configuration image and counts its replay
 * passes (kp_rp_num_passes). Returns the session, or NULL with err filled ("unknown-metric: "
 * naming every rejected metric, "privileges: ", "unsupported: ", "no-context: ", "cupti: ").
 * Cost: CUPTI loads the chip's metric tables and builds the images, once per session (the
 * probe's KP_RP_TIME create= measures it); begin/end cycles on one session do not pay it again. */
KP_RP_EXPORT kp_rp_session* kp_rp_create(const char* const* metric_names, int num_metrics, int max_kernels, char* err,
                                         size_t err_len);

/* Replay passes each kernel will run for the configured metrics (>= 1). */
KP_RP_EXPORT int kp_rp_num_passes(const kp_rp_session* s);

/* Starts collecting: every kernel launched from now on the session's context is one range.
 * Returns KP_RP_OK, or a KP_RP_ERR_* code with err filled (begin while collecting:
 * KP_RP_ERR_INVALID_ARGUMENT). */
KP_RP_EXPORT int kp_rp_begin(kp_rp_session* s, char* err, size_t err_len);

/* Stops collecting, decodes the counters and evaluates every metric of every range (this
 * synchronises the context). Returns KP_RP_OK; KP_RP_ERR_DROPPED (err filled; the result holds
 * the ranges that fit, or is "{}" where CUPTI failed outright) when more than max_kernels
 * kernels ran; other codes with err filled, the result then "{}". */
KP_RP_EXPORT int kp_rp_end(kp_rp_session* s, char* err, size_t err_len);

/* One pass of kp_rp_collect: returns 0, or nonzero to abandon the collection. `pass` counts from 0. */
typedef int (*kp_rp_pass_fn)(void* user, int pass);

/* User replay, the fast path: instead of CUPTI saving and restoring all device memory around
 * every replay of every kernel (kp_rp_begin/kp_rp_end), the caller replays its own work.
 * For each of the session's passes: prepare(user, pass) runs outside the collection (restore
 * the inputs the work overwrites, flush L2; prepare may be NULL), then run(user, pass) launches
 * the work and synchronises, between CUPTI's Start and Stop. Every kernel launched in run is one
 * range, as with begin/end. Every pass must launch the same kernels in the same order (checked
 * by name where the launch callback is available: KP_RP_ERR_REPLAY otherwise, and the caller
 * should fall back to begin/end). Returns like kp_rp_end, and fills the same result (with
 * "replay":"user" and "passes_run"); KP_RP_ERR_PASS when prepare or run returned nonzero, after
 * which the session refuses to collect again (CUPTI's passes were left half-way: destroy it and
 * create another). After KP_RP_ERR_REPLAY every pass has still run, and the session can go on
 * (kp_rp_begin/kp_rp_end on it is the fallback). */
KP_RP_EXPORT int kp_rp_collect(kp_rp_session* s, kp_rp_pass_fn prepare, kp_rp_pass_fn run, void* user, char* err,
                               size_t err_len);

/* The last kp_rp_end's (or kp_rp_collect's) result as one line of JSON, owned by the session,
 * valid until the next kp_rp_begin, kp_rp_collect or kp_rp_destroy ("{}" before the first):
 *   {"chip":"GH100","passes":N,"metrics":["name",...],"units":{"name":"unit",...},
 *    "ranges":[{"index":0,"range":"0","name":"saxpy","mangled":"saxpy",
 *               "values":{"name":value-or-null,...}},...],
 *    "launches":L,"dropped":D,"names_from":"callback"|"range","enables":E,"replay":"kernel"|"user",
 *    "timing_s":{"create":s,"begin":s,"end":s,"decode":s,"evaluate":s}}
 * "ranges" are in launch order; "name" is the kernel's demangled name where the launch callback
 * saw it (else CUPTI's range name), "mangled" the symbol as launched ("" if unknown); values
 * are in Perfworks base units (nanoseconds, bytes, percent, counts, hertz), null where CUPTI
 * returned a non-finite number; "units" are CUPTI's dimension units ("bytes", "nsecond", ...);
 * "launches" is how many launches the callback saw (-1 without the callback); "enables" how
 * many range profiler objects the session has made (more than 1 when CUPTI refused a second
 * SetConfig on one object and begin started over); "timing_s" are wall seconds of kp_rp_create,
 * the last kp_rp_begin and the last kp_rp_end, and of end's decode (Stop excluded) and
 * evaluation parts; after kp_rp_collect, "begin" is 0, "end" covers decoding and evaluation,
 * "prepare" the prepare calls and "passes" the passes (Start, run, Stop), and "passes_run"
 * beside "timing_s" counts the passes. */
KP_RP_EXPORT const char* kp_rp_result_json(const kp_rp_session* s);

/* Stops a collection still running, releases CUPTI's objects and frees the session. NULL is a
 * no-op. */
KP_RP_EXPORT void kp_rp_destroy(kp_rp_session* s);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KP_RANGEPROF_API_H_ */
