#include "campaign/baseline.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <ctime>
#include <atomic>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "task/kernelbench_loader.h"
#include "util/strings.h"

namespace kp::campaign {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The problem's record, or nullptr.
const json* find_record(const json& doc, const SuiteProblem& p) {
  auto probs = doc.find("problems");
  if (probs == doc.end() || !probs->is_object()) return nullptr;
  auto lvl = probs->find(level_key(p.level));
  if (lvl == probs->end() || !lvl->is_object()) return nullptr;
  auto rec = lvl->find(p.name);
  return rec == lvl->end() || !rec->is_object() ? nullptr : &*rec;
}

// results[mode] when it is a successful measurement, else nullptr.
const json* ok_result(const json& record, std::string_view mode) {
  auto res = record.find("results");
  if (res == record.end() || !res->is_object()) return nullptr;
  auto m = res->find(std::string(mode));
  if (m == res->end() || !m->is_object() || !m->value("ok", false) || !m->contains("mean_ms")) return nullptr;
  return &*m;
}

std::string first_line(const std::string& s, size_t max_chars) {
  std::string line = s.substr(0, s.find('\n'));
  return line.size() > max_chars ? line.substr(0, max_chars - 3) + "..." : line;
}

std::string format_ms(double ms) { return format_seconds(ms / 1000.0); }

}  // namespace

std::string level_key(int level) { return fmt::format("level{}", level); }

double round_significant(double x, int digits) {
  if (x == 0 || !std::isfinite(x)) return x;
  int p = digits - static_cast<int>(std::ceil(std::log10(std::fabs(x))));
  // Scale by an exact power of ten on the side that keeps the integer exact, so the result is
  // the double nearest to the rounded decimal (and prints as such).
  if (p >= 0) {
    double f = std::pow(10.0, p);
    return std::round(x * f) / f;
  }
  double f = std::pow(10.0, -p);
  return std::round(x / f) * f;
}

std::string gpu_slug(std::string_view name) {
  std::string out;
  for (char ch : name) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (std::isalnum(c))
      out += static_cast<char>(std::tolower(c));
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "unknown-gpu" : out;
}

Result<SuiteListing> list_suite(const fs::path& suite_dir, const std::vector<int>& levels,
                                const std::vector<std::string>& only) {
  std::error_code ec;
  if (!fs::is_directory(suite_dir, ec))
    return make_error(ErrorCode::kNotFound, fmt::format("{}: no such suite folder (KernelBench's folder with level1/, "
                                                        "level2/, level3/, e.g. KernelBench/KernelBench)",
                                                        suite_dir.string()));
  SuiteListing out;
  std::set<std::string> wanted(only.begin(), only.end()), matched;
  for (int level : levels) {
    fs::path dir = fs::absolute(suite_dir / level_key(level)).lexically_normal();
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<SuiteProblem> found;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (!entry.is_regular_file() || entry.path().extension() != ".py") continue;
      std::string name = entry.path().filename().string(), stem = entry.path().stem().string();
      if (!wanted.empty()) {
        if (wanted.count(name))
          matched.insert(name);
        else if (wanted.count(stem))
          matched.insert(stem);
        else
          continue;
      }
      auto t = task::load_kernelbench_problem(entry.path());
      if (!t.ok()) {
        out.skipped.push_back(t.error().message);
        continue;
      }
      found.push_back(SuiteProblem{level, t->problem_id, t->name, t->reference_path});
    }
    std::sort(found.begin(), found.end(), [](const SuiteProblem& a, const SuiteProblem& b) {
      return a.problem_id != b.problem_id ? a.problem_id < b.problem_id : a.name < b.name;
    });
    out.problems.insert(out.problems.end(), found.begin(), found.end());
  }
  std::vector<std::string> unmatched;
  for (const auto& w : wanted)
    if (!matched.count(w)) unmatched.push_back(w);
  if (!unmatched.empty())
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("--only names no problem under {} in the levels asked for: {} (give file names such "
                                  "as 23_Softmax.py or their stems)",
                                  suite_dir.string(), join(unmatched, ", ")));
  if (out.problems.empty()) {
    std::vector<std::string> dirs;
    for (int level : levels) dirs.push_back((suite_dir / level_key(level)).string());
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("no KernelBench problem found in {}{}", join(dirs, ", "),
                                  out.skipped.empty() ? "" : "; skipped: " + join(out.skipped, "; ")));
  }
  return out;
}

json empty_baseline_doc() { return {{"format", "kernelpro-baseline"}, {"version", 1}, {"problems", json::object()}}; }

