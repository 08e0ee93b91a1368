// kp_rangeprof_probe: exercises libkp_rangeprof.so on a GPU and prints what only the GPU can
// answer: which metrics the range profiler accepts, how many passes they take, what the
// counters read for kernels of known traffic, whether kernel replay leaves the caches warm, and
// how long each step takes.
//
//   kp_rangeprof_probe --metrics FILE [--lib PATH] [--each] [--max-kernels N]
//   kp_rangeprof_probe --plain        (the same launches, no CUPTI: run it under ncu)
//
// FILE holds one metric name a line ('#' comments and blank lines skipped). --lib defaults to
// libkp_rangeprof.so beside this binary. --each tries every metric alone first. Lines printed:
//   KP_RP_METRIC accepted|rejected NAME passes=P | error     (--each, or when the list fails)
//   KP_RP_KERNEL_MS NAME MS                                  (cudaEvent time, unprofiled)
//   KP_RP_EXPECT KERNEL METRIC VALUE                         (what the counter should read)
//   KP_RP_TIME SESSION create=S begin=S launch=S end=S total=S passes=P
//   KP_RP_JSON SESSION {...}                                 (kp_rp_result_json)
//   KP_RP_ERROR SESSION message
//   kp_rangeprof_probe --metrics FILE --warm-study REPS [--metrics2 FILE]
//                                     (what holding a session costs: see warm_study)
// Sessions, all in this one process: "pair" (saxpy, strided_read), "pair_again" (the same
// session's second begin/end), "cache" (a new session: fill_small writes 16 MiB, read_small
// reads them back: dram__bytes_read of read_small near 0 means the replay left L2 warm, near
// 16 MiB means it was flushed or evicted), "one_ms" (a new session: fma_chain, about 1 ms);
// then user replay (kp_rp_collect) on one new session: "user_one_ms", "user_pair", "user_fewer"
// (later passes launch only saxpy: KP_RP_MISMATCH reported), "kernel_after_mismatch"
// (begin/end on the same session), "user_fail" (the run function fails: KP_RP_PASSFAIL
// reported; the session is then destroyed), and "after_broken" (a new session after it).
// Exit status 0 when every session produced its JSON, 1 otherwise.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "profile/cupti/kp_rangeprof_api.h"

namespace {

constexpr int kN = 1 << 26;          // floats in x and y (256 MiB each)
constexpr int kStride = 32;          // strided_read: one float per 128 bytes
constexpr int kSmall = 1 << 22;      // floats in the L2-sized buffer (16 MiB)
constexpr int kFmaIters = 512;       // fma_chain: dependent FFMAs per element

}  // namespace

extern "C" __global__ void init_buffers(float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    x[i] = 1.0f + static_cast<float>(i % 7);
    y[i] = 2.0f;
  }
}

// Reads 8 bytes and writes 4 per element: DRAM reads 2*4*n bytes, writes 4*n, n FFMAs.
extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// C++ linkage on purpose (a mangled name): one float of every `stride`, one 32-byte sector each.
__global__ void strided_read(const float* x, float* out, int n_out, int stride) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n_out) out[t] = 2.0f * x[static_cast<size_t>(t) * stride];
}

extern "C" __global__ void fill_small(float* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b[i] = static_cast<float>(i & 1023);
}

// Reads all of b (grid-stride), writes one float per thread.
extern "C" __global__ void read_small(const float* b, float* out, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0;
  for (int i = t; i < n; i += gridDim.x * blockDim.x) acc += b[i];
  out[t] = acc;
}

// kFmaIters dependent FFMAs per element: compute-bound, n * iters FFMA thread instructions.
extern "C" __global__ void fma_chain(float* y, int n, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = y[i];
  for (int k = 0; k < iters; ++k) v = fmaf(v, 0.999f, 0.5f);
  y[i] = v;
}

// Does nothing: a launch-bound loop of it measures launch overhead.
extern "C" __global__ void empty_kernel() {}

