// `kernelpro bench run|status|report` (campaign/campaign.h, report/campaign_report.h) and
// `kernelpro report RUN_DIR`. A campaign runs one `kernelpro optimize` per problem on a lane per
// GPU, or as the tasks of a Slurm job array (`--slurm`), which run this same command for one
// problem each on the cluster's nodes.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "cli/cli_support.h"
#include "cli/commands.h"
#include "campaign/baseline.h"
#include "campaign/gpus.h"
#include "campaign/scheduler.h"
#include "campaign/slurm.h"
#include "llm/provider.h"
#include "report/campaign_report.h"
#include "sys/subprocess.h"
#include "util/strings.h"

namespace kp::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_stop(int) { g_stop.store(true); }

std::vector<std::string> optimize_args(const BenchFlags& f, const CommonFlags& common) {
  std::vector<std::string> a = {"--budget", std::to_string(f.budget)};
  auto add = [&](const char* flag, const std::string& v) {
    if (!v.empty()) a.insert(a.end(), {flag, v});
  };
  if (f.minutes > 0) add("--minutes", fmt::format("{:g}", f.minutes));
  if (f.in_flight > 0) add("--in-flight", std::to_string(f.in_flight));
  add("--search", f.search);
  add("--feedback", f.feedback);
  add("--objective", f.objective);
  add("--provider", f.provider);
  add("--model", f.model);
  add("--config", f.config.empty() ? "" : fs::absolute(f.config).string());
  add("--base-url", f.base_url);
  add("--command", f.command);
  if (f.max_cost > 0) add("--max-cost", fmt::format("{:g}", f.max_cost));
  if (f.timeout_s > 0) add("--timeout", fmt::format("{:g}", f.timeout_s));
  add("--worker", common.worker.empty() ? "" : fs::absolute(common.worker).string());
  add("--nvcc", common.nvcc == "nvcc" ? "" : common.nvcc);
  add("--arch", common.arch);
  add("--cutlass", common.cutlass);
  return a;
}

// The lanes' display: on a terminal, one line per lane redrawn in place under the events; else
// the events alone, one per line.
std::function<void(const campaign::CampaignProgress&)> campaign_printer() {
  const bool tty = isatty(STDERR_FILENO) != 0;
  auto drawn = std::make_shared<size_t>(0);
  return [tty, drawn](const campaign::CampaignProgress& p) {
    if (!tty) {
      if (!p.event.empty()) std::fprintf(stderr, "kernelpro: %s\n", p.event.c_str());
      return;
    }
    std::string o;
    if (*drawn > 0) o += fmt::format("\033[{}A", *drawn);
    if (!p.event.empty()) o += "\r\033[2K" + p.event + "\n";
    for (const auto& l : p.lanes) {
      o += "\r\033[2K";
      if (l.problem.empty())
        o += fmt::format("  {:<6} idle", l.lane);
      else
        o += fmt::format("  {:<6} {:<28} best {:>6}  {:>3} cand  ${:.2f}  {}", l.lane, l.problem,
                         l.best_speedup > 0 ? fmt::format("{:.2f}x", l.best_speedup) : "-", l.candidates, l.cost_usd,
                         format_seconds(l.elapsed_s));
      o += "\n";
    }
    o += fmt::format("\r\033[2K  {}/{} problems finished, {} elapsed{}\n", p.finished, p.total,
                     format_seconds(p.elapsed_s), p.eta_s >= 0 ? ", about " + format_seconds(p.eta_s) + " left" : "");
    *drawn = p.lanes.size() + 1;
    std::fputs(o.c_str(), stderr);
  };
}