Result<json> load_baseline_doc(const fs::path& file) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return empty_baseline_doc();
  KP_TRY(std::string text, read_file(file.string()));
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || doc.value("format", std::string()) != "kernelpro-baseline" ||
      !doc.contains("problems") || !doc["problems"].is_object())
    return make_error(
        ErrorCode::kInvalidInput,
        fmt::format("{} is not a kernelpro baseline file (JSON with \"format\":\"kernelpro-baseline\" and "
                    "\"problems\"); fix it, or move it away to start over, or pass another --out",
                    file.string()));
  return doc;
}

std::vector<std::string> modes_to_run(const json& doc, const SuiteProblem& p, const std::vector<std::string>& requested,
                                      RetryFailed retry) {
  const json* rec = find_record(doc, p);
  std::vector<std::string> out;
  for (const auto& mode : requested) {
    bool recorded =
        rec && rec->contains("results") && (*rec)["results"].is_object() && (*rec)["results"].contains(mode);
    if (!recorded || (retry == RetryFailed::kYes && !ok_result(*rec, mode))) out.push_back(mode);
  }
  return out;
}

void record_baseline(json& doc, const SuiteProblem& p, const std::vector<std::string>& modes,
                     const eval::BaselineReply& reply, const BaselineRecordInfo& info) {
  if (!doc.contains("problems") || !doc["problems"].is_object()) doc["problems"] = json::object();
  json& rec = doc["problems"][level_key(p.level)][p.name];
  if (!rec.is_object()) rec = json::object();
  rec["level"] = p.level;
  rec["problem_id"] = p.problem_id;
  rec["path"] = p.path.string();
  rec["date"] = info.date;
  rec["wall_s"] = info.wall_s;
  rec["warmup"] = info.warmup;
  rec["trials"] = info.trials;
  for (const auto& [key, value] : {std::pair<const char*, const std::string&>{"hardware", reply.hardware},
                                   {"device", reply.device},
                                   {"torch_version", reply.torch_version}}) {
    if (value.empty()) continue;
    rec[key] = value;
    doc[key] = value;
  }
  if (!rec.contains("results") || !rec["results"].is_object()) rec["results"] = json::object();
  for (const auto& mode : modes) {
    auto it = reply.results.find(mode);
    eval::BaselineModeResult m;
    if (it != reply.results.end())
      m = it->second;
    else
      m.error = fmt::format("no result for mode {}", mode);
    json j = eval::to_json(m);
    j["date"] = info.date;
    rec["results"][mode] = j;
  }
  doc["updated"] = info.date;
}

json kernelbench_timing_json(const json& doc, std::string_view mode) {
  json out = json::object();
  if (!doc.contains("problems") || !doc["problems"].is_object()) return out;
  for (const auto& [level, problems] : doc["problems"].items()) {
    if (!problems.is_object()) continue;
    for (const auto& [name, rec] : problems.items()) {
      const json* m = ok_result(rec, mode);
      if (!m) continue;
      auto num = [&](const char* key) { return round_significant(m->value(key, 0.0), 3); };
      out[level][name] = {{"mean", num("mean_ms")},
                          {"std", num("std_ms")},
                          {"min", num("min_ms")},
                          {"max", num("max_ms")},
                          {"num_trials", m->value("num_trials", 0)},
                          {"hardware", rec.value("hardware", doc.value("hardware", std::string()))},
                          {"device", rec.value("device", doc.value("device", std::string()))}};
    }
  }
  return out;
}

Status write_baseline_files(const fs::path& out_dir, const json& doc) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return make_error(ErrorCode::kIo, fmt::format("cannot create {}: {}", out_dir.string(), ec.message()));
  KP_TRY_STATUS(write_file_atomic((out_dir / kBaselineFile).string(), doc.dump(2) + "\n"));
  KP_TRY_STATUS(write_file_atomic((out_dir / kEagerTimingFile).string(), kernelbench_timing_json(doc, "eager").dump(2) + "\n"));
  KP_TRY_STATUS(write_file_atomic((out_dir / kCompileTimingFile).string(), kernelbench_timing_json(doc, "compile").dump(2) + "\n"));
  return ok_status();
}

std::vector<LevelSummary> summarize_baselines(const json& doc) {
  std::vector<LevelSummary> out;
  if (!doc.contains("problems") || !doc["problems"].is_object()) return out;
  for (const auto& [key, problems] : doc["problems"].items()) {
    if (!problems.is_object() || !starts_with(key, "level")) continue;
    LevelSummary s;
    s.level = std::atoi(key.c_str() + 5);
    double log_sum = 0;
    for (const auto& [name, rec] : problems.items()) {
      if (!rec.contains("results") || !rec["results"].is_object() || rec["results"].empty()) continue;
      ++s.recorded;
      bool any_failed = false;
      for (const auto& [mode, m] : rec["results"].items()) any_failed = any_failed || !m.value("ok", false);
      ++(any_failed ? s.failed : s.measured);
      const json* eager = ok_result(rec, "eager");
      const json* compile = ok_result(rec, "compile");
      if (!eager || !compile) continue;
      double e = (*eager)["mean_ms"].get<double>(), c = (*compile)["mean_ms"].get<double>();
      if (!(e > 0) || !(c > 0)) continue;
      ++s.both;
      if (c < e) ++s.compile_faster;
      if (e / c > 1.05) ++s.compile_faster_5pct;
      log_sum += std::log(e / c);
    }
    if (s.both > 0) s.geomean_eager_over_compile = std::exp(log_sum / s.both);
    out.push_back(s);
  }
  std::sort(out.begin(), out.end(), [](const LevelSummary& a, const LevelSummary& b) { return a.level < b.level; });
  return out;
}

