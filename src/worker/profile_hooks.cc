#include "worker/profile_hooks.h"

#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

namespace kp::worker {

namespace {

// The C API of libkp_rangeprof.so (src/profile/cupti/kp_rangeprof_api.h), resolved by name.
struct RangeProfilerApi {
  void* (*create)(const char* const*, int, int, char*, size_t) = nullptr;
  int (*begin)(void*, char*, size_t) = nullptr;
  int (*end)(void*, char*, size_t) = nullptr;
  int (*collect)(void*, int (*)(void*, int), int (*)(void*, int), void*, char*, size_t) = nullptr;  // may be absent
  const char* (*result_json)(void*) = nullptr;
  void (*destroy)(void*) = nullptr;
};

Result<const RangeProfilerApi*> load_range_profiler(const std::string& path) {
  static RangeProfilerApi api;
  static std::string loaded;
  if (!loaded.empty() && loaded == path) return &api;
  if (path.empty())
    return make_error(ErrorCode::kInvalidInput, "no Range Profiler library was named in the profile request");
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return make_error(ErrorCode::kNotFound,
                      fmt::format("cannot load {} ({}); build the kp_rangeprof target, or profile with --collector ncu",
                                  path, dlerror()));
  RangeProfilerApi a;
  a.create = reinterpret_cast<decltype(a.create)>(dlsym(h, "kp_rp_create"));
  a.begin = reinterpret_cast<decltype(a.begin)>(dlsym(h, "kp_rp_begin"));
  a.end = reinterpret_cast<decltype(a.end)>(dlsym(h, "kp_rp_end"));
  a.result_json = reinterpret_cast<decltype(a.result_json)>(dlsym(h, "kp_rp_result_json"));
  a.destroy = reinterpret_cast<decltype(a.destroy)>(dlsym(h, "kp_rp_destroy"));
  a.collect = reinterpret_cast<decltype(a.collect)>(dlsym(h, "kp_rp_collect"));
  if (!a.create || !a.begin || !a.end || !a.result_json || !a.destroy)
    return make_error(ErrorCode::kNotFound, fmt::format("{} does not export the kp_rp_* API; rebuild it", path));
  api = a;
  loaded = path;
  return &api;
}

// CUPTI's words into an error class: a permission problem and a bad metric name are the user's
// to fix, anything else is the tool's.
Error range_profiler_error(std::string_view what, const char* message) {
  std::string m = fmt::format("{}: {}", what, message);
  ErrorCode code = ErrorCode::kTool;
  if (m.find("privilege") != std::string::npos || m.find("NVGPUCTRPERM") != std::string::npos ||
      m.find("permission") != std::string::npos)
    code = ErrorCode::kUnavailable;
  else if (m.find("metric") != std::string::npos)
    code = ErrorCode::kInvalidInput;
  return make_error(code, std::move(m));
}

}  // namespace

namespace {

// One session per metric list, kept across requests and evaluations: on the H200 creating one
// for 256 kernels cost 0.3 s and its first collection's first start 0.4 s, which a later
// collection on the same session does not pay (bench/results/h200-2026-12-03-warm/).
void* session = nullptr;
std::vector<std::string> session_metrics;
const RangeProfilerApi* session_api = nullptr;

}  // namespace

void release_range_profiler() {
  if (session && session_api) session_api->destroy(session);
  session = nullptr;
  session_metrics.clear();
}

namespace {

// kp_rp_collect's callbacks over the caller's two functions; the first failure is kept.
struct PassFunctions {
  const std::function<std::string()>* prepare;
  const std::function<std::string()>* work;
  std::string failed;
};

int run_prepare(void* user, int) {
  auto* f = static_cast<PassFunctions*>(user);
  f->failed = (*f->prepare)();
  return f->failed.empty() ? 0 : 1;
}

int run_work(void* user, int) {
  auto* f = static_cast<PassFunctions*>(user);
  f->failed = (*f->work)();
  return f->failed.empty() ? 0 : 1;
}

constexpr int kDropped = 6;         // KP_RP_ERR_DROPPED
constexpr int kReplayMismatch = 8;  // KP_RP_ERR_REPLAY

}  // namespace

Result<nlohmann::json> collect_range_profile(const std::string& library_path, const std::vector<std::string>& metrics,
                                             const std::string& replay, const std::function<std::string()>& prepare,
                                             const std::function<std::string()>& work, double* collect_s) {
  if (replay != "auto" && replay != "user" && replay != "kernel")
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("unknown replay \"{}\" in the profile request (auto, user or kernel)", replay));
  KP_TRY(const RangeProfilerApi* api, load_range_profiler(library_path));
  if (metrics.empty()) return make_error(ErrorCode::kInvalidInput, "the profile request names no metrics");
  if (replay == "user" && !api->collect)
    return make_error(ErrorCode::kNotFound, fmt::format("{} has no kp_rp_collect (user replay); rebuild it", library_path));
  session_api = api;
  char err[1024] = {0};
  auto t0 = std::chrono::steady_clock::now();
  auto drop = [&]() {
    if (session) api->destroy(session);
    session = nullptr;
    session_metrics.clear();
  };
  auto finish = [&]() { *collect_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  if (session && session_metrics != metrics) drop();
  if (!session) {
    std::vector<const char*> names;
    for (const auto& m : metrics) names.push_back(m.c_str());
    session = api->create(names.data(), static_cast<int>(names.size()), 256, err, sizeof err);
    if (!session) {
      finish();
      return range_profiler_error("creating a Range Profiler session", err);
    }
    session_metrics = metrics;
  }
  std::string fallback_reason;
  bool collected = false;
  if (replay != "kernel" && api->collect) {
    PassFunctions fns{&prepare, &work, {}};
    int rc = api->collect(session, run_prepare, run_work, &fns, err, sizeof err);
    if (!fns.failed.empty()) {
      drop();
      finish();
      return make_error(ErrorCode::kTool, fns.failed);
    }
    if (rc == kReplayMismatch && replay == "auto") {
      fallback_reason = err;  // the candidate's passes differ: CUPTI replays each kernel instead
    } else if (rc != 0 && rc != kDropped) {
      drop();
      finish();
      return range_profiler_error("collecting with the Range Profiler (user replay)", err);
    } else {
      collected = true;
    }
  }
  if (!collected) {
    if (!fallback_reason.empty()) {
      std::string failed = prepare();
      if (!failed.empty()) {
        finish();
        return make_error(ErrorCode::kTool, failed);
      }
    }
    if (api->begin(session, err, sizeof err) != 0) {
      drop();
      finish();
      return range_profiler_error("starting the Range Profiler", err);
    }
    std::string failed = work();
    int end_rc = api->end(session, err, sizeof err);
    // kDropped: more launches than the session holds; the result keeps the first ones (a
    // sample) and counts the rest in "dropped", as the user-replay path does.
    if (!failed.empty() || (end_rc != 0 && end_rc != kDropped)) {
      drop();
      finish();
      if (!failed.empty()) return make_error(ErrorCode::kTool, failed);
      return range_profiler_error("stopping the Range Profiler", err);
    }
  }
  const char* text = api->result_json(session);
  nlohmann::json result = nlohmann::json::parse(text ? text : "", nullptr, false);
  finish();
  if (result.is_discarded() || !result.is_object())
    return make_error(ErrorCode::kTool, "the Range Profiler library returned a result that is not a JSON object");
  if (!fallback_reason.empty()) result["replay_fallback"] = fallback_reason;
  return result;
}

Result<double> prewarm_range_profiler(const std::string& library_path, const std::vector<std::string>& metrics,
                                      const std::function<std::string()>& work) {
  auto t0 = std::chrono::steady_clock::now();
  const std::function<std::string()> nothing = [] { return std::string(); };
  double collect_s = 0;
  KP_TRY(nlohmann::json result, collect_range_profile(library_path, metrics, "user", nothing, work, &collect_s));
  (void)result;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

Result<TraceMarks> find_trace_marks() {
  const char* path = std::getenv("CUDA_INJECTION64_PATH");
  if (!path || !*path)
    return make_error(ErrorCode::kNotFound,
                      "a trace request needs libkp_trace.so injected: run kp-worker with CUDA_INJECTION64_PATH set to it");
  void* h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (!h) return make_error(ErrorCode::kNotFound, fmt::format("{} (CUDA_INJECTION64_PATH) is not loaded in this process", path));
  TraceMarks m;
  m.begin = reinterpret_cast<int (*)(int)>(dlsym(h, "kp_trace_begin"));
  m.end = reinterpret_cast<int (*)(int)>(dlsym(h, "kp_trace_end"));
  if (!m.begin || !m.end)
    return make_error(ErrorCode::kNotFound, fmt::format("{} does not export kp_trace_begin/kp_trace_end: it is not libkp_trace.so", path));
  return m;
}

}  // namespace kp::worker
