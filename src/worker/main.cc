// kp-worker: the only process with a CUDA context for native tasks. It serves the JSON-lines
// protocol of verdict/protocol.h on fds 3 (requests) and 4 (replies); stdout and stderr belong to
// the candidates. `kp-worker --once REQ REPLY` answers one request from a file instead, for runs
// under ncu or with the trace library injected. It exits after a sticky CUDA error, since its context is then lost; the
// orchestrator starts a new one.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sys/subprocess.h"
#include "verdict/protocol.h"
#include "worker/calibrate.h"
#include "judge/device_ops.h"
#include "worker/native_evaluator.h"
#include "judge/nvml_energy.h"
#include "worker/orphan_watch.h"
#include "worker/profile_hooks.h"

namespace {

using nlohmann::json;

bool write_reply(FILE* out, const json& reply) {
  std::string line = reply.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  return std::fwrite(line.data(), 1, line.size(), out) == line.size() && std::fflush(out) == 0;
}

// Device-to-device copy bandwidth, bytes read plus bytes written per second: the best of 5
// copies of min(1 GiB, free / 8) bytes after one warm-up copy. The physics floor's bytes term
// rests on it. 0 when it cannot be measured (the term is then not applied).
double measure_copy_bandwidth() {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  const size_t bytes = std::min<size_t>(size_t{1} << 30, free_bytes / 8) & ~size_t{255};
  if (bytes < (size_t{1} << 20)) return 0;
  void* src = nullptr;
  void* dst = nullptr;
  cudaStream_t s = nullptr;
  cudaEvent_t a = nullptr, b = nullptr;
  bool ok = cudaMalloc(&src, bytes) == cudaSuccess && cudaMalloc(&dst, bytes) == cudaSuccess &&
            cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess && cudaEventCreate(&a) == cudaSuccess &&
            cudaEventCreate(&b) == cudaSuccess && cudaMemsetAsync(src, 1, bytes, s) == cudaSuccess &&
            cudaMemsetAsync(dst, 0, bytes, s) == cudaSuccess;
  double best = 0;
  for (int i = 0; ok && i < 6; ++i) {  // the first copy warms up
    ok = cudaEventRecord(a, s) == cudaSuccess && cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s) == cudaSuccess &&
         cudaEventRecord(b, s) == cudaSuccess && cudaEventSynchronize(b) == cudaSuccess;
    float ms = 0;
    if (ok && i > 0 && cudaEventElapsedTime(&ms, a, b) == cudaSuccess && ms > 0)
      best = std::max(best, 2.0 * static_cast<double>(bytes) / (static_cast<double>(ms) * 1e-3));
  }
  if (s) cudaStreamSynchronize(s);
  if (a) cudaEventDestroy(a);
  if (b) cudaEventDestroy(b);
  if (s) cudaStreamDestroy(s);
  if (src) cudaFree(src);
  if (dst) cudaFree(dst);
  cudaGetLastError();
  return ok ? best : 0;
}

// `busy` is set when the device exists but cannot be used now (another process holds it in
// exclusive-process compute mode, or the mode prohibits compute): the machine's failure, for the
// judge to retry (Outcome::kGpuUnavailable), where a missing device is for good (not_run).
kp::Result<kp::eval::DeviceInfo> open_device(bool* busy) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::string why = e == cudaSuccess ? "the driver reports 0 devices" : cudaGetErrorString(e);
    if (access("/dev/nvidiactl", F_OK) != 0) why = "no NVIDIA driver is loaded (no /dev/nvidiactl)";
    return kp::make_error(kp::ErrorCode::kUnavailable,
                          fmt::format("no CUDA device: {}; run on a machine with an NVIDIA GPU and driver", why));
  }
  cudaDeviceProp p{};
  if ((e = cudaGetDeviceProperties(&p, 0)) != cudaSuccess)
    return kp::make_error(kp::ErrorCode::kUnavailable, fmt::format("cudaGetDeviceProperties: {}", cudaGetErrorString(e)));
  cudaSetDevice(0);
  if ((e = cudaFree(nullptr)) != cudaSuccess) {  // creates the context: where a busy device says so
    *busy = e == cudaErrorDevicesUnavailable;
    return kp::make_error(
        kp::ErrorCode::kUnavailable,
        *busy ? fmt::format("the GPU is busy ({}): another process holds it in exclusive-process compute mode, or "
                            "its compute mode prohibits new contexts (nvidia-smi -q -d COMPUTE); the evaluation is "
                            "the machine's and is tried again",
                            cudaGetErrorString(e))
              : fmt::format("creating a CUDA context: {}", cudaGetErrorString(e)));
  }
  kp::eval::DeviceInfo d;
  d.name = p.name;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.sm_count = p.multiProcessorCount;
  d.l2_bytes = p.l2CacheSize;
  d.memory_bytes = static_cast<int64_t>(p.totalGlobalMem);
  cudaDriverGetVersion(&d.driver_version);
  cudaRuntimeGetVersion(&d.runtime_version);
  char bus[64] = {0};
  cudaDeviceGetPCIBusId(bus, sizeof bus, 0);
  d.pci_bus_id = bus;
  int clock_khz = 0;
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0) == cudaSuccess) d.sm_clock_khz = clock_khz;
  cudaGetLastError();
  d.dram_bytes_per_s = measure_copy_bandwidth();
  return d;
}