namespace {

struct Api {
  decltype(&kp_rp_create) create = nullptr;
  decltype(&kp_rp_num_passes) num_passes = nullptr;
  decltype(&kp_rp_begin) begin = nullptr;
  decltype(&kp_rp_end) end = nullptr;
  decltype(&kp_rp_result_json) result_json = nullptr;
  decltype(&kp_rp_destroy) destroy = nullptr;
  decltype(&kp_rp_collect) collect = nullptr;
};

struct Buffers {
  float* x = nullptr;
  float* y = nullptr;
  float* out = nullptr;  // kN / kStride floats, also read_small's output
  float* small = nullptr;
};

#define CHECK_CUDA(expr)                                                                  \
  do {                                                                                    \
    cudaError_t e_ = (expr);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #expr, __FILE__, __LINE__,     \
                   cudaGetErrorString(e_));                                               \
      std::exit(2);                                                                       \
    }                                                                                     \
  } while (0)

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int blocks(int n) { return (n + 255) / 256; }

void launch_pair(const Buffers& b) {
  saxpy<<<blocks(kN), 256>>>(kN, 2.0f, b.x, b.y);
  strided_read<<<blocks(kN / kStride), 256>>>(b.x, b.out, kN / kStride, kStride);
}
void launch_cache(const Buffers& b) {
  fill_small<<<blocks(kSmall), 256>>>(b.small, kSmall);
  read_small<<<1024, 256>>>(b.small, b.out, kSmall);
}
void launch_one_ms(const Buffers& b) { fma_chain<<<blocks(kN), 256>>>(b.y, kN, kFmaIters); }

// The median of `count` event-timed launches after a warm-up, milliseconds.
double median_event_ms(void (*launch)(const Buffers&), const Buffers& b, int count) {
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  launch(b);  // warm-up
  std::vector<float> ms(count);
  for (float& m : ms) {
    CHECK_CUDA(cudaEventRecord(e0));
    launch(b);
    CHECK_CUDA(cudaEventRecord(e1));
    CHECK_CUDA(cudaEventSynchronize(e1));
    CHECK_CUDA(cudaEventElapsedTime(&m, e0, e1));
  }
  std::sort(ms.begin(), ms.end());
  CHECK_CUDA(cudaEventDestroy(e0));
  CHECK_CUDA(cudaEventDestroy(e1));
  return ms[ms.size() / 2];
}

// The median of 21 event-timed launches (no collection running), printed.
void time_unprofiled(const char* name, void (*launch)(const Buffers&), const Buffers& b) {
  std::printf("KP_RP_KERNEL_MS %s %.4f\n", name, median_event_ms(launch, b, 21));
}

std::vector<std::string> read_metrics(const char* path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "cannot read the metric list %s\n", path);
    std::exit(2);
  }
  std::string line;
  while (std::getline(in, line)) {
    size_t a = line.find_first_not_of(" \t\r");
    if (a == std::string::npos || line[a] == '#') continue;
    size_t z = line.find_last_not_of(" \t\r");
    out.push_back(line.substr(a, z - a + 1));
  }
  return out;
}

std::vector<const char*> pointers(const std::vector<std::string>& names) {
  std::vector<const char*> p;
  for (const auto& n : names) p.push_back(n.c_str());
  return p;
}

// Tries each metric alone; returns the accepted ones.
std::vector<std::string> each_metric(const Api& api, const std::vector<std::string>& metrics) {
  std::vector<std::string> accepted;
  char err[4096];
  for (const auto& m : metrics) {
    const char* one[] = {m.c_str()};
    kp_rp_session* s = api.create(one, 1, 4, err, sizeof err);
    if (s == nullptr) {
      std::printf("KP_RP_METRIC rejected %s | %s\n", m.c_str(), err);
    } else {
      std::printf("KP_RP_METRIC accepted %s passes=%d\n", m.c_str(), api.num_passes(s));
      accepted.push_back(m);
      api.destroy(s);
    }
  }
  std::fflush(stdout);
  return accepted;
}

