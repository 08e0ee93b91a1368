#include "eval/worker_client.h"

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
  if (process_ && process_->running()) return ok_status();
  process_.reset();
  if (!fs::exists(options_.worker_path))
    return make_error(ErrorCode::kNotFound, fmt::format("worker binary {} not found; build it (cmake --build build) or pass --worker",
                                                        options_.worker_path.string()));
  fs::create_directories(options_.scratch_dir);
  sys::Command c;
  c.argv = {options_.worker_path.string()};
  c.cwd = options_.scratch_dir.string();
  c.stdout_path = (options_.scratch_dir / "worker.stdout.log").string();
  c.stderr_path = (options_.scratch_dir / "worker.stderr.log").string();
  c.limits.file_size_bytes = options_.max_file_bytes;
  c.limits.core_bytes = 0;
  // Candidate code runs here: keep API keys and the like out of its environment.
  c.env_unset = {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "KERNELPRO_API_KEY"};
  KP_TRY(process_, sys::Process::spawn(c));
  KP_TRY_STATUS(process_->send_line(R"({"op":"hello"})"));
  auto line = process_->read_line(ms(options_.start_timeout_s));
  if (!line.ok()) {
    auto how = process_->kill();
    std::string err = read_log_since(c.stderr_path, 0);
    return make_error(ErrorCode::kUnavailable, fmt::format("the worker did not start ({}): {}{}", how.describe(),
                                                           line.error().message, err.empty() ? "" : "\n" + err));
  }
  json hello = json::parse(*line, nullptr, false);
  if (hello.is_discarded() || !hello.is_object())
    return make_error(ErrorCode::kProtocol, "the worker's hello is not JSON: " + *line);
  if (!hello.value("ok", false)) {
    Error e = make_error(ErrorCode::kUnavailable, hello.value("error", std::string("the worker found no GPU")));
    unavailable_ = e;
    process_->kill();
    process_.reset();
    return e;
  }
  device_ = device_info_from_json(hello.value("device", json::object()));
  return ok_status();
}

Result<DeviceInfo> WorkerClient::device() {
  if (unavailable_) return *unavailable_;
  if (!device_ || !process_ || !process_->running()) KP_TRY_STATUS(start());
  return *device_;
}

std::string WorkerClient::read_log_since(const fs::path& path, uint64_t offset) const {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(static_cast<std::streamoff>(offset));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return tail_lines(text, 200);
}

Result<WorkerEvaluation> WorkerClient::evaluate(const task::Task& task, const fs::path& reference_so,
                                                const fs::path& candidate_so, const EvalOptions& options) {
  KP_TRY(DeviceInfo dev, device());
  (void)dev;
  fs::path out_log = options_.scratch_dir / "worker.stdout.log", err_log = options_.scratch_dir / "worker.stderr.log";
  uint64_t out_off = file_size_or_zero(out_log), err_off = file_size_or_zero(err_log);
  int id = next_id_++;
  json req = {{"op", "eval"},
              {"id", id},
              {"task", to_json(task)},
              {"reference", fs::absolute(reference_so).string()},
              {"candidate", fs::absolute(candidate_so).string()},
              {"options", to_json(options)}};
  WorkerEvaluation ev;
  auto died = [&](Outcome outcome, std::string reason) {
    ev.report.outcome = outcome;
    ev.report.reason = std::move(reason);
    ev.worker_restarted = true;
    process_.reset();
  };
  if (auto s = process_->send_line(req.dump()); !s.ok()) {
    auto how = process_->kill();
    died(Outcome::kCrash, fmt::format("the worker was gone before the evaluation ({})", how.describe()));
  } else {
    auto line = process_->read_line(ms(options.timeout_s));
    if (!line.ok() && line.error().code == ErrorCode::kTimeout) {
      process_->kill();
      died(Outcome::kTimeout, fmt::format("no verdict within {:.0f} s: the candidate hangs (an infinite loop or a "
                                          "deadlock?); the worker was killed",
                                          options.timeout_s));
    } else if (!line.ok()) {
      auto how = process_->wait(milliseconds(2000));
      died(Outcome::kCrash, fmt::format("the worker died during the evaluation: {}", how.describe()));
    } else {
      json reply = json::parse(*line, nullptr, false);
      if (reply.is_discarded() || !reply.value("ok", false) || !reply.contains("report")) {
        process_->kill();
        died(Outcome::kCrash, fmt::format("the worker broke the protocol: {}",
                                          reply.is_discarded() ? *line : reply.value("error", *line)));
      } else {
        KP_TRY(ev.report, worker_report_from_json(reply["report"]));
        // A worker whose CUDA context is lost says so and exits after replying; wait for it,
        // so the next evaluation cannot be sent to a dying process and blamed for its death.
        if (reply.value("exiting", false) || !process_->running()) {
          process_->wait(milliseconds(5000));
          process_.reset();
          ev.worker_restarted = true;
        }
      }
    }
  }
  ev.candidate_stdout = read_log_since(out_log, out_off);
  ev.candidate_stderr = read_log_since(err_log, err_off);
  if (ev.report.outcome == Outcome::kCrash && !ev.candidate_stderr.empty() && ev.report.reason.find('\n') == std::string::npos) {
    auto lines = split_lines(ev.candidate_stderr);
    if (!lines.empty()) ev.report.reason += fmt::format(" (last stderr line: {})", lines.back());
  }
  return ev;
}

void WorkerClient::stop() {
  if (!process_) return;
  if (process_->running()) {
    (void)process_->send_line(R"({"op":"shutdown"})");
    process_->wait(milliseconds(3000));
  }
  process_.reset();
}

}  // namespace kp::eval
