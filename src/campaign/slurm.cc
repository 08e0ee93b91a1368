#include "campaign/slurm.h"

#include <chrono>
#include <map>

#include <fmt/format.h>

#include "campaign/ledger.h"
#include "sys/subprocess.h"
#include "util/strings.h"

namespace kp::campaign {

namespace fs = std::filesystem;

std::vector<std::pair<std::string, std::string>> submitted_jobs(const fs::path& dir) {
  std::vector<std::pair<std::string, std::string>> out;
  auto jobs = read_file((dir / "slurm" / "jobs.txt").string());
  if (!jobs.ok()) return out;
  for (const auto& l : split_lines(*jobs)) {
    auto parts = split(std::string(trim(l)), ' ');
    if (parts.size() >= 2 && !parts[0].empty()) out.push_back({parts[0], parts[1]});
  }
  return out;
}

std::set<std::string> queued_problems(const fs::path& dir, const std::string& squeue) {
  std::set<std::string> out;
  const auto jobs = submitted_jobs(dir);
  if (jobs.empty()) return out;
  std::vector<std::string> ids;
  std::map<std::string, std::vector<std::string>> list_of;
  for (const auto& [job, list] : jobs) {
    ids.push_back(job);
    auto text = read_file((dir / "slurm" / list).string());
    list_of[job] = text.ok() ? split_lines(*text) : std::vector<std::string>{};
  }
  auto q = sys::run(sys::Command{.argv = {squeue, "-h", "-r", "-j", join(ids, ","), "-o", "%i %T"},
                                 .timeout = std::chrono::seconds(30)});
  if (!q.ok() || !q->success()) return out;
  for (const auto& l : split_lines(q->stdout_text)) {
    auto parts = split(std::string(trim(l)), ' ');  // "JOB_TASK STATE"
    if (parts.size() < 2) continue;
    const auto us = parts[0].find('_');
    if (us == std::string::npos) continue;
    const std::string job = parts[0].substr(0, us);
    int task = -1;
    try {
      task = std::stoi(parts[0].substr(us + 1));
    } catch (const std::exception&) {
      continue;  // "13_[0-3]": a range not yet split; -r splits them
    }
    const auto& lines = list_of[job];
    if (task >= 0 && task < static_cast<int>(lines.size()) && (parts[1] == "PENDING" || parts[1] == "RUNNING" ||
                                                               parts[1] == "CONFIGURING" || parts[1] == "COMPLETING"))
      out.insert(std::string(trim(lines[task])));
  }
  return out;
}

namespace {

// The problems of an array to submit now, in the campaign's order.
std::vector<std::string> problems_to_submit(const fs::path& dir, const CampaignSpec& spec, const SlurmSubmitOptions& o) {
  std::vector<std::string> ids;
  const auto ledger = campaign_ledger(dir, spec);
  const std::set<std::string> queued = queued_problems(dir, o.tools.squeue);
  for (size_t i = 0; i < spec.problems.size(); ++i) {
    const ProblemState s = ledger[i].state;
    if (s == ProblemState::kDone || s == ProblemState::kNotTimed || s == ProblemState::kRunning ||
        (s == ProblemState::kFailed && !o.retry_failed))
      continue;
    if (queued.count(spec.problems[i].id)) continue;  // an earlier array's task still holds it
    ids.push_back(spec.problems[i].id);
  }
  return ids;
}

std::string array_script(const fs::path& dir, const fs::path& list, const SlurmSubmitOptions& o) {
  const fs::path sdir = dir / "slurm";
  return fmt::format(
      "#!/bin/sh\n"
      "# kernelpro bench run --slurm: task i of the array runs line i+1 of {list}.\n"
      "#SBATCH --job-name=kernelpro-{name}\n"
      "#SBATCH --output={out}/%A_%a.out\n"
      "ID=$(sed -n \"$((SLURM_ARRAY_TASK_ID + 1))p\" {list})\n"
      "exec {kp} bench run {dir} --problem \"$ID\" --gpus inherit{retry}{jobs}\n",
      fmt::arg("list", shell_quote(list.string())), fmt::arg("name", dir.filename().string()),
      fmt::arg("out", sdir.string()), fmt::arg("kp", shell_quote(o.kernelpro.string())),
      fmt::arg("dir", shell_quote(dir.string())), fmt::arg("retry", o.retry_failed ? " --retry-failed" : ""),
      fmt::arg("jobs", o.jobs > 0 ? fmt::format(" --jobs {}", o.jobs) : std::string()));
}

}  // namespace

Result<SlurmSubmission> submit_slurm_array(const fs::path& dir, const CampaignSpec& spec, const SlurmSubmitOptions& o) {
  SlurmSubmission out;
  out.problems = problems_to_submit(dir, spec, o);
  if (out.problems.empty()) return out;
  const fs::path sdir = dir / "slurm";
  std::error_code ec;
  fs::create_directories(sdir, ec);
  int n = 0;
  while (fs::exists(sdir / fmt::format("submit-{}.list", n), ec)) ++n;
  const fs::path list = sdir / fmt::format("submit-{}.list", n);
  const fs::path script = sdir / fmt::format("submit-{}.sh", n);
  KP_TRY_STATUS(write_file(list.string(), join(out.problems, "\n") + "\n"));
  KP_TRY_STATUS(write_file(script.string(), array_script(dir, list, o)));
  fs::permissions(script, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read, ec);
  sys::Command c;
  c.argv = {o.tools.sbatch, "--parsable", fmt::format("--array=0-{}", out.problems.size() - 1)};
  if (o.gpus_per_task > 0) c.argv.push_back(fmt::format("--gpus-per-task={}", o.gpus_per_task));
  for (const auto& opt : split(o.sbatch_options, ' '))
    if (!trim(opt).empty()) c.argv.emplace_back(trim(opt));
  c.argv.push_back(script.string());
  c.timeout = std::chrono::seconds(60);
  auto r = sys::run(c);
  if (!r.ok() || !r->success()) {  // nothing was submitted: the next submission takes this number
    fs::remove(list, ec);
    fs::remove(script, ec);
  }
  if (!r.ok()) return std::move(r).error();
  if (!r->success())
    return make_error(ErrorCode::kTool, fmt::format("sbatch {}: {}", r->describe(),
                                                    std::string(trim(r->stderr_text + r->stdout_text))));
  out.job = std::string(trim(split(std::string(trim(r->stdout_text)), ';')[0]));
  auto before = read_file((sdir / "jobs.txt").string());
  std::string jobs = before.ok() ? *before : "";
  jobs += fmt::format("{} {} {} {}\n", out.job, list.filename().string(), out.problems.size(), utc_now_iso8601());
  KP_TRY_STATUS(write_file((sdir / "jobs.txt").string(), jobs));
  return out;
}

std::vector<std::string> slurm_job_lines(const fs::path& dir, const SlurmTools& tools) {
  std::vector<std::string> lines, ids;
  for (const auto& [job, list] : submitted_jobs(dir)) ids.push_back(job);
  if (ids.empty()) return lines;
  // -t all: also the tasks that ended lately (Slurm keeps them MinJobAge, 300 s by default).
  auto q = sys::run(sys::Command{.argv = {tools.squeue, "-h", "-r", "-t", "all", "-j", join(ids, ","), "-o", "%i %T %M %N"},
                                 .timeout = std::chrono::seconds(30)});
  if (q.ok() && q->success()) {
    for (const auto& l : split_lines(q->stdout_text))
      if (!trim(l).empty()) lines.push_back("squeue: " + std::string(trim(l)));
  } else {
    lines.push_back(fmt::format("squeue could not say ({})",
                                q.ok() ? q->describe() + ": " + std::string(trim(q->stderr_text)) : q.error().message));
  }
  auto a = sys::run(sys::Command{.argv = {tools.sacct, "-n", "-P", "-X", "-j", join(ids, ","), "--format=JobID,State,ExitCode"},
                                 .timeout = std::chrono::seconds(30)});
  if (a.ok() && a->success()) {
    for (const auto& l : split_lines(a->stdout_text))
      if (!trim(l).empty()) lines.push_back("sacct: " + std::string(trim(l)));
  } else {
    lines.push_back(fmt::format("sacct could not say ({}); tasks that ended long ago show only in the ledger",
                                a.ok() ? std::string(trim(a->stderr_text + a->stdout_text)) : a.error().message));
  }
  return lines;
}

}  // namespace kp::campaign