// One begin/launch/end cycle on `s`; prints KP_RP_TIME and KP_RP_JSON. Returns false on error.
bool collect(const Api& api, kp_rp_session* s, const char* label, double create_s, void (*launch)(const Buffers&),
             const Buffers& b) {
  char err[4096];
  double t0 = now_s();
  if (api.begin(s, err, sizeof err) != KP_RP_OK) {
    std::printf("KP_RP_ERROR %s begin: %s\n", label, err);
    return false;
  }
  double t1 = now_s();
  launch(b);
  double t2 = now_s();
  cudaError_t launch_error = cudaGetLastError();
  int rc = api.end(s, err, sizeof err);
  double t3 = now_s();
  cudaError_t sync_error = cudaDeviceSynchronize();
  if (launch_error != cudaSuccess || sync_error != cudaSuccess) {
    std::printf("KP_RP_ERROR %s CUDA: launch %s, after end %s\n", label, cudaGetErrorString(launch_error),
                cudaGetErrorString(sync_error));
  }
  std::printf("KP_RP_TIME %s create=%.4f begin=%.4f launch=%.4f end=%.4f total=%.4f passes=%d\n", label, create_s,
              t1 - t0, t2 - t1, t3 - t2, t3 - t0, api.num_passes(s));
  if (rc != KP_RP_OK) std::printf("KP_RP_ERROR %s end: %s\n", label, err);
  std::printf("KP_RP_JSON %s %s\n", label, api.result_json(s));
  std::fflush(stdout);
  return rc == KP_RP_OK && launch_error == cudaSuccess && sync_error == cudaSuccess;
}

// kp_rp_collect's user data: the launches, the buffers, y's saved copy, and what the run
// function should do on later passes ("same", "fewer": only saxpy, "fail": return 1).
struct UserReplay {
  void (*launch)(const Buffers&) = nullptr;
  const Buffers* b = nullptr;
  const float* y_saved = nullptr;
  const char* later = "same";
  void* flush = nullptr;
  size_t flush_bytes = 0;
  int prepares = 0, runs = 0;
};

// What the workers' prepare does beside restoring inputs, switched on by the environment to
// see what a pass costs with it: KP_PROBE_FLUSH=1 memsets a 4x-L2 buffer (the L2 flush),
// KP_PROBE_RESET_L2=1 calls cudaCtxResetPersistingL2Cache.
int user_prepare(void* user, int) {
  auto* u = static_cast<UserReplay*>(user);
  ++u->prepares;
  if (cudaMemcpy(u->b->y, u->y_saved, sizeof(float) * kN, cudaMemcpyDeviceToDevice) != cudaSuccess) return 1;
  if (u->flush != nullptr && cudaMemset(u->flush, 0, u->flush_bytes) != cudaSuccess) return 1;
  if (std::getenv("KP_PROBE_RESET_L2") != nullptr) cudaCtxResetPersistingL2Cache();
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}

int user_run(void* user, int pass) {
  auto* u = static_cast<UserReplay*>(user);
  ++u->runs;
  if (pass > 0 && std::strcmp(u->later, "fail") == 0) return 1;
  if (pass > 0 && std::strcmp(u->later, "fewer") == 0) {
    saxpy<<<blocks(kN), 256>>>(kN, 2.0f, u->b->x, u->b->y);
  } else {
    u->launch(*u->b);
  }
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}

// One kp_rp_collect on `s`; prints KP_RP_TIME (collect= is the whole call), KP_RP_USER with the
// return code and the calls made, and KP_RP_JSON. Returns the return code.
int collect_user(const Api& api, kp_rp_session* s, const char* label, double create_s, UserReplay u) {
  char err[4096] = {0};
  double t0 = now_s();
  int rc = api.collect(s, user_prepare, user_run, &u, err, sizeof err);
  double t1 = now_s();
  std::printf("KP_RP_TIME %s create=%.4f collect=%.4f total=%.4f passes=%d\n", label, create_s, t1 - t0,
              create_s + t1 - t0, api.num_passes(s));
  std::printf("KP_RP_USER %s rc=%d prepares=%d runs=%d | %s\n", label, rc, u.prepares, u.runs, err);
  std::printf("KP_RP_JSON %s %s\n", label, api.result_json(s));
  std::fflush(stdout);
  return rc;
}

kp_rp_session* create(const Api& api, const std::vector<std::string>& metrics, int max_kernels, const char* label,
                      double* create_s) {
  char err[4096];
  auto p = pointers(metrics);
  double t0 = now_s();
  kp_rp_session* s = api.create(p.data(), static_cast<int>(p.size()), max_kernels, err, sizeof err);
  *create_s = now_s() - t0;
  if (s == nullptr) std::printf("KP_RP_ERROR %s create: %s\n", label, err);
  return s;
}

