/* kp_trace_api.h: the C interface of libkp_trace.so, kernelpro's system-level trace (a CUPTI
 * Activity API library injected into a CUDA process), and the format of the file it writes.
 * Plain C, no dependencies but <dlfcn.h> and <stdlib.h>, so that kp-worker, test programs and
 * Python (ctypes) use the same contract.
 *
 * INJECTION. Start the process with
 *   CUDA_INJECTION64_PATH=/abs/path/libkp_trace.so   the CUDA driver loads the library at cuInit
 *                                                    and calls InitializeInjection()
 *   KP_TRACE_OUT=/abs/path/trace.jsonl                where the records go (created or truncated)
 * profile/trace/trace_parser.h: trace_environment() gives both. Without KP_TRACE_OUT the library
 * prints one warning on stderr and does nothing (CUPTI is left untouched). CUPTI of CUDA 13.0
 * allows one subscriber per process: the library cannot run together with ncu, nsys,
 * torch.profiler or the CUPTI range profiler in the same process; when CUPTI refuses it, the file
 * gets an error record naming the cause and nothing else is traced.
 *
 * SCOPING. A process that wants records grouped by candidate call finds the functions below
 * with kp_trace_lookup() (after its first CUDA call, which loads the library) and calls, for
 * each call i:
 *   kp_trace_begin(i);  launch the call's work;  synchronize the device;  kp_trace_end(i);
 * Both functions flush CUPTI's buffers (cuptiActivityFlushAll, forced) and write what came in.
 * A record belongs to call i when the CUDA API call that issued it (found by its correlation id)
 * started between begin(i) and end(i); GPU work whose API record is missing is placed by its own
 * start time instead. Everything else (work launched before the first begin, between calls,
 * after the last end, or by a process that never calls begin) has call -1: outside any call.
 * Calls must not nest; indices need not be distinct (records of the same index are merged by
 * the parser). Thread safety: any thread may call these functions, but begin and end of one
 * call must pair up with no other begin between them.
 *
 * FILE FORMAT (version 1): one JSON object per line, each with a "type". Times are CUPTI
 * timestamps in nanoseconds (cuptiGetTimestamp's clock, the same for CPU and GPU records);
 * "call" is the call index, -1 outside any call.
 *   {"type":"header","version":1,"pid":P,"cupti_api_version":V}
 *   {"type":"error","error":"what failed and what to do"}          (setup failed; may repeat)
 *   {"type":"begin","call":I,"t":NS}   {"type":"end","call":I,"t":NS}
 *   {"type":"kernel","call":I,"name":"_Z...","stream":S,"grid":[X,Y,Z],"block":[X,Y,Z],
 *    "registers":R,"static_smem":B,"dynamic_smem":B,"start":NS,"end":NS,"correlation":C,
 *    "device":D}                        name is mangled, as CUPTI gives it
 *   {"type":"memcpy","call":I,"direction":"HtoD","bytes":N,"stream":S,"start":NS,"end":NS,
 *    "correlation":C}                   direction: HtoD DtoH DtoD HtoH PtoP HtoA AtoH AtoA AtoD
 *                                       DtoA Unknown
 *   {"type":"memset","call":I,"bytes":N,"stream":S,"start":NS,"end":NS,"correlation":C}
 *     kernel, memcpy and memset records carry "incomplete":true when CUPTI delivered them
 *     before the work finished (start or end is then 0 and means nothing)
 *   {"type":"api","call":I,"domain":"runtime"|"driver","cbid":ID,"name":"cudaLaunchKernel_v7000",
 *    "count":N,"total_ns":NS,"launch":true|false}
 *     runtime and driver API records, aggregated per call and function; "launch" marks the
 *     kernel and graph launch family (cudaLaunchKernel*, cudaLaunchCooperativeKernel*,
 *     cudaGraphLaunch*, cuLaunchKernel*, cuLaunchCooperativeKernel*, cuGraphLaunch*, cuLaunch,
 *     cuLaunchGrid*). A runtime launch also shows up as the driver launch it makes, so the
 *     launches of a call are the larger of the two domains' sums, not their total. Lines for
 *     the same call and function may repeat; their counts add up.
 *   {"type":"footer","dropped":N,"records":M}   at normal exit (atexit): records CUPTI could not
 *     store (its buffers were full) and records written; absent when the process died
 * Lines are not ordered by time; a reader sorts. Unknown types are for later versions: skip them.
 */
#ifndef KERNELPRO_PROFILE_TRACE_KP_TRACE_API_H_
#define KERNELPRO_PROFILE_TRACE_KP_TRACE_API_H_

#include <dlfcn.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Flushes what CUPTI recorded so far into the file (outside call_index unless its API call was
 * inside an earlier call), then opens call call_index. Returns 0, or -1 when the library is not
 * tracing (no KP_TRACE_OUT, CUPTI refused) or a call is already open (that call stays open). */
int kp_trace_begin(int call_index);
/* Closes call call_index, flushes and writes its records. The caller synchronizes the device
 * first, so that all of the call's GPU work has finished. Returns 0, or -1 when the library is
 * not tracing or call_index is not the open call (nothing changes then). */
int kp_trace_end(int call_index);

typedef int (*kp_trace_fn)(int call_index);
typedef struct kp_trace_fns {
  kp_trace_fn begin;
  kp_trace_fn end;
} kp_trace_fns;

/* Finds kp_trace_begin and kp_trace_end in the library that CUDA_INJECTION64_PATH names, if the
 * CUDA driver has loaded it (dlopen RTLD_NOLOAD: call this after the process's first CUDA call).
 * Returns 0 and fills *fns; -1 (fns set to NULLs) when the variable is unset or empty, the
 * library is not loaded, or it lacks the functions (another tool's injection library). */
static inline int kp_trace_lookup(kp_trace_fns* fns) {
  const char* path = getenv("CUDA_INJECTION64_PATH");
  void* handle = 0;
  fns->begin = 0;
  fns->end = 0;
  if (path == 0 || path[0] == '\0') return -1;
  handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (handle == 0) return -1;
  fns->begin = (kp_trace_fn)dlsym(handle, "kp_trace_begin");
  fns->end = (kp_trace_fn)dlsym(handle, "kp_trace_end");
  if (fns->begin == 0 || fns->end == 0) {
    fns->begin = 0;
    fns->end = 0;
    return -1;
  }
  return 0;
}

#ifdef __cplusplus
}
#endif

#endif /* KERNELPRO_PROFILE_TRACE_KP_TRACE_API_H_ */