std::string format_level_summary(const LevelSummary& s) {
  std::string o = fmt::format("{}: {} measured, {} failed", level_key(s.level), s.measured, s.failed);
  if (s.both > 0)
    o += fmt::format("; torch.compile beats eager on {} of {} ({} by >5%); geomean eager/compile {:.3f}x",
                     s.compile_faster, s.both, s.compile_faster_5pct, s.geomean_eager_over_compile);
  else
    o += "; no problem with both eager and compile measured";
  return o;
}

namespace {

using Progress = std::function<void(const std::string&)>;

// A problem still to measure, and the modes it needs.
struct Todo {
  const SuiteProblem* problem;
  std::vector<std::string> modes;
};

// The output folder: BaselineOptions::out_dir, else one named for the worker's GPU; absolute.
Result<fs::path> resolve_out_dir(const BaselineOptions& o, eval::WorkerClient& worker) {
  fs::path out_dir = o.out_dir;
  if (out_dir.empty()) {
    KP_TRY(eval::DeviceInfo dev, worker.device());
    out_dir = o.default_out_root / gpu_slug(dev.name);
  }
  return fs::absolute(out_dir).lexically_normal();
}

// The problems of `listing` with modes left to measure according to `doc`; the others count in
// run.already_recorded. Says how many there are of each.
std::vector<Todo> select_todo(const SuiteListing& listing, const json& doc, const fs::path& doc_path,
                              const BaselineOptions& o, BaselineRun& run, const Progress& progress) {
  std::vector<Todo> todo;
  int failed_recorded = 0;
  for (const auto& p : listing.problems) {
    auto modes = modes_to_run(doc, p, o.modes, o.retry_failed);
    if (!modes.empty()) {
      todo.push_back({&p, std::move(modes)});
    } else {
      ++run.already_recorded;
      for (const auto& m : o.modes)
        if (!ok_result(*find_record(doc, p), m)) {
          ++failed_recorded;
          break;
        }
    }
  }
  progress(fmt::format("{} problem(s) selected; {} already recorded in {}{}; {} to measure", run.listed,
                       run.already_recorded, doc_path.string(),
                       failed_recorded > 0 && o.retry_failed == RetryFailed::kNo
                           ? fmt::format(" ({} of them failed: --retry-failed measures those again)", failed_recorded)
                           : std::string(),
                       todo.size()));
  return todo;
}

// With BaselineOptions::prewarm_jobs, the problems of `todo` that need torch.compile compiled
// by that many extra workers in parallel, until half the time budget since `t0` is spent.
void prewarm(const std::vector<Todo>& todo, const BaselineOptions& o, Clock::time_point t0, BaselineRun& run,
             const Progress& progress) {
  if (o.prewarm_jobs <= 0) return;
  std::vector<const SuiteProblem*> warm;
  for (const auto& t : todo)
    if (std::find(t.modes.begin(), t.modes.end(), "compile") != t.modes.end()) warm.push_back(t.problem);
  if (warm.empty()) return;
  auto tw = Clock::now();
  double stop_after = o.time_budget_s ? *o.time_budget_s / 2 : 1e300;
  std::atomic<size_t> next{0};
  std::atomic<int> ok{0}, failed{0};
  std::vector<std::thread> pool;
  int jobs = std::min<int>(o.prewarm_jobs, static_cast<int>(warm.size()));
  for (int j = 0; j < jobs; ++j) {
    pool.emplace_back([&, j] {
      eval::WorkerOptions wo = o.worker;
      wo.scratch_dir = o.worker.scratch_dir / fmt::format("prewarm-{}", j);
      eval::WorkerClient client(wo);
      for (size_t k = next++; k < warm.size() && since(t0) < stop_after; k = next++) {
        auto r = client.prewarm(warm[k]->path, o.timeout_s);
        if (!r.ok()) break;  // no worker can run: the timing pass will say why
        (r->ok ? ok : failed)++;
      }
      client.stop();
    });
  }
  for (auto& t : pool) t.join();
  run.prewarmed = ok;
  run.prewarm_failed = failed;
  run.prewarm_s = since(tw);
  progress(fmt::format("prewarmed torch.compile for {} of {} problem(s) with {} worker(s) in {}{}", run.prewarmed,
                       warm.size(), jobs, format_seconds(run.prewarm_s),
                       run.prewarm_failed ? fmt::format(" ({} failed; they are measured anyway)", run.prewarm_failed)
                                          : std::string()));
}

// The results of `modes` for a progress line ("eager 1.2 ms  compile FAILED (why)"), and
// whether one failed.
struct ModesText {
  std::string text;
  bool failed = false;
};
ModesText modes_text(const std::vector<std::string>& modes, const eval::BaselineReply& reply) {
  std::vector<std::string> parts;
  bool failed = false;
  for (const auto& mode : modes) {
    const auto& m = reply.results.at(mode);
    if (m.ok) {
      parts.push_back(fmt::format("{} {}", mode, format_ms(m.mean_ms)));
    } else {
      failed = true;
      parts.push_back(fmt::format("{} FAILED ({})", mode, first_line(m.error, 120)));
    }
  }
  return {join(parts, "  "), failed};
}

// "  eager/compile 1.07x" when doc holds both measured for p, else empty.
std::string eager_compile_ratio(const json& doc, const SuiteProblem& p) {
  const json* rec = find_record(doc, p);
  const json* e = rec ? ok_result(*rec, "eager") : nullptr;
  const json* c = rec ? ok_result(*rec, "compile") : nullptr;
  std::string ratio;
  if (e && c && (*c)["mean_ms"].get<double>() > 0)
    ratio = fmt::format("  eager/compile {:.2f}x", (*e)["mean_ms"].get<double>() / (*c)["mean_ms"].get<double>());
  return ratio;
}

// Problem `i` of `todo` measured on the worker, recorded in `doc`, the files written, and its
// progress line.
Status measure_problem(const std::vector<Todo>& todo, size_t i, const BaselineOptions& o, eval::WorkerClient& worker,
                       json& doc, const fs::path& doc_path, BaselineRun& run, const Progress& progress) {
  const SuiteProblem& p = *todo[i].problem;
  auto tp = Clock::now();
  KP_TRY(eval::WorkerBaseline b, worker.baseline(p.path, todo[i].modes, o.warmup, o.trials, o.timeout_s));
  double wall = since(tp);
  std::string recorded_hw = doc.value("hardware", std::string());
  if (!recorded_hw.empty() && !b.reply.hardware.empty() && b.reply.hardware != recorded_hw)
    return make_error(
        ErrorCode::kInvalidInput,
        fmt::format("{} holds baselines measured on {}, but this worker's GPU is {}; times from two GPUs "
                    "must not mix: pass another --out",
                    doc_path.string(), recorded_hw, b.reply.hardware));
  record_baseline(doc, p, todo[i].modes, b.reply, BaselineRecordInfo{o.warmup, o.trials, utc_now_iso8601(), wall});
  KP_TRY_STATUS(write_baseline_files(run.out_dir, doc));
  ++run.attempted;

  const ModesText results = modes_text(todo[i].modes, b.reply);
  if (results.failed) ++run.failed;
  progress(fmt::format("[{}/{}] {}/{}  {}{}  ({}{})", i + 1, todo.size(), level_key(p.level), p.name, results.text,
                       eager_compile_ratio(doc, p), format_seconds(wall),
                       b.worker_restarted ? ", worker restarted" : ""));
  return ok_status();
}

}  // namespace