// Launch cost: `count` back-to-back launches of empty_kernel, microseconds per launch (event
// time over the whole loop).
double empty_launch_us(int count) {
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  empty_kernel<<<1, 32>>>();
  CHECK_CUDA(cudaEventRecord(e0));
  for (int i = 0; i < count; ++i) empty_kernel<<<1, 32>>>();
  CHECK_CUDA(cudaEventRecord(e1));
  CHECK_CUDA(cudaEventSynchronize(e1));
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
  CHECK_CUDA(cudaEventDestroy(e0));
  CHECK_CUDA(cudaEventDestroy(e1));
  return 1e3 * ms / count;
}

// The median event time of 11 launches of fma_chain (about 1.3 ms), after one warm-up.
double fma_chain_ms(const Buffers& b) { return median_event_ms(launch_one_ms, b, 11); }

// --warm-study: what a warm worker would pay and perturb by keeping a session.
//   KP_RP_WARM REP released fma_ms=.. empty_us=.. | held fma_ms=.. empty_us=..
// alternates timing with no session and with a session held (enabled, not collecting), REPS
// times, to see whether holding one slows the kernels an evaluation times; and
//   KP_RP_TIME LABEL ... / KP_RP_JSON LABEL {...}
// for a first session, its second and third collections, a session of another list (metrics2),
// and the first list again: where the set-up cost of a session goes (the JSON's steps_s).
int warm_study(const Api& api, const std::vector<std::string>& metrics, const std::vector<std::string>& metrics2,
               const Buffers& b, UserReplay u, int reps) {
  double create_s = 0;
  int failures = 0;
  for (int rep = 0; rep < reps; ++rep) {
    double released_fma = fma_chain_ms(b), released_empty = empty_launch_us(2000);
    std::string label = "warm_new_" + std::to_string(rep);
    kp_rp_session* s = create(api, metrics, 256, label.c_str(), &create_s);
    if (s == nullptr) return 1;
    failures += collect_user(api, s, label.c_str(), create_s, u) != KP_RP_OK;
    double held_fma = fma_chain_ms(b), held_empty = empty_launch_us(2000);
    std::string again = "warm_again_" + std::to_string(rep);
    failures += collect_user(api, s, again.c_str(), 0, u) != KP_RP_OK;
    double held2_fma = fma_chain_ms(b), held2_empty = empty_launch_us(2000);
    api.destroy(s);
    double after_fma = fma_chain_ms(b), after_empty = empty_launch_us(2000);
    std::printf("KP_RP_WARM %d released fma_ms=%.4f empty_us=%.3f | held fma_ms=%.4f empty_us=%.3f | held2 fma_ms=%.4f "
                "empty_us=%.3f | destroyed fma_ms=%.4f empty_us=%.3f\n",
                rep, released_fma, released_empty, held_fma, held_empty, held2_fma, held2_empty, after_fma, after_empty);
    std::fflush(stdout);
  }
  if (!metrics2.empty()) {
    kp_rp_session* s = create(api, metrics2, 256, "warm_list2", &create_s);
    if (s == nullptr) return 1;
    failures += collect_user(api, s, "warm_list2", create_s, u) != KP_RP_OK;
    failures += collect_user(api, s, "warm_list2_again", 0, u) != KP_RP_OK;
    api.destroy(s);
    s = create(api, metrics, 256, "warm_list1_back", &create_s);
    if (s == nullptr) return 1;
    failures += collect_user(api, s, "warm_list1_back", create_s, u) != KP_RP_OK;
    // Kernel replay on a warm session that last ran user replay (a mode change rebuilds).
    failures += !collect(api, s, "warm_kernel_replay", 0, launch_one_ms, b);
    failures += !collect(api, s, "warm_kernel_replay_again", 0, launch_one_ms, b);
    api.destroy(s);
  }
  std::printf("KP_RP_DONE %s\n", failures == 0 ? "ok" : "errors");
  return failures == 0 ? 0 : 1;
}