// The worker's state across requests: the device, opened on first use, and the evaluator.
struct Worker {
  std::unique_ptr<kp::worker::NativeEvaluator> evaluator;
  kp::eval::DeviceInfo device;
  std::string device_error;
  bool device_busy = false;
  bool device_opened = false;
  // A hello's "prewarm_profiler" ({"metrics":[..],"rangeprof_library":path}): run after the
  // hello's reply is written, before the next request is read, so that it overlaps what the
  // orchestrator does meanwhile (building the candidate) and never an evaluation.
  std::optional<json> pending_prewarm;
  std::optional<double> prewarm_seconds;  // reported once, in the next profile reply

  void run_pending_prewarm() {
    if (!pending_prewarm) return;
    json p = std::move(*pending_prewarm);
    pending_prewarm.reset();
    if (!evaluator) return;
    std::vector<std::string> metrics = p.value("metrics", std::vector<std::string>{});
    std::string library = p.value("rangeprof_library", std::string());
    void* scratch = nullptr;
    if (cudaMalloc(&scratch, 4096) != cudaSuccess) {
      cudaGetLastError();
      std::fprintf(stderr, "kp-worker: prewarming the Range Profiler: cudaMalloc of 4 KiB failed\n");
      return;
    }
    auto work = [scratch]() -> std::string {
      if (kp::judge::fill_pattern(scratch, 4, 1024, 0, nullptr) != cudaSuccess) return "fill_pattern launch failed";
      return cudaDeviceSynchronize() == cudaSuccess ? "" : "cudaDeviceSynchronize failed";
    };
    auto r = kp::worker::prewarm_range_profiler(library, metrics, work);
    cudaFree(scratch);
    if (r.ok()) {
      prewarm_seconds = *r;
    } else {
      std::fprintf(stderr, "kp-worker: prewarming the Range Profiler failed (profiling will set it up itself): %s\n",
                   r.error().message.c_str());
    }
  }

  void ensure_device() {
    if (device_opened) return;
    device_opened = true;
    auto d = open_device(&device_busy);
    if (!d.ok()) {
      device_error = d.error().message;
      return;
    }
    device = *d;
    auto nvml = kp::judge::Nvml::open(device.pci_bus_id);
    if (nvml.ok()) {
      device.nvml = true;
    } else {
      device.nvml_error = nvml.error().message;
    }
    evaluator = std::make_unique<kp::worker::NativeEvaluator>(device);
  }

  // One request, one reply. *exit_code is set when the worker must exit after replying: 0 for
  // shutdown, 3 when the CUDA context is lost.
  json handle(const json& req, std::optional<int>* exit_code) {
    std::string op = req.value("op", "");
    if (op == "shutdown") {
      *exit_code = 0;
      return {{"ok", true}};
    }
    if (op == "hello") {
      ensure_device();
      if (auto p = req.find("prewarm_profiler"); p != req.end() && p->is_object()) pending_prewarm = *p;
      if (!evaluator)
        return {{"ok", false}, {"error", device_error}, {"busy", device_busy}, {"protocol", kp::eval::kProtocolVersion}};
      return {{"ok", true}, {"device", kp::eval::to_json(device)}, {"protocol", kp::eval::kProtocolVersion}};
    }
    // [worker ops: each block below answers one op]
    if (op == "calibrate") {  // kernelpro calibrate (worker/calibrate.h)
      ensure_device();
      if (!evaluator) return {{"ok", false}, {"id", req.value("id", 0)}, {"error", device_error}};
      json reply = kp::worker::calibrate_reply(req, device);
      if (reply.value("exiting", false)) *exit_code = 3;  // a CUDA failure: the context may be lost
      return reply;
    }
    if (op != "eval" && op != "profile")
      return {{"ok", false}, {"error", fmt::format("unknown op \"{}\" (hello, eval, profile, calibrate, shutdown)", op)}};
    ensure_device();
    json reply = {{"id", req.value("id", 0)}};
    if (!evaluator) {
      reply["ok"] = false;
      reply["error"] = device_error;
      return reply;
    }
    auto task = kp::eval::task_from_json(req.value("task", json::object()));
    if (!task.ok()) {
      reply["ok"] = false;
      reply["error"] = task.error().message;
      return reply;
    }
    kp::eval::EvalOptions options = kp::eval::eval_options_from_json(req.value("options", json::object()));
    uint64_t seed = options.seed ? *options.seed : std::random_device{}() * 0x100000001ull + std::random_device{}();
    bool poisoned = false;
    if (op == "profile") {
      kp::eval::ProfileRequest preq = kp::eval::profile_request_from_json(req.value("profile", json::object()));
      kp::eval::ProfileReply result = evaluator->profile(*task, req.value("reference", ""), req.value("candidate", ""),
                                                         options, preq, seed, &poisoned);
      if (prewarm_seconds) result.phase_seconds["prewarm"] = *prewarm_seconds;
      prewarm_seconds.reset();
      reply["ok"] = true;
      reply["profile"] = kp::eval::to_json(result);
    } else {
      // The kept Range Profiler session stays: held but not collecting, it did not change the
      // timing of a 1.3 ms kernel or of a 5 us launch on the H200 (profile_hooks.h).
      kp::eval::WorkerReport report =
          evaluator->evaluate(*task, req.value("reference", ""), req.value("candidate", ""), options, seed, &poisoned);
      reply["ok"] = true;
      reply["report"] = kp::eval::to_json(report);
    }
    std::fflush(stdout);
    std::fflush(stderr);
    reply["exiting"] = poisoned;  // the orchestrator then waits for this process to end
    if (poisoned) *exit_code = 3;  // the context is lost; the orchestrator starts a fresh worker
    return reply;
  }
};

