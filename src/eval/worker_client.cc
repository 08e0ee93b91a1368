#include "eval/worker_client.h"

#include <signal.h>

#include <fstream>

#include <fmt/format.h>

#include "util/strings.h"

namespace kp::eval {

namespace fs = std::filesystem;
using nlohmann::json;
using std::chrono::milliseconds;

namespace {
milliseconds ms(double seconds) { return milliseconds(static_cast<int64_t>(seconds * 1000)); }
uint64_t file_size_or_zero(const fs::path& p) {
  std::error_code ec;
  auto n = fs::file_size(p, ec);
  return ec ? 0 : n;
}
}  // namespace

WorkerClient::WorkerClient(WorkerOptions options) : options_(std::move(options)) {}
WorkerClient::~WorkerClient() { stop(); }

Status WorkerClient::start() {
  if (process_ && process_->running() && !hello_pending_) return ok_status();
  if (!hello_pending_) KP_TRY_STATUS(spawn());
  return await_hello();
}

void WorkerClient::launch() {
  if (unavailable_ || (process_ && process_->running())) return;
  if (!spawn().ok()) drop_process();  // device() spawns again and reports the error
}

Status WorkerClient::spawn() {
  drop_process();
  hello_pending_ = false;
  candidate_loaded_ = false;
  token_ = sys::random_token();
  sys::Command c;
  if (!options_.argv.empty()) {
    c.argv = options_.argv;
  } else {
    if (!fs::exists(options_.worker_path))
      return make_error(ErrorCode::kNotFound, fmt::format("worker binary {} not found; build it (cmake --build build) or pass --worker",
                                                          options_.worker_path.string()));
    c.argv = {options_.worker_path.string()};
  }
  fs::create_directories(options_.scratch_dir);
  c.cwd = options_.scratch_dir.string();
  c.stdout_path = (options_.scratch_dir / "worker.stdout.log").string();
  c.stderr_path = (options_.scratch_dir / "worker.stderr.log").string();
  c.limits.file_size_bytes = options_.max_file_bytes;
  c.limits.core_bytes = 0;
  // Candidate code runs here: keep API keys and the like out of its environment.
  c.env_unset = {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "KERNELPRO_API_KEY"};
  c.env_set = options_.env;
  c.env_set.emplace_back(kPhaseFileEnv, phase_file().string());
  c.env_set.emplace_back(kWorkerTokenEnv, token_);
  std::error_code ignored;
  fs::remove(phase_file(), ignored);
  auto spawned = sys::Process::spawn(c);
  if (!spawned.ok()) return std::move(spawned).error().wrap(fmt::format("starting the worker `{}`", join(c.argv, " ")));
  process_ = std::move(*spawned);
  json hello = {{"op", "hello"}};
  if (!options_.prewarm_metrics.empty() && !options_.rangeprof_library.empty())
    hello["prewarm_profiler"] = {{"metrics", options_.prewarm_metrics},
                                 {"rangeprof_library", fs::absolute(options_.rangeprof_library).string()}};
  if (auto sent = process_->send_line(hello.dump()); !sent.ok()) {
    // It exited before reading its hello (a bad build, a missing library): as broken as one
    // that dies after reading it, whichever came first.
    auto how = process_->kill();
    std::string err = read_log_since(options_.scratch_dir / "worker.stderr.log", 0);
    drop_process();
    return make_error(ErrorCode::kTool, fmt::format("the worker did not start ({}): {}{}", how.describe(),
                                                    sent.error().message, err.empty() ? "" : "\n" + err));
  }
  hello_pending_ = true;
  return ok_status();
}

Status WorkerClient::await_hello() {
  hello_pending_ = false;
  if (!process_) return make_error(ErrorCode::kUnavailable, "the worker is not running");
  auto line = process_->read_line(ms(options_.start_timeout_s));
  if (!line.ok()) {
    auto how = process_->kill();
    std::string err = read_log_since(options_.scratch_dir / "worker.stderr.log", 0);
    drop_process();
    // A worker that dies or hangs before its hello is broken, not a machine without a GPU (that
    // worker starts and says so): a tool failure, never a quiet "not run".
    return make_error(ErrorCode::kTool, fmt::format("the worker did not start ({}): {}{}", how.describe(),
                                                           line.error().message, err.empty() ? "" : "\n" + err));
  }
  json hello = json::parse(*line, nullptr, false);
  if (hello.is_discarded() || !hello.is_object())
    return make_error(ErrorCode::kProtocol, "the worker's hello is not JSON: " + *line);
  start_busy_ = false;
  if (!hello.value("ok", false)) {
    Error e = make_error(ErrorCode::kUnavailable, hello.value("error", std::string("the worker found no GPU")));
    // A busy GPU may be free at the next try: only a missing one is remembered.
    start_busy_ = hello.value("busy", false);
    if (!start_busy_) unavailable_ = e;
    process_->kill();
    drop_process();
    return e;
  }
  device_ = device_info_from_json(hello.value("device", json::object()));
  return ok_status();
}

Result<DeviceInfo> WorkerClient::device() {
  if (unavailable_) return *unavailable_;
  if (!device_ || !process_ || !process_->running() || hello_pending_) KP_TRY_STATUS(start());
  return *device_;
}

std::string WorkerClient::read_log_since(const fs::path& path, uint64_t offset) const {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(static_cast<std::streamoff>(offset));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return tail_lines(text, 200);
}

fs::path WorkerClient::phase_file() const { return options_.scratch_dir / "worker.phase"; }

std::string WorkerClient::phase_note() const {
  std::ifstream in(phase_file());
  std::string phase;
  if (!in || !std::getline(in, phase) || phase.empty()) return "";
  return fmt::format(" (it was in its {} phase)", phase.substr(0, 64));
}

WorkerClient::Exchange WorkerClient::exchange(const json& request, double timeout_s) {
  Exchange x;
  if (auto sent = process_->send_line(request.dump()); !sent.ok()) {
    x.failure = Exchange::Failure::kGone;
    x.detail = process_->kill().describe();
  } else if (auto line = process_->read_line(ms(timeout_s)); !line.ok()) {
    if (line.error().code == ErrorCode::kTimeout) {
      process_->kill();
      x.failure = Exchange::Failure::kTimedOut;
    } else {
      x.failure = Exchange::Failure::kDied;
      x.detail = process_->wait(milliseconds(2000)).describe();
    }
  } else {
    x.reply = json::parse(*line, nullptr, false);
    if (x.reply.is_discarded() || !x.reply.is_object()) {
      process_->kill();
      x.failure = Exchange::Failure::kNotJson;
      x.detail = *line;
    }
  }
  if (x.failure != Exchange::Failure::kNone) drop_process();
  return x;
}

bool WorkerClient::drop_if_exiting(const json& reply) {
  // A worker whose CUDA context is lost says so and exits after replying; wait for it, so the
  // next request cannot be sent to a dying process and blamed for its death.
  if (!reply.value("exiting", false) && process_->running()) return false;
  process_->wait(milliseconds(5000));
  drop_process();
  return true;
}

json candidate_request(const std::string& op, const task::Task& task, const fs::path& reference, const fs::path& candidate,
                       const EvalOptions& options, const KernelBenchFiles* files) {
  json req = {{"op", op},
              {"task", to_json(task)},
              {"reference", fs::absolute(reference).string()},
              {"candidate", candidate.empty() ? std::string() : fs::absolute(candidate).string()},
              {"options", to_json(options)}};
  if (files) {
    if (!files->library.empty()) req["library"] = fs::absolute(files->library).string();
    if (!files->library_source.empty()) req["library_source"] = fs::absolute(files->library_source).string();
    if (!files->build_dir.empty()) req["build_dir"] = fs::absolute(files->build_dir).string();
  }
  return req;
}

Result<WorkerEvaluation> WorkerClient::evaluate(const task::Task& task, const fs::path& reference_so,
                                                const fs::path& candidate_so, const EvalOptions& options) {
  return run_evaluation(candidate_request("eval", task, reference_so, candidate_so, options), options);
}

Result<WorkerEvaluation> WorkerClient::evaluate(const task::Task& task, const fs::path& reference,
                                                const fs::path& candidate, const EvalOptions& options,
                                                const KernelBenchFiles& files) {
  return run_evaluation(candidate_request("eval", task, reference, candidate, options, &files), options);
}

Result<WorkerEvaluation> WorkerClient::run_evaluation(json req, const EvalOptions& options) {
  KP_TRY(DeviceInfo dev, device());
  (void)dev;
  fs::path out_log = options_.scratch_dir / "worker.stdout.log", err_log = options_.scratch_dir / "worker.stderr.log";
  uint64_t out_off = file_size_or_zero(out_log), err_off = file_size_or_zero(err_log);
  req["id"] = next_id_++;
  if (!options.reference_only) candidate_loaded_ = true;
  WorkerEvaluation ev;
  auto failed = [&](Outcome outcome, std::string reason) {
    ev.report.outcome = outcome;
    ev.report.reason = std::move(reason);
    ev.worker_restarted = true;
  };
  Exchange x = exchange(req, options.timeout_s);
  switch (x.failure) {
    case Exchange::Failure::kGone:
      failed(Outcome::kCrash, fmt::format("the worker was gone before the evaluation ({})", x.detail));
      break;
    case Exchange::Failure::kTimedOut:
      failed(Outcome::kTimeout, fmt::format("no verdict within {:.0f} s{}: the candidate hangs (an infinite loop or a "
                                            "deadlock?) or makes the harness slow; the worker was killed",
                                            options.timeout_s, phase_note()));
      break;
    case Exchange::Failure::kDied:
      failed(Outcome::kCrash, fmt::format("the worker died during the evaluation: {}", x.detail));
      break;
    case Exchange::Failure::kNotJson:
      failed(Outcome::kCrash, fmt::format("the worker broke the protocol: {}", x.detail));
      break;
    case Exchange::Failure::kNone:
      if (!x.reply.value("ok", false) || !x.reply.contains("report")) {
        process_->kill();
        drop_process();
        failed(Outcome::kCrash, fmt::format("the worker broke the protocol: {}", x.reply.value("error", x.reply.dump())));
      } else {
        KP_TRY(ev.report, worker_report_from_json(x.reply["report"]));
        ev.worker_restarted = drop_if_exiting(x.reply);
      }
      break;
  }
  ev.candidate_stdout = read_log_since(out_log, out_off);
  ev.candidate_stderr = read_log_since(err_log, err_off);
  if (ev.report.outcome == Outcome::kCrash && !ev.candidate_stderr.empty() && ev.report.reason.find('\n') == std::string::npos) {
    auto lines = split_lines(ev.candidate_stderr);
    if (!lines.empty()) ev.report.reason += fmt::format(" (last stderr line: {})", lines.back());
  }
  return ev;
}

Result<WorkerBaseline> WorkerClient::baseline(const fs::path& problem, const std::vector<std::string>& modes,
                                              int warmup, int trials, double timeout_s) {
  KP_TRY(DeviceInfo dev, device());
  (void)dev;
  fs::path err_log = options_.scratch_dir / "worker.stderr.log";
  uint64_t err_off = file_size_or_zero(err_log);
  json req = {{"op", "baseline"},  {"id", next_id_++},   {"problem", fs::absolute(problem).string()},
              {"modes", modes},    {"warmup", warmup},   {"trials", trials}};
  WorkerBaseline b;
  std::string failure;  // set when every mode fails for the same reason
  Exchange x = exchange(req, timeout_s);
  switch (x.failure) {
    case Exchange::Failure::kGone: failure = fmt::format("the worker was gone before the baseline ({})", x.detail); break;
    case Exchange::Failure::kTimedOut:
      failure = fmt::format("no result within {:.0f} s (a hang, or a compile slower than --timeout); the worker was killed",
                            timeout_s);
      break;
    case Exchange::Failure::kDied: failure = fmt::format("the worker died during the baseline: {}", x.detail); break;
    case Exchange::Failure::kNotJson: failure = fmt::format("the worker broke the protocol: {}", x.detail); break;
    case Exchange::Failure::kNone:
      if (!x.reply.value("ok", false)) {
        failure = x.reply.value("error", std::string("the worker answered ok:false without a reason"));
        b.worker_restarted = drop_if_exiting(x.reply);
      } else if (auto r = baseline_reply_from_json(x.reply); !r.ok()) {
        process_->kill();
        drop_process();
        failure = fmt::format("the worker broke the protocol: {}", r.error().message);
      } else {
        b.reply = std::move(*r);
        b.worker_restarted = drop_if_exiting(x.reply);
      }
      break;
  }
  if (!process_) b.worker_restarted = true;
  b.worker_stderr = read_log_since(err_log, err_off);
  if (!failure.empty() && x.failure != Exchange::Failure::kNone && !b.worker_stderr.empty()) {
    auto lines = split_lines(b.worker_stderr);
    if (!lines.empty()) failure += fmt::format(" (last stderr line: {})", lines.back());
  }
  for (const auto& mode : modes) {
    auto it = b.reply.results.find(mode);
    if (!failure.empty() || it == b.reply.results.end()) {
      BaselineModeResult m;
      m.error = failure.empty() ? fmt::format("the worker returned no result for mode {}", mode) : failure;
      b.reply.results[mode] = m;
    }
  }
  return b;
}

Result<WorkerPrewarm> WorkerClient::prewarm(const fs::path& problem, double timeout_s) {
  KP_TRY(DeviceInfo dev, device());
  (void)dev;
  json req = {{"op", "prewarm"}, {"id", next_id_++}, {"problem", fs::absolute(problem).string()}};
  WorkerPrewarm w;
  Exchange x = exchange(req, timeout_s);
  switch (x.failure) {
    case Exchange::Failure::kGone: w.error = fmt::format("the worker was gone ({})", x.detail); break;
    case Exchange::Failure::kTimedOut: w.error = fmt::format("no reply within {:.0f} s; the worker was killed", timeout_s); break;
    case Exchange::Failure::kDied: w.error = fmt::format("the worker died: {}", x.detail); break;
    case Exchange::Failure::kNotJson: w.error = fmt::format("the worker broke the protocol: {}", x.detail); break;
    case Exchange::Failure::kNone:
      w.ok = x.reply.value("ok", false);
      w.seconds = x.reply.value("seconds", 0.0);
      w.error = x.reply.value("error", std::string());
      if (!w.ok && w.error.empty()) w.error = "the worker answered ok:false without a reason";
      drop_if_exiting(x.reply);
      break;
  }
  return w;
}

Result<WorkerClient::CallReply> WorkerClient::call(json request, double timeout_s) {
  KP_TRY(DeviceInfo dev, device());
  (void)dev;
  fs::path out_log = options_.scratch_dir / "worker.stdout.log", err_log = options_.scratch_dir / "worker.stderr.log";
  uint64_t out_off = file_size_or_zero(out_log), err_off = file_size_or_zero(err_log);
  std::string op = request.value("op", std::string("?"));
  request["id"] = next_id_++;
  if (op == "profile" || op == "eval") candidate_loaded_ = true;
  Exchange x = exchange(request, timeout_s);
  CallReply r;
  r.worker_stdout = read_log_since(out_log, out_off);
  r.worker_stderr = read_log_since(err_log, err_off);
  std::string last_line;
  if (auto lines = split_lines(r.worker_stderr); !lines.empty()) last_line = fmt::format(" (last stderr line: {})", lines.back());
  switch (x.failure) {
    case Exchange::Failure::kGone:
      return make_error(ErrorCode::kTool, fmt::format("the worker was gone before the {} request ({})", op, x.detail));
    case Exchange::Failure::kTimedOut:
      return make_error(ErrorCode::kTool,
                        fmt::format("the worker gave no {} reply within {:.0f} s and was killed{}", op, timeout_s, last_line));
    case Exchange::Failure::kDied:
      return make_error(ErrorCode::kTool, fmt::format("the worker died during the {} request: {}{}", op, x.detail, last_line));
    case Exchange::Failure::kNotJson:
      return make_error(ErrorCode::kTool, fmt::format("the worker broke the protocol: {}", x.detail));
    case Exchange::Failure::kNone: break;
  }
  r.worker_restarted = drop_if_exiting(x.reply);
  if (!x.reply.value("ok", false))
    return make_error(ErrorCode::kTool,
                      x.reply.value("error", fmt::format("the worker answered the {} request with ok:false and no reason", op)));
  r.reply = std::move(x.reply);
  return r;
}

void WorkerClient::drop_process() {
  process_.reset();
  // What escaped the worker's group (setsid, a double fork) still carries its token.
  if (!token_.empty()) sys::kill_tagged(kWorkerTokenEnv, token_);
}

void WorkerClient::stop() {
  if (!process_) return;
  const int group = process_->pid();  // the worker leads a process group of its own
  if (process_->running()) {
    (void)process_->send_line(R"({"op":"shutdown"})");
    process_->wait(milliseconds(3000));
  }
  // What a candidate started in the worker's group (a child process still launching GPU work)
  // ends with it, even when the worker itself exited cleanly; what left the group, by its token.
  if (group > 1) ::kill(-group, SIGKILL);
  drop_process();
}

}  // namespace kp::eval