// The campaign named by flags: campaign.json when it exists (checked against --suite and the
// optimize arguments when those are given), else a new one from --suite.
Result<campaign::CampaignSpec> open_or_create(const BenchFlags& f, const CommonFlags& common) {
  const fs::path dir = f.campaign;
  auto existing = campaign::load_campaign(dir);
  if (existing.ok() && f.suite.empty()) return existing;
  if (!existing.ok() && existing.error().code != ErrorCode::kNotFound) return existing;
  if (f.suite.empty())
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("{}: no campaign here yet; name what to run with --suite (a KernelBench folder, a "
                                  "folder of tasks such as examples/, or a list file)",
                                  dir.string()));
  campaign::CampaignSpec spec;
  KP_TRY(spec.problems, campaign::list_campaign_problems(f.suite, f.levels, f.only));
  spec.suite = fs::absolute(f.suite).lexically_normal().string();
  spec.optimize_args = optimize_args(f, common);
  spec.python = f.python;
  spec.created = utc_now_iso8601();
  bool kernelbench = false;
  for (const auto& p : spec.problems) kernelbench = kernelbench || p.kind == "kernelbench";
  if (kernelbench && f.provider.empty() && f.config.empty() && f.command.empty())
    return make_error(ErrorCode::kInvalidInput,
                      "KernelBench problems have no seed to tune: name a model (--provider openai|anthropic|command, "
                      "or --config FILE), or run native tasks (e.g. --suite examples/)");
  if (existing.ok()) {
    std::vector<std::string> a, b;
    for (const auto& p : existing->problems) a.push_back(p.id);
    for (const auto& p : spec.problems) b.push_back(p.id);
    if (a != b || existing->optimize_args != spec.optimize_args)
      return make_error(ErrorCode::kInvalidInput,
                        fmt::format("{} holds a campaign with other problems or settings ({}); continue it with "
                                    "`kernelpro bench run {}` (no --suite), or start another in a new folder",
                                    dir.string(), join(existing->optimize_args, " "), dir.string()));
    return existing;
  }
  KP_TRY_STATUS(campaign::save_campaign(dir, spec));
  return spec;
}

// The KernelBench problems' PyTorch baselines on `gpu`, measured before the campaign when any
// are missing (kernelpro baseline resumes on its own and skips what it has).
void measure_baselines(const campaign::CampaignSpec& spec, const BenchFlags& f, const std::string& gpu,
                       const std::string& card) {
  std::map<fs::path, std::pair<std::set<int>, std::vector<std::string>>> suites;  // root -> levels, files
  for (const auto& p : spec.problems) {
    if (p.kind != "kernelbench") continue;
    auto& s = suites[p.path.parent_path().parent_path()];
    s.first.insert(p.level);
    s.second.push_back(p.path.filename().string());
  }
  const fs::path out = fs::path(f.campaign) / "baselines" / campaign::gpu_slug(card);
  for (const auto& [root, what] : suites) {
    std::vector<std::string> levels;
    for (int l : what.first) levels.push_back(std::to_string(l));
    sys::Command c;
    c.argv = {(self_dir() / "kernelpro").string(), "baseline", "--suite", root.string(), "--out", out.string(),
              "--levels", join(levels, ","), "--only", join(what.second, ",")};
    if (!spec.python.empty()) c.argv.insert(c.argv.end(), {"--python", spec.python});
    if (!gpu.empty()) c.env_set.push_back({"CUDA_VISIBLE_DEVICES", gpu});
    c.stdout_path = c.stderr_path = (fs::path(f.campaign) / "baselines" / "baseline.log").string();
    std::error_code ec;
    fs::create_directories(out, ec);
    std::fprintf(stderr, "kernelpro: PyTorch baselines (eager, torch.compile) of %zu problem(s) on %s first, into %s\n",
                 what.second.size(), card.c_str(), out.string().c_str());
    auto r = sys::run(c);
    if (!r.ok() || !r->success())
      std::fprintf(stderr, "kernelpro: the baselines were not all measured (%s); see %s. The report leaves those columns empty.\n",
                   r.ok() ? r->describe().c_str() : r.error().message.c_str(), c.stdout_path.c_str());
  }
}

campaign::SlurmTools slurm_tools(const BenchFlags& f) {
  campaign::SlurmTools t;
  t.sbatch = f.sbatch;
  t.squeue = f.squeue;
  t.sacct = f.sacct;
  return t;
}

int submit_slurm(const campaign::CampaignSpec& spec, const BenchFlags& f) {
  campaign::SlurmSubmitOptions o;
  o.kernelpro = self_dir() / "kernelpro";
  o.sbatch_options = f.slurm;
  o.gpus_per_task = f.gpus_per_task;
  o.retry_failed = f.retry_failed;
  o.jobs = f.jobs;
  o.tools = slurm_tools(f);
  auto sub = campaign::submit_slurm_array(fs::absolute(f.campaign).lexically_normal(), spec, o);
  if (!sub.ok()) return exit_for(sub.error());
  if (sub->problems.empty()) {
    std::cout << "Nothing to submit: every problem is done, failed (--retry-failed runs those again), running, or "
                 "queued in an earlier array.\n";
    return kExitOk;
  }
  std::cout << fmt::format("Submitted job array {} ({} task(s), one problem each). Follow it with: kernelpro bench status {}\n",
                           sub->job, sub->problems.size(), f.campaign);
  return kExitOk;
}

}  // namespace