// --once REQUEST REPLY: answers the one request in the file REQUEST (a JSON object) into the
// file REPLY, then exits. This is how kp-worker runs under ncu or with the trace library
// injected: a one-shot process with nothing else in it.
int run_once(const char* request_path, const char* reply_path) {
  std::ifstream in(request_path);
  std::stringstream text;
  text << in.rdbuf();
  json req = json::parse(text.str(), nullptr, false);
  FILE* out = std::fopen(reply_path, "w");
  if (!out) {
    std::fprintf(stderr, "kp-worker: cannot write the reply file %s\n", reply_path);
    return 2;
  }
  json reply;
  std::optional<int> exit_code;
  if (!in || req.is_discarded() || !req.is_object() || !req.contains("op")) {
    reply = {{"ok", false}, {"error", fmt::format("malformed request file {}: expected a JSON object with \"op\"", request_path)}};
  } else {
    Worker worker;
    reply = worker.handle(req, &exit_code);
  }
  bool ok = write_reply(out, reply);
  std::fclose(out);
  return ok ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  int request_fd = kp::eval::kRequestFd, reply_fd = kp::eval::kReplyFd;
  if (argc > 1 && std::string(argv[1]) == "--once") {
    if (argc != 4) {
      std::fprintf(stderr, "usage: kp-worker --once REQUEST.json REPLY.json\n");
      return 2;
    }
    kp::worker::watch_orchestrator(-1);
    kp::sys::become_subreaper();
    const int rc = run_once(argv[2], argv[3]);
    kp::sys::kill_descendants();
    return rc;
  }
  if (argc > 1 && std::string(argv[1]) == "--stdio") {  // for manual debugging
    request_fd = 0;
    reply_fd = 1;
  }
  FILE* in = fdopen(request_fd, "r");
  FILE* out = fdopen(reply_fd, "w");
  if (!in || !out) {
    std::fprintf(stderr, "kp-worker: fds %d and %d must be open (the orchestrator starts this program)\n", request_fd, reply_fd);
    return 2;
  }
  kp::worker::watch_orchestrator(request_fd);
  // A candidate's orphans are re-parented here, not to init, wherever they moved (setsid, a
  // double fork, a cleared environment), so that the evaluator finds them and the exit ends them.
  kp::sys::become_subreaper();
  Worker worker;
  char* buf = nullptr;
  size_t cap = 0;
  while (true) {
    ssize_t len = getline(&buf, &cap, in);
    if (len < 0) break;  // the orchestrator closed the channel
    json req = json::parse(std::string(buf, static_cast<size_t>(len)), nullptr, false);
    if (req.is_discarded() || !req.is_object() || !req.contains("op")) {
      write_reply(out, {{"ok", false}, {"error", "malformed request: expected a JSON object with \"op\""}});
      continue;
    }
    std::optional<int> exit_code;
    json reply = worker.handle(req, &exit_code);
    if (req.value("op", "") == "shutdown") break;
    write_reply(out, reply);
    if (exit_code) {
      kp::sys::kill_descendants();
      return *exit_code;
    }
    worker.run_pending_prewarm();
  }
  kp::worker::release_range_profiler();
  kp::sys::kill_descendants();
  return 0;
}
