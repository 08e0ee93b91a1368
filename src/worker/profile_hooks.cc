#include "worker/profile_hooks.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

#include "verdict/worker_plan.h"

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
// cost 0.3 s and its first collection's first start 0.4 s, which a later collection on the same
// session does not pay (bench/results/h200-2026-12-03-warm/).
void* session = nullptr;
std::vector<std::string> session_metrics;
int session_capacity = 0;
const RangeProfilerApi* session_api = nullptr;

// A session's capacity (max_kernels) is the most launches one collection profiles. CUPTI sizes
// the counter data image by it, and every collection starts from a fresh copy of that image, so
// the worker starts small and grows to what the calls it has profiled launched (ARCHITECTURE.md,
// d-session-capacity). KP_RP_CAPACITY=N sets the first capacity (bench/throughput.sh's
// model_wide row: 256, as before).
int first_capacity() {
  static const int first = [] {
    const char* v = std::getenv("KP_RP_CAPACITY");
    int n = v ? std::atoi(v) : 0;
    return n > 0 ? std::min(n, eval::kMostRangeCapacity) : eval::kFirstRangeCapacity;
  }();
  return first;
}
int wanted_capacity = 0;  // 0: first_capacity(); grows, never shrinks, for the worker's life

void drop_session() {
  if (session && session_api) session_api->destroy(session);
  session = nullptr;
  session_metrics.clear();
  session_capacity = 0;
}

}  // namespace

void release_range_profiler() { drop_session(); }

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

// One collection on the kept session (made for `metrics` at the wanted capacity if need be).
// `restore_first`: the inputs are not as `work` expects them (a collection ran before), so
// `prepare` runs before a kernel-replay collection too.
Result<nlohmann::json> collect_once(const RangeProfilerApi* api, const std::vector<std::string>& metrics,
                                    const std::string& replay, const std::function<std::string()>& prepare,
                                    const std::function<std::string()>& work, bool restore_first) {
  char err[1024] = {0};
  if (session && (session_metrics != metrics || session_capacity < wanted_capacity)) drop_session();
  if (!session) {
    std::vector<const char*> names;
    for (const auto& m : metrics) names.push_back(m.c_str());
    session = api->create(names.data(), static_cast<int>(names.size()), wanted_capacity, err, sizeof err);
    if (!session) return range_profiler_error("creating a Range Profiler session", err);
    session_metrics = metrics;
    session_capacity = wanted_capacity;
  }
  std::string fallback_reason;
  bool collected = false;
  if (replay != "kernel" && api->collect) {
    PassFunctions fns{&prepare, &work, {}};
    int rc = api->collect(session, run_prepare, run_work, &fns, err, sizeof err);
    if (!fns.failed.empty()) {
      drop_session();
      return make_error(ErrorCode::kTool, fns.failed);
    }
    if (rc == kReplayMismatch && replay == "auto") {
      fallback_reason = err;  // the candidate's passes differ: CUPTI replays each kernel instead
    } else if (rc != 0 && rc != kDropped) {
      drop_session();
      return range_profiler_error("collecting with the Range Profiler (user replay)", err);
    } else {
      collected = true;
    }
  }
  if (!collected) {
    if (!fallback_reason.empty() || restore_first) {
      std::string failed = prepare();
      if (!failed.empty()) return make_error(ErrorCode::kTool, failed);
    }
    if (api->begin(session, err, sizeof err) != 0) {
      drop_session();
      return range_profiler_error("starting the Range Profiler", err);
    }
    std::string failed = work();
    int end_rc = api->end(session, err, sizeof err);
    // kDropped: more launches than the session holds; the result keeps the first ones (a
    // sample) and counts the rest in "dropped", as the user-replay path does.
    if (!failed.empty() || (end_rc != 0 && end_rc != kDropped)) {
      drop_session();
      if (!failed.empty()) return make_error(ErrorCode::kTool, failed);
      return range_profiler_error("stopping the Range Profiler", err);
    }
  }
  const char* text = api->result_json(session);
  nlohmann::json result = nlohmann::json::parse(text ? text : "", nullptr, false);
  if (result.is_discarded() || !result.is_object())
    return make_error(ErrorCode::kTool, "the Range Profiler library returned a result that is not a JSON object");
  if (!fallback_reason.empty()) result["replay_fallback"] = fallback_reason;
  return result;
}

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
  if (wanted_capacity == 0) wanted_capacity = first_capacity();
  auto t0 = std::chrono::steady_clock::now();
  auto result = collect_once(api, metrics, replay, prepare, work, false);
  // More launches than the session holds: a bigger session and the whole collection again, so
  // that the counters cover the call (up to eval::kMostRangeCapacity launches; beyond, they are a sample).
  if (result.ok()) {
    const int before = session_capacity;
    const int grown = eval::grown_range_capacity(before, result->value("launches", int64_t{-1}),
                                                 result->value("dropped", int64_t{0}));
    if (grown > before) {
      wanted_capacity = grown;
      result = collect_once(api, metrics, replay, prepare, work, true);
      if (result.ok()) (*result)["capacity_grown_from"] = before;
    }
  }
  *collect_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
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
