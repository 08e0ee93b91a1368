#include "profile/ncu/ncu_runner.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "profile/ncu/ncu_csv.h"
#include "util/strings.h"

namespace kp::profile {

namespace fs = std::filesystem;

namespace {

// "2025.3.1" > "2023.1.0": compares dot-separated numbers.
bool newer_version_dir(const fs::path& a, const fs::path& b) {
  auto pa = split(a.filename().string(), '.'), pb = split(b.filename().string(), '.');
  for (size_t i = 0; i < std::max(pa.size(), pb.size()); ++i) {
    long x = i < pa.size() ? std::atol(pa[i].c_str()) : 0, y = i < pb.size() ? std::atol(pb[i].c_str()) : 0;
    if (x != y) return x > y;
  }
  return a > b;
}

bool is_metric_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

// Whether `line` names `metric` as a whole token.
bool names_metric(std::string_view line, std::string_view metric) {
  for (size_t at = line.find(metric); at != std::string_view::npos; at = line.find(metric, at + 1)) {
    bool left = at == 0 || !is_metric_char(line[at - 1]);
    size_t end = at + metric.size();
    bool right = end == line.size() || !is_metric_char(line[end]) || (line[end] == '.' && end + 1 == line.size());
    if (left && right) return true;
  }
  return false;
}

bool mentions_unknown_metric(std::string_view line) {
  for (std::string_view sig : {"Failed to find metric", "failed to find metric", "Unknown metric", "unknown metric",
                               "Invalid metric", "invalid metric", "not a valid metric"})
    if (line.find(sig) != std::string_view::npos) return true;
  return false;
}

bool is_application_failure(std::string_view line) { return line.find("The application") != std::string_view::npos; }

}  // namespace

Result<fs::path> find_ncu(const NcuOptions& options) {
  if (!options.ncu.empty()) {
    if (is_executable_file(options.ncu)) return options.ncu;
    return make_error(ErrorCode::kNotFound,
                      fmt::format("ncu (Nsight Compute) not found at {}: no executable file there; "
                                  "pass the path of an installed ncu, or leave it empty to search",
                                  options.ncu.string()));
  }
  if (const char* path = std::getenv("PATH"); path && *path) {
    for (const auto& dir : split(path, ':'))
      if (!dir.empty() && is_executable_file(fs::path(dir) / "ncu")) return fs::path(dir) / "ncu";
  }
  if (is_executable_file("/usr/local/cuda/bin/ncu")) return fs::path("/usr/local/cuda/bin/ncu");
  std::vector<fs::path> installs;
  std::error_code ec;
  for (fs::directory_iterator it("/opt/nvidia/nsight-compute", ec), end; !ec && it != end; it.increment(ec))
    if (is_executable_file(it->path() / "ncu")) installs.push_back(it->path());
  if (!installs.empty()) {
    std::sort(installs.begin(), installs.end(), newer_version_dir);
    return installs.front() / "ncu";
  }
  return make_error(
      ErrorCode::kNotFound,
      "ncu (Nsight Compute) not found in PATH, /usr/local/cuda/bin or /opt/nvidia/nsight-compute; install "
      "Nsight Compute 2023.1 or newer or pass --ncu PATH");
}

std::vector<std::string> ncu_argv(const NcuOptions& options, const fs::path& ncu,
                                  const std::vector<std::string>& program_argv) {
  std::vector<std::string> argv = {ncu.string()};
  argv.insert(argv.end(), {"--clock-control", "none", "--cache-control",
                           options.cache_control == NcuOptions::CacheControl::kNone ? "none" : "all", "--replay-mode",
                           "kernel"});
  argv.insert(argv.end(), {"--target-processes", "all"});
  if (!options.nvtx_range.empty()) {
    argv.insert(argv.end(), {"--nvtx", "--nvtx-include", options.nvtx_range + "/"});
  }
  if (options.set_full) {
    argv.insert(argv.end(), {"--set", "full"});
  } else {
    argv.insert(argv.end(), {"--metrics", join(options.metrics, ",")});
  }
  argv.insert(argv.end(), {"--csv", "--page", "raw", "--print-units", "base", "--log-file", options.log_file.string()});
  argv.insert(argv.end(), program_argv.begin(), program_argv.end());
  return argv;
}

Result<KernelProfile> run_ncu(const NcuOptions& options, const sys::Command& program) {
  if (program.argv.empty())
    return make_error(ErrorCode::kInvalidInput, "run_ncu: the program to profile has an empty argv");
  if (options.metrics.empty() && !options.set_full)
    return make_error(ErrorCode::kInvalidInput, "run_ncu: no metrics to collect; pass a metric list (or set_full)");
  if (options.log_file.empty())
    return make_error(ErrorCode::kInvalidInput,
                      "run_ncu: NcuOptions::log_file is empty; name the file ncu should write");
  KP_TRY(fs::path ncu, find_ncu(options));

  std::error_code ec;
  fs::remove(options.log_file, ec);  // a stale log must not be read as this run's
  sys::Command cmd = program;
  cmd.argv = ncu_argv(options, ncu, program.argv);
  cmd.timeout.reset();
  if (options.timeout_s > 0)
    cmd.timeout = std::chrono::milliseconds(static_cast<int64_t>(options.timeout_s * 1000.0 + 0.5));
  cmd.stdout_path.clear();
  cmd.stderr_path.clear();
  const std::string& what = program.argv.front();
  auto ran = sys::run(cmd);
  if (!ran.ok()) return std::move(ran).error().wrap(fmt::format("running {} under ncu", what));
  const sys::Completed& done = *ran;
  if (done.timed_out)
    return make_error(ErrorCode::kTimeout,
                      fmt::format("ncu profiling {} ran past its limit of {:.1f} s and was killed; raise the timeout, "
                                  "profile fewer metrics (each adds replay passes), or check that the program ends",
                                  what, options.timeout_s));

  auto log_read = read_file(options.log_file.string());
  std::string log = log_read.ok() ? *log_read : std::string();
  std::string all = log + "\n" + done.stdout_text + "\n" + done.stderr_text;
  if (all.find("ERR_NVGPUCTRPERM") != std::string::npos)
    return make_error(ErrorCode::kUnavailable, counter_permission_message());

  std::vector<std::string> errors;  // ==ERROR== lines other than the program's own failure
  std::string app_failure;
  for (const auto& line : split_lines(all)) {
    bool error_line = starts_with(line, "==ERROR==");
    if (error_line || mentions_unknown_metric(line)) {
      for (const auto& m : options.metrics)
        if (names_metric(line, m))
          return make_error(ErrorCode::kInvalidInput,
                            fmt::format("ncu rejected the metric {} on this GPU (it said: \"{}\"); remove it from the "
                                        "list or check the name with `ncu --query-metrics`",
                                        m, trim(line)));
      if (mentions_unknown_metric(line))
        return make_error(
            ErrorCode::kInvalidInput,
            fmt::format("ncu rejected a metric name: \"{}\"; check the names with `ncu --query-metrics`", trim(line)));
    }
    if (!error_line) continue;
    if (is_application_failure(line)) {
      if (app_failure.empty()) app_failure = std::string(trim(line));
    } else if (std::find(errors.begin(), errors.end(), line) == errors.end()) {
      errors.push_back(line);
    }
  }
  if (!errors.empty()) {
    if (errors.size() > 5) errors.resize(5);
    return make_error(ErrorCode::kTool, fmt::format("ncu failed profiling {}:\n{}\n(full output in {})", what,
                                                    join(errors, "\n"), options.log_file.string()));
  }
  if (!app_failure.empty() || !done.success()) {
    std::string tail(trim(tail_lines(done.stderr_text, 20)));
    return make_error(
        ErrorCode::kTool,
        fmt::format("the program {} failed under ncu ({}){}; fix the program first (run it without ncu "
                    "to see it fail){}",
                    what, done.describe(), app_failure.empty() ? "" : ": " + app_failure,
                    tail.empty() ? std::string(", it printed nothing on stderr") : "; its stderr ends:\n" + tail));
  }
  if (!log_read.ok())
    return make_error(ErrorCode::kTool, fmt::format("ncu ran {} but wrote no log file {}: {}", what,
                                                    options.log_file.string(), log_read.error().message));

  auto parsed = parse_ncu_raw_csv(log);
  if (!parsed.ok())
    return std::move(parsed).error().wrap(fmt::format("reading ncu's log {}", options.log_file.string()));
  if (parsed->empty()) {
    std::string where = options.nvtx_range.empty()
                            ? std::string("the program launched no kernel")
                            : fmt::format(
                                  "no kernel ran inside the NVTX range \"{0}\" (launch the kernels between "
                                  "nvtxRangePushA(\"{0}\") and nvtxRangePop(), in the profiled process)",
                                  options.nvtx_range);
    return make_error(ErrorCode::kNotFound,
                      fmt::format("ncu profiled no kernel of {}: {}; log: {}", what, where, options.log_file.string()));
  }

  if (!options.set_full) {
    // ncu drops an unknown metric without a word: its column is simply missing from the header.
    std::string_view header = log;
    if (size_t at = header.find("\"ID\","); at != std::string_view::npos) header = header.substr(at);
    header = header.substr(0, header.find('\n'));
    std::vector<std::string> unknown;
    for (const auto& m : options.metrics)
      if (header.find("\"" + m + "\"") == std::string_view::npos) unknown.push_back(m);
    if (!unknown.empty())
      return make_error(ErrorCode::kInvalidInput,
                        fmt::format("ncu rejected the metric{} {} on this GPU (no such column in its table): check "
                                    "the names with `ncu --query-metrics`",
                                    unknown.size() > 1 ? "s" : "", join(unknown, ", ")));
  }
  KernelProfile profile;
  profile.collector = Collector::kNcu;
  profile.kernels = std::move(parsed).value();
  if (!options.set_full) profile.metrics = options.metrics;
  profile.wall_s = done.wall_seconds;
  for (const auto& k : profile.kernels)
    profile.passes = std::max(profile.passes, static_cast<int>(k.get_or("profiler__replayer_passes", 0)));
  profile.log_path = options.log_file.string();
  return profile;
}

Result<std::string> parse_ncu_version(std::string_view version_output) {
  for (const auto& line : split_lines(version_output)) {
    std::string_view l = trim(line);
    if (!starts_with(l, "Version ")) continue;
    std::string_view rest = trim(l.substr(8));
    std::string_view version = rest.substr(0, rest.find(' '));
    if (!version.empty() && version.front() >= '0' && version.front() <= '9') return std::string(version);
  }
  std::string quoted(trim(version_output));
  if (quoted.size() > 200) quoted = quoted.substr(0, 200) + "...";
  return make_error(
      ErrorCode::kTool,
      fmt::format("`ncu --version` printed no \"Version N\" line (it printed: \"{}\"); is this Nsight Compute?",
                  quoted));
}

Result<std::string> ncu_version(const fs::path& ncu) {
  sys::Command c;
  c.argv = {ncu.string(), "--version"};
  c.timeout = std::chrono::seconds(10);
  KP_TRY(sys::Completed done, sys::run(c));
  if (done.timed_out)
    return make_error(ErrorCode::kTimeout, fmt::format("`{} --version` did not answer within 10 s", ncu.string()));
  if (!done.success())
    return make_error(ErrorCode::kTool, fmt::format("`{} --version` {}: {}", ncu.string(), done.describe(),
                                                    trim(tail_lines(done.stderr_text + done.stdout_text, 5))));
  return parse_ncu_version(done.stdout_text);
}

}  // namespace kp::profile