Result<BaselineRun> run_baseline(const BaselineOptions& o, const std::function<void(const std::string&)>& progress) {
  auto t0 = Clock::now();
  KP_TRY(SuiteListing listing, list_suite(o.suite_dir, o.levels, o.only));
  for (const auto& s : listing.skipped) progress(fmt::format("skipped (not a problem): {}", s));
  eval::WorkerClient worker(o.worker);
  BaselineRun run;
  run.listed = static_cast<int>(listing.problems.size());
  KP_TRY(run.out_dir, resolve_out_dir(o, worker));
  fs::path doc_path = run.out_dir / kBaselineFile;
  KP_TRY(json doc, load_baseline_doc(doc_path));

  const std::vector<Todo> todo = select_todo(listing, doc, doc_path, o, run, progress);
  prewarm(todo, o, t0, run, progress);
  for (size_t i = 0; i < todo.size(); ++i) {
    if (o.time_budget_s && since(t0) >= *o.time_budget_s) {
      run.budget_spent = true;
      run.remaining = static_cast<int>(todo.size() - i);
      break;
    }
    KP_TRY_STATUS(measure_problem(todo, i, o, worker, doc, doc_path, run, progress));
  }
  run.summary = summarize_baselines(doc);
  return run;
}

}  // namespace kp::campaign