// --capacity-study CAPS: what a session's capacity (max_kernels) costs a warm collection. For
// each capacity in the comma-separated list: a session of `metrics`, one user-replay
// collection to warm it and two more timed (a warm worker's case), then
//   KP_RP_CAP CAP create=.. collect=.. collect2=.. passes=.. counter_data_bytes=..
// and the second timed collection's KP_RP_JSON (its pass and step timings).
int capacity_study(const Api& api, const std::vector<std::string>& metrics, const std::string& caps, UserReplay u) {
  int failures = 0;
  size_t at = 0;
  while (at < caps.size()) {
    size_t comma = caps.find(',', at);
    if (comma == std::string::npos) comma = caps.size();
    int cap = std::atoi(caps.substr(at, comma - at).c_str());
    at = comma + 1;
    if (cap <= 0) continue;
    std::string label = "cap_" + std::to_string(cap);
    double create_s = 0;
    kp_rp_session* s = create(api, metrics, cap, label.c_str(), &create_s);
    if (s == nullptr) return 1;
    char err[4096] = {0};
    UserReplay w = u;
    failures += api.collect(s, user_prepare, user_run, &w, err, sizeof err) != KP_RP_OK;
    double t[2] = {0, 0};
    for (double& each : t) {
      UserReplay v = u;
      double t0 = now_s();
      failures += api.collect(s, user_prepare, user_run, &v, err, sizeof err) != KP_RP_OK;
      each = now_s() - t0;
    }
    std::string json = api.result_json(s);
    size_t key = json.find("\"counter_data_bytes\":");
    long bytes = key == std::string::npos ? -1 : std::atol(json.c_str() + key + 21);
    std::printf("KP_RP_CAP %d create=%.4f collect=%.4f collect2=%.4f passes=%d counter_data_bytes=%ld\n", cap, create_s,
                t[0], t[1], api.num_passes(s), bytes);
    std::printf("KP_RP_JSON %s %s\n", label.c_str(), json.c_str());
    std::fflush(stdout);
    api.destroy(s);
  }
  std::printf("KP_RP_DONE %s\n", failures == 0 ? "ok" : "errors");
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string lib, metrics_file;
  std::string metrics2_file, capacities;
  bool plain = false, each = false;
  int max_kernels = 16, warm_reps = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--lib" && i + 1 < argc) lib = argv[++i];
    else if (a == "--metrics" && i + 1 < argc) metrics_file = argv[++i];
    else if (a == "--max-kernels" && i + 1 < argc) max_kernels = std::atoi(argv[++i]);
    else if (a == "--plain") plain = true;
    else if (a == "--each") each = true;
    else if (a == "--warm-study" && i + 1 < argc) warm_reps = std::atoi(argv[++i]);
    else if (a == "--metrics2" && i + 1 < argc) metrics2_file = argv[++i];
    else if (a == "--capacity-study" && i + 1 < argc) capacities = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s --metrics FILE [--lib PATH] [--each] [--max-kernels N] [--warm-study REPS [--metrics2 FILE]] [--capacity-study N,N,..] | --plain\n", argv[0]);
      return 2;
    }
  }

  CHECK_CUDA(cudaFree(nullptr));  // creates the primary context and makes it current
  // What the workers hold beside the probe's buffers, switched on by the environment to see
  // what a pass costs with it: KP_PROBE_NVML=1 opens NVML on device 0 (as the energy meter
  // does), KP_PROBE_ALLOC=N allocates N more 256 MiB buffers.
  if (std::getenv("KP_PROBE_NVML") != nullptr) {
    void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    auto init = nvml ? reinterpret_cast<int (*)()>(dlsym(nvml, "nvmlInit_v2")) : nullptr;
    auto handle = nvml ? reinterpret_cast<int (*)(unsigned, void**)>(dlsym(nvml, "nvmlDeviceGetHandleByIndex_v2")) : nullptr;
    void* dev = nullptr;
    std::printf("KP_RP_NOTE nvml %s\n", init && handle && init() == 0 && handle(0, &dev) == 0 ? "open" : "unavailable");
  }
  if (const char* n = std::getenv("KP_PROBE_ALLOC")) {
    for (int i = 0; i < std::atoi(n); ++i) {
      void* extra = nullptr;
      CHECK_CUDA(cudaMalloc(&extra, size_t{256} << 20));
      CHECK_CUDA(cudaMemset(extra, 0, size_t{256} << 20));
    }
  }
  Buffers b;
  CHECK_CUDA(cudaMalloc(&b.x, sizeof(float) * kN));
  CHECK_CUDA(cudaMalloc(&b.y, sizeof(float) * kN));
  CHECK_CUDA(cudaMalloc(&b.out, sizeof(float) * (kN / kStride)));
  CHECK_CUDA(cudaMalloc(&b.small, sizeof(float) * kSmall));
  init_buffers<<<blocks(kN), 256>>>(b.x, b.y, kN);
  CHECK_CUDA(cudaDeviceSynchronize());

  std::printf("KP_RP_EXPECT saxpy dram__bytes_read.sum %.0f\n", 2.0 * 4 * kN);
  std::printf("KP_RP_EXPECT saxpy dram__bytes_write.sum %.0f\n", 4.0 * kN);
  std::printf("KP_RP_EXPECT saxpy smsp__sass_thread_inst_executed_op_ffma_pred_on.sum %.0f\n", 1.0 * kN);
  std::printf("KP_RP_EXPECT strided_read dram__bytes_read.sum %.0f (32-byte sectors; 64 if the DRAM fetch is 64 B)\n",
              32.0 * (kN / kStride));
  std::printf("KP_RP_EXPECT fma_chain smsp__sass_thread_inst_executed_op_ffma_pred_on.sum %.0f\n",
              1.0 * kN * kFmaIters);
  std::printf("KP_RP_EXPECT read_small dram__bytes_read.sum %.0f if caches are flushed between replays, ~0 if not\n",
              4.0 * kSmall);

  if (plain) {  // the launches of the sessions below, in the same order, for ncu
    launch_pair(b);
    launch_cache(b);
    launch_one_ms(b);
    CHECK_CUDA(cudaDeviceSynchronize());
    std::printf("KP_RP_PLAIN done\n");
    return 0;
  }
  if (metrics_file.empty()) {
    std::fprintf(stderr, "--metrics FILE is required (or --plain)\n");
    return 2;
  }
  if (lib.empty()) {
    std::string self = argv[0];
    size_t slash = self.rfind('/');
    lib = (slash == std::string::npos ? std::string(".") : self.substr(0, slash)) + "/libkp_rangeprof.so";
  }
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    std::fprintf(stderr, "dlopen %s: %s\n", lib.c_str(), dlerror());
    return 2;
  }
  Api api;
  api.create = reinterpret_cast<decltype(api.create)>(dlsym(h, "kp_rp_create"));
  api.num_passes = reinterpret_cast<decltype(api.num_passes)>(dlsym(h, "kp_rp_num_passes"));
  api.begin = reinterpret_cast<decltype(api.begin)>(dlsym(h, "kp_rp_begin"));
  api.end = reinterpret_cast<decltype(api.end)>(dlsym(h, "kp_rp_end"));
  api.result_json = reinterpret_cast<decltype(api.result_json)>(dlsym(h, "kp_rp_result_json"));
  api.destroy = reinterpret_cast<decltype(api.destroy)>(dlsym(h, "kp_rp_destroy"));
  api.collect = reinterpret_cast<decltype(api.collect)>(dlsym(h, "kp_rp_collect"));
  if (!api.create || !api.num_passes || !api.begin || !api.end || !api.result_json || !api.destroy || !api.collect) {
    std::fprintf(stderr, "%s lacks a kp_rp_* symbol\n", lib.c_str());
    return 2;
  }

  time_unprofiled("saxpy+strided_read", launch_pair, b);
  time_unprofiled("fill_small+read_small", launch_cache, b);
  time_unprofiled("fma_chain", launch_one_ms, b);
  CHECK_CUDA(cudaDeviceSynchronize());

  std::vector<std::string> metrics = read_metrics(metrics_file.c_str());
  std::printf("KP_RP_METRICS %zu from %s\n", metrics.size(), metrics_file.c_str());
  if (each) metrics = each_metric(api, metrics);
  if (warm_reps > 0 || !capacities.empty()) {
    float* y_saved = nullptr;
    CHECK_CUDA(cudaMalloc(&y_saved, sizeof(float) * kN));
    CHECK_CUDA(cudaMemcpy(y_saved, b.y, sizeof(float) * kN, cudaMemcpyDeviceToDevice));
    UserReplay u;
    u.b = &b;
    u.y_saved = y_saved;
    u.launch = launch_one_ms;
    std::vector<std::string> metrics2;
    if (!metrics2_file.empty()) metrics2 = read_metrics(metrics2_file.c_str());
    if (!capacities.empty()) return capacity_study(api, metrics, capacities, u);
    return warm_study(api, metrics, metrics2, b, u, warm_reps);
  }

  bool ok = true;
  double create_s = 0;
  kp_rp_session* s = create(api, metrics, max_kernels, "pair", &create_s);
  if (s == nullptr && !each) {
    std::printf("KP_RP_NOTE the whole list failed; trying each metric alone\n");
    metrics = each_metric(api, metrics);
    s = create(api, metrics, max_kernels, "pair", &create_s);
  }
  if (s == nullptr) return 1;
  ok &= collect(api, s, "pair", create_s, launch_pair, b);
  ok &= collect(api, s, "pair_again", 0, launch_pair, b);
  // The same launches timed while the session is held but not collecting (as a warm worker
  // would hold it through an evaluation): KP_RP_KERNEL_MS NAME_held against the lines above.
  time_unprofiled("saxpy+strided_read_held", launch_pair, b);
  time_unprofiled("fma_chain_held", launch_one_ms, b);
  api.destroy(s);

  s = create(api, metrics, max_kernels, "cache", &create_s);
  if (s == nullptr) return 1;
  ok &= collect(api, s, "cache", create_s, launch_cache, b);
  api.destroy(s);

  s = create(api, metrics, max_kernels, "one_ms", &create_s);
  if (s == nullptr) return 1;
  ok &= collect(api, s, "one_ms", create_s, launch_one_ms, b);
  api.destroy(s);

  // More kernels than max_kernels: the result must say so.
  s = create(api, metrics, 1, "overflow", &create_s);
  if (s == nullptr) return 1;
  bool overflow_ok = collect(api, s, "overflow", create_s, launch_pair, b);
  std::printf("KP_RP_OVERFLOW %s\n", overflow_ok ? "not-reported" : "reported");
  api.destroy(s);

  // User replay: the probe reruns its own launches once per pass (kp_rp_collect).
  float* y_saved = nullptr;
  CHECK_CUDA(cudaMalloc(&y_saved, sizeof(float) * kN));
  CHECK_CUDA(cudaMemcpy(y_saved, b.y, sizeof(float) * kN, cudaMemcpyDeviceToDevice));
  UserReplay u;
  u.b = &b;
  u.y_saved = y_saved;
  u.launch = launch_one_ms;
  if (std::getenv("KP_PROBE_FLUSH") != nullptr) {
    int l2 = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    u.flush_bytes = static_cast<size_t>(l2) * 4;
    CHECK_CUDA(cudaMalloc(&u.flush, u.flush_bytes));
  }
  s = create(api, metrics, max_kernels, "user_one_ms", &create_s);
  if (s == nullptr) return 1;
  ok &= collect_user(api, s, "user_one_ms", create_s, u) == KP_RP_OK;
  u.launch = launch_pair;
  ok &= collect_user(api, s, "user_pair", 0, u) == KP_RP_OK;
  u.later = "fewer";
  std::printf("KP_RP_MISMATCH %s\n",
              collect_user(api, s, "user_fewer", 0, u) == KP_RP_ERR_REPLAY ? "reported" : "not-reported");
  u.later = "same";
  ok &= collect(api, s, "kernel_after_mismatch", 0, launch_pair, b);  // the session is whole again
  u.later = "fail";
  std::printf("KP_RP_PASSFAIL %s\n",
              collect_user(api, s, "user_fail", 0, u) == KP_RP_ERR_PASS ? "reported" : "not-reported");
  std::fflush(stdout);
  std::fprintf(stderr, "KP_RP_STEP destroy a broken session\n");
  api.destroy(s);
  std::fprintf(stderr, "KP_RP_STEP a new session after it\n");
  u.later = "same";
  s = create(api, metrics, max_kernels, "after_broken", &create_s);
  if (s == nullptr) return 1;
  ok &= collect(api, s, "after_broken", create_s, launch_pair, b);
  api.destroy(s);
  CHECK_CUDA(cudaFree(y_saved));

  CHECK_CUDA(cudaDeviceSynchronize());
  std::printf("KP_RP_DONE %s\n", ok ? "ok" : "errors");
  return ok ? 0 : 1;
}