int run_bench_run(const BenchFlags& f, const CommonFlags& common) {
  auto spec = open_or_create(f, common);
  if (!spec.ok()) return exit_for(spec.error());
  if (!f.slurm.empty() || f.slurm_flag) return submit_slurm(*spec, f);
  campaign::CampaignOptions o;
  o.dir = fs::absolute(f.campaign).lexically_normal();
  o.kernelpro = self_dir() / "kernelpro";
  o.only_ids = f.problems;
  o.retry_failed = f.retry_failed;
  if (f.gpus == "inherit") {
    o.inherit_gpu = true;
  } else if (f.gpus == "all") {
    o.gpus = campaign::host_gpus();
  } else if (f.gpus != "none") {
    for (const auto& g : split(f.gpus, ','))
      if (!trim(g).empty()) o.gpus.emplace_back(trim(g));
  }
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  o.build_slots = f.jobs > 0 ? f.jobs : static_cast<int>(cores);
  o.interrupted = [] { return g_stop.load(); };
  o.progress = campaign_printer();
  if (o.gpus.empty() && !o.inherit_gpu)
    std::fprintf(stderr, "kernelpro: no GPU here (or --gpus none): each problem's seed is built and nothing is timed; "
                         "run the same command on a GPU machine to time them\n");
  bool kernelbench = false;
  for (const auto& p : spec->problems) kernelbench = kernelbench || p.kind == "kernelbench";
  if (kernelbench && !f.no_baselines && (o.inherit_gpu || !o.gpus.empty())) {
    const std::string first = o.inherit_gpu ? "" : o.gpus.front();
    const std::string card = campaign::gpu_name(o.inherit_gpu ? "" : first);
    if (!card.empty()) measure_baselines(*spec, f, first, card);
  }
  g_stop = false;
  auto prev_int = std::signal(SIGINT, on_stop);
  auto prev_term = std::signal(SIGTERM, on_stop);
  auto run = campaign::run_campaign(*spec, o);
  std::signal(SIGINT, prev_int);
  std::signal(SIGTERM, prev_term);
  if (!run.ok()) return exit_for(run.error());
  const auto& r = *run;
  if (common.json) {
    std::cout << json{{"total", r.total},         {"done", r.done},       {"failed", r.failed},
                      {"not_timed", r.not_timed}, {"pending", r.pending}, {"running_elsewhere", r.busy_elsewhere},
                      {"ran", r.ran},             {"interrupted", r.interrupted}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << fmt::format("{}: {} of {} problem(s) done, {} failed, {} not timed, {} pending, {} running elsewhere; "
                             "{} run by this command\n",
                             f.campaign, r.done, r.total, r.failed, r.not_timed, r.pending, r.busy_elsewhere, r.ran);
    if (r.pending > 0 || r.interrupted)
      std::cout << fmt::format("Continue it with: kernelpro bench run {}\n", f.campaign);
    std::cout << fmt::format("Report: kernelpro bench report {} [--html report.html]\n", f.campaign);
  }
  if (r.interrupted) return kExitFailed;
  if (r.not_timed > 0 && r.done == 0) return kExitNotRun;
  return kExitOk;
}

int run_bench_status(const BenchFlags& f, const CommonFlags& common) {
  auto spec = campaign::load_campaign(f.campaign);
  if (!spec.ok()) return exit_for(spec.error());
  const auto ledger = campaign::campaign_ledger(f.campaign, *spec);
  std::map<std::string, int> count;
  for (const auto& s : ledger) ++count[campaign::to_string(s.state)];  // by name: the JSON's "counts"
  // The Slurm jobs this campaign submitted, as squeue (queued, running) and sacct (finished) see them.
  const std::vector<std::string> job_lines = campaign::slurm_job_lines(f.campaign, slurm_tools(f));
  if (common.json) {
    json probs = json::array();
    for (size_t i = 0; i < ledger.size(); ++i) {
      json j = ledger[i].to_json();
      j["id"] = spec->problems[i].id;
      probs.push_back(j);
    }
    std::cout << json{{"counts", count}, {"problems", probs}, {"slurm", job_lines}}.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << fmt::format("{}: {} problem(s): {} done, {} running, {} pending, {} failed, {} not timed\n", f.campaign,
                           ledger.size(), count["done"], count["running"], count["pending"], count["failed"],
                           count["not_timed"]);
  for (size_t i = 0; i < ledger.size(); ++i) {
    const auto& s = ledger[i];
    std::string detail;
    if (s.state == campaign::ProblemState::kDone && s.result.is_object())
      detail = fmt::format("{:.2f}x the reference, {} candidate(s)", s.result.value("speedup_vs_reference", 0.0),
                           s.result.value("nodes", 0));
    else if (s.state == campaign::ProblemState::kRunning)
      detail = fmt::format("on {} ({}), since {}", s.host, s.lane, s.started);
    else if (!s.error.empty())
      detail = s.error;
    std::cout << fmt::format("  {:<28} {:<10} {}\n", spec->problems[i].id, campaign::to_string(s.state), detail);
  }
  for (const auto& l : job_lines) std::cout << "  " << l << "\n";
  return kExitOk;
}

int run_bench_prompts(const BenchFlags& f, const CommonFlags& common) {
  auto spec = campaign::load_campaign(f.campaign);
  if (!spec.ok()) return exit_for(spec.error());
  const fs::path dir = fs::absolute(f.campaign).lexically_normal();
  const std::string resume = fmt::format("kernelpro bench run {}", dir.string());
  json waiting = json::array();
  std::set<std::string> problems;
  for (const auto& p : spec->problems)
    for (const auto& w : llm::waiting_prompts((dir / "runs" / p.folder() / "manual").string())) {
      waiting.push_back({{"problem", p.id}, {"purpose", w.purpose}, {"prompt", w.prompt}, {"answer", w.answer},
                         {"asked", w.asked}});
      problems.insert(p.id);
    }
  if (common.json) {
    std::cout << json{{"campaign", dir.string()}, {"waiting", waiting}, {"then", resume}}.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << fmt::format("{}: {} prompt(s) wait in {} problem(s)\n", dir.string(), waiting.size(), problems.size());
  for (const auto& w : waiting)
    std::cout << fmt::format("  {:<28} {:<9} {}\n  {:<28} {:<9} -> {}\n", w["problem"].get<std::string>(),
                             w["purpose"].get<std::string>(), w["prompt"].get<std::string>(), "", "",
                             w["answer"].get<std::string>());
  if (!waiting.empty())
    std::cout << fmt::format("Write each reply (the model's whole reply, nothing else) into its answer file, then: "
                             "{}\n",
                             resume);
  return kExitOk;
}

int run_bench_report(const BenchFlags& f, const CommonFlags& common) {
  std::vector<fs::path> extra;
  for (const auto& b : f.baselines) extra.emplace_back(b);
  auto r = report::campaign_report(f.campaign, extra);
  if (!r.ok()) return exit_for(r.error());
  if (!f.html.empty()) {
    if (auto w = write_file(f.html, report::to_html(*r)); !w.ok()) return exit_for(w.error());
    std::fprintf(stderr, "kernelpro: wrote %s\n", f.html.c_str());
  }
  if (!f.csv.empty()) {
    if (auto w = write_file(f.csv, report::to_csv(*r)); !w.ok()) return exit_for(w.error());
    std::fprintf(stderr, "kernelpro: wrote %s\n", f.csv.c_str());
  }
  if (common.json)
    std::cout << report::to_json(*r).dump(2) << "\n";
  else
    std::cout << report::to_text(*r);
  return kExitOk;
}

int run_run_report(const std::string& run_dir, const std::string& html, const CommonFlags& common) {
  const fs::path dir = fs::absolute(run_dir).lexically_normal();
  auto p = report::read_run(dir, dir.filename().string(), "native", 0);
  if (!p.ok()) return exit_for(p.error());
  report::CampaignReport r;
  r.title = dir.filename().string();
  r.problems.push_back(*p);
  report::summarize(r);
  if (!html.empty()) {
    if (auto w = write_file(html, report::to_html(r)); !w.ok()) return exit_for(w.error());
    std::fprintf(stderr, "kernelpro: wrote %s\n", html.c_str());
  }
  if (common.json)
    std::cout << report::to_json(r).dump(2) << "\n";
  else
    std::cout << report::to_text(r);
  return kExitOk;
}

}  // namespace kp::cli
