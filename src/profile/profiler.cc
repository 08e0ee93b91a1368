#include "profile/profiler.h"

#include <chrono>
#include <fstream>
#include <future>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "profile/cupti/range_profile.h"
#include "profile/sass/sass_arch.h"
#include "profile/trace/trace_parser.h"
#include "sys/subprocess.h"
#include "util/strings.h"

namespace kp::profile {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A candidate that did not pass its correctness trial in the profile run: its counters would
// describe a wrong kernel.
Result<eval::ProfileReply> checked(eval::ProfileReply reply, const std::string& what) {
  if (reply.outcome != eval::Outcome::kOk)
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("{}: the candidate's run ended {} ({}); fix it with `kernelpro eval` first",
                                  what, eval::to_string(reply.outcome), reply.reason));
  return reply;
}

}  // namespace

Profiler::Profiler(ProfilerOptions options, eval::WorkerClient& worker) : options_(std::move(options)), worker_(worker) {}

Result<Profiler::OnceRun> Profiler::prepare_once(const ProfileTarget& target, const eval::ProfileRequest& request,
                                                 const std::string& tag) {
  if (options_.once_argv.empty())
    return make_error(ErrorCode::kInvalidInput, "no one-shot worker command was configured (ProfilerOptions::once_argv)");
  int n = ++runs_;
  fs::path req_path = options_.scratch_dir / fmt::format("{}-{}.request.json", tag, n);
  OnceRun run;
  run.reply_path = options_.scratch_dir / fmt::format("{}-{}.reply.json", tag, n);
  json req = eval::candidate_request("profile", target.task, target.reference, target.candidate, target.options,
                                     &target.files);
  req["id"] = n;
  req["profile"] = eval::to_json(request);
  KP_TRY_STATUS(write_file(req_path, req.dump() + "\n"));
  std::error_code ec;
  fs::remove(run.reply_path, ec);
  run.command.argv = options_.once_argv;
  run.command.argv.insert(run.command.argv.end(), {"--once", req_path.string(), run.reply_path.string()});
  run.command.cwd = options_.scratch_dir.string();
  run.command.env_set = options_.once_env;
  run.command.env_unset = {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "KERNELPRO_API_KEY"};
  run.command.timeout = std::chrono::milliseconds(static_cast<int64_t>(options_.timeout_s * 1000));
  run.command.limits.file_size_bytes = uint64_t{4} << 30;
  return run;
}

Result<eval::ProfileReply> Profiler::read_once_reply(const OnceRun& run, const std::string& what) {
  auto text = read_file(run.reply_path);
  if (!text.ok())
    return make_error(ErrorCode::kTool, fmt::format("{}: the one-shot worker wrote no reply ({}); it crashed or was killed",
                                                    what, run.reply_path.string()));
  json reply = json::parse(*text, nullptr, false);
  if (reply.is_discarded() || !reply.is_object())
    return make_error(ErrorCode::kTool, fmt::format("{}: the reply in {} is not JSON", what, run.reply_path.string()));
  if (!reply.value("ok", false))
    return make_error(ErrorCode::kTool, fmt::format("{}: {}", what, reply.value("error", std::string("the worker failed"))));
  KP_TRY(eval::ProfileReply pr, eval::profile_reply_from_json(reply.value("profile", json::object())));
  return checked(std::move(pr), what);
}

Result<KernelProfile> Profiler::counters(const ProfileTarget& target, const std::vector<std::string>& metrics,
                                         Collector collector, const NcuOptions* ncu_override) {
  eval::ProfileRequest request;
  request.metrics = metrics;
  request.warmup_calls = options_.warmup_calls;
  request.check = options_.check;
  request.replay = options_.replay;
  auto t0 = std::chrono::steady_clock::now();
  if (collector == Collector::kCupti) {
    if (options_.rangeprof_library.empty())
      return make_error(ErrorCode::kNotFound, "libkp_rangeprof.so was not found beside kp-worker; build the kp_rangeprof "
                                              "target, or collect with --collector ncu");
    request.mode = eval::ProfileMode::kCupti;
    request.rangeprof_library = fs::absolute(options_.rangeprof_library).string();
    json req = eval::candidate_request("profile", target.task, target.reference, target.candidate, target.options,
                                       &target.files);
    req["profile"] = eval::to_json(request);
    KP_TRY(auto call, worker_.call(std::move(req), options_.timeout_s));
    KP_TRY(eval::ProfileReply pr, eval::profile_reply_from_json(call.reply.value("profile", json::object())));
    KP_TRY(pr, checked(std::move(pr), "profiling with the CUPTI range profiler"));
    KP_TRY(KernelProfile parsed, parse_range_profile(pr.range_profile.dump()));
    KernelProfile p;
    p.collector = Collector::kCupti;
    p.kernels = std::move(parsed.kernels);
    p.unprofiled_launches = parsed.unprofiled_launches;
    p.capacity = parsed.capacity;
    p.capacity_grown_from = parsed.capacity_grown_from;
    p.metrics = metrics;
    p.passes = pr.range_profile.value("passes", 0);
    p.replay = pr.range_profile.value("replay", std::string("kernel"));
    p.replay_fallback = pr.range_profile.value("replay_fallback", std::string());
    if (auto t = pr.range_profile.find("timing_s"); t != pr.range_profile.end() && t->is_object())
      for (const auto& [k, v] : t->items())
        if (v.is_number()) p.timing_s[k] = v.get<double>();
    // Per pass (user replay): the sum and the first pass of each step, "pass.run" and
    // "pass.run.first": a first pass far above the rest is a set-up cost, not a pass cost.
    if (auto t = pr.range_profile.find("pass_timing_s"); t != pr.range_profile.end() && t->is_object())
      for (const auto& [k, v] : t->items()) {
        if (!v.is_array() || v.empty()) continue;
        double sum = 0;
        for (const auto& x : v)
          if (x.is_number()) sum += x.get<double>();
        p.timing_s["pass." + k] = sum;
        if (v.front().is_number()) p.timing_s["pass." + k + ".first"] = v.front().get<double>();
      }
    // The library's set-up steps ("step.host_initialize", "step.set_config", "step.start", ...),
    // summed where a step ran twice (a rebuild).
    if (auto t = pr.range_profile.find("steps_s"); t != pr.range_profile.end() && t->is_array())
      for (const auto& step : *t)
        if (step.is_array() && step.size() == 2 && step[0].is_string() && step[1].is_number())
          p.timing_s["step." + step[0].get<std::string>()] += step[1].get<double>();
    for (const auto& [k, v] : pr.phase_seconds) p.timing_s["worker." + k] = v;
    p.collect_s = pr.collect_seconds;
    p.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return p;
  }
  request.mode = eval::ProfileMode::kNvtx;
  request.calls = 1;
  worker_.stop();  // it may hold a Range Profiler session; ncu needs the counters to itself
  KP_TRY(OnceRun run, prepare_once(target, request, "ncu"));
  NcuOptions ncu = ncu_override ? *ncu_override : options_.ncu;
  ncu.metrics = metrics;
  ncu.log_file = options_.scratch_dir / fmt::format("ncu-{}.csv", runs_);
  if (ncu.timeout_s <= 0) ncu.timeout_s = options_.timeout_s;
  KP_TRY(KernelProfile p, run_ncu(ncu, run.command));
  KP_TRY(eval::ProfileReply pr, read_once_reply(run, "profiling with ncu"));
  (void)pr;
  p.collect_s = p.wall_s;  // the whole ncu run: its start-up is part of what it costs
  p.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

Result<Trace> Profiler::trace(const ProfileTarget& target) {
  if (options_.trace_library.empty() || !fs::exists(options_.trace_library))
    return make_error(ErrorCode::kNotFound, "libkp_trace.so was not found beside kp-worker; build the kp_trace target");
  eval::ProfileRequest request;
  request.mode = eval::ProfileMode::kTrace;
  request.calls = options_.trace_calls;
  request.warmup_calls = options_.warmup_calls;
  request.check = options_.check;
  KP_TRY(OnceRun run, prepare_once(target, request, "trace"));
  fs::path out = options_.scratch_dir / fmt::format("trace-{}.jsonl", runs_);
  for (auto& kv : trace_environment(fs::absolute(options_.trace_library), out)) run.command.env_set.push_back(kv);
  run.command.stdout_path = (options_.scratch_dir / fmt::format("trace-{}.stdout.log", runs_)).string();
  run.command.stderr_path = (options_.scratch_dir / fmt::format("trace-{}.stderr.log", runs_)).string();
  KP_TRY(sys::Completed done, sys::run(run.command));
  if (done.timed_out)
    return make_error(ErrorCode::kTimeout, fmt::format("the traced worker ran past {:.0f} s and was killed", options_.timeout_s));
  KP_TRY(eval::ProfileReply pr, read_once_reply(run, "tracing"));
  (void)pr;
  auto text = read_file(out);
  if (!text.ok()) return make_error(ErrorCode::kTool, fmt::format("the trace library wrote no file {}", out.string()));
  KP_TRY(Trace t, parse_trace(*text));
  if (!t.error.empty()) return make_error(ErrorCode::kUnavailable, "the CUPTI trace: " + t.error);
  return t;
}

namespace {

// Listings by object (path, size, modification time) and tool: a build's SASS does not change,
// and the build cache names each object by its content. An entry is the listing's future, so a
// reader that comes while a prefetch still runs cuobjdump waits for that run instead of starting
// another; a failed run leaves the cache, so the next reader tries again.
using SassFuture = std::shared_future<Result<SassListing>>;
std::mutex sass_cache_mutex;
std::map<std::string, SassFuture> sass_cache;

std::string sass_cache_key(const SassToolOptions& options, const fs::path& object) {
  std::error_code ec;
  const auto size = fs::file_size(object, ec);
  if (ec) return "";
  const auto mtime = fs::last_write_time(object, ec);
  if (ec) return "";
  return fmt::format("{}\n{}\n{}\n{}", object.string(), size, mtime.time_since_epoch().count(),
                     options.cuobjdump.string());
}

// The listing's future: the cached one, or a new one that runs cuobjdump on a thread of its own
// (`policy` async) or in the first thread that waits for it (deferred).
SassFuture listing_future(const SassToolOptions& options, const fs::path& object, std::launch policy,
                          std::string* key_out) {
  const std::string key = sass_cache_key(options, object);
  *key_out = key;
  auto run = [options, object]() { return disassemble(options, object); };
  if (key.empty()) return std::async(std::launch::deferred, run).share();
  std::lock_guard<std::mutex> lock(sass_cache_mutex);
  if (auto it = sass_cache.find(key); it != sass_cache.end()) return it->second;
  SassFuture f = std::async(policy, run).share();
  sass_cache.emplace(key, f);
  return f;
}

// A failure leaves the cache and is tried once more: the failed run may have been a prefetch's,
// started before the object was complete.
Result<SassListing> cached_listing(const SassToolOptions& options, const fs::path& object) {
  for (int attempt = 0;; ++attempt) {
    std::string key;
    SassFuture f = listing_future(options, object, std::launch::deferred, &key);
    Result<SassListing> listing = f.get();
    if (listing.ok() || key.empty()) return listing;
    {
      std::lock_guard<std::mutex> lock(sass_cache_mutex);
      sass_cache.erase(key);
    }
    if (attempt == 1) return listing;
  }
}

}  // namespace

Result<std::vector<KernelSass>> Profiler::sass(const fs::path& object, const build::PtxasReport& ptxas, int cc_major,
                                               int cc_minor) {
  KP_TRY(SassListing listing, cached_listing(options_.sass, object));
  return join_with_ptxas(listing, ptxas, sass_arch(cc_major, cc_minor));
}

Result<SassListing> Profiler::sass_listing(const SassToolOptions& options, const fs::path& object) {
  return cached_listing(options, object);
}

void Profiler::prefetch_sass(const SassToolOptions& options, const fs::path& object) {
  std::string key;
  (void)listing_future(options, object, std::launch::async, &key);
}

}  // namespace kp::profile
