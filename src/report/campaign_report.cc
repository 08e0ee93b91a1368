#include "report/campaign_report.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "campaign/baseline.h"
#include "campaign/ledger.h"
#include "report/transcripts.h"
#include "store/run_store.h"
#include "util/strings.h"

namespace kp::report {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

double geomean(const std::vector<double>& xs) {
  if (xs.empty()) return 0;
  double s = 0;
  for (double x : xs) s += std::log(x);
  return std::exp(s / static_cast<double>(xs.size()));
}

std::string group_of(const std::string& kind, int level) {
  return kind == "kernelbench" ? campaign::level_key(level) : "native";
}

// Loaded baseline documents: hardware name -> document.
struct Baselines {
  std::vector<json> docs;
  const json* for_card(const std::string& hardware) const {
    for (const auto& d : docs)
      if (d.value("hardware", "") == hardware) return &d;
    return nullptr;
  }
};

void load_baselines(const fs::path& folder, Baselines& b) {
  std::error_code ec;
  const fs::path f = folder / campaign::kBaselineFile;
  if (!fs::is_regular_file(f, ec)) return;
  auto doc = campaign::load_baseline_doc(f);
  if (doc.ok() && doc->contains("hardware")) b.docs.push_back(*doc);
}

// The median (else mean) milliseconds of `mode` for the problem file, or 0.
double baseline_ms(const json& doc, int level, const std::string& file, const char* mode) {
  const auto probs = doc.find("problems");
  if (probs == doc.end()) return 0;
  const auto lv = probs->find(campaign::level_key(level));
  if (lv == probs->end()) return 0;
  const auto p = lv->find(file);
  if (p == lv->end() || !p->contains("results")) return 0;
  const auto r = (*p)["results"].find(mode);
  if (r == (*p)["results"].end() || !r->value("ok", false)) return 0;
  return r->value("median_ms", r->value("mean_ms", 0.0));
}

std::string esc(std::string_view s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

std::string x_or_dash(double v, const char* fmt_spec = "{:.2f}x") {
  return v > 0 ? fmt::format(fmt::runtime(fmt_spec), v) : "-";
}

}  // namespace

Result<ProblemResult> read_run(const fs::path& run_dir, const std::string& id, const std::string& kind, int level) {
  ProblemResult r;
  r.id = id;
  r.kind = kind;
  r.level = level;
  r.group = group_of(kind, level);
  const fs::path db = run_dir / "store.db";
  std::error_code ec;
  if (!fs::exists(db, ec))
    return make_error(ErrorCode::kNotFound, fmt::format("{}: no run store (store.db) in this folder", run_dir.string()));
  KP_TRY(store::RunStore s, store::RunStore::open(db, store::RunStore::Access::kReader));
  KP_TRY(auto evals, s.evaluations());
  KP_TRY(auto nodes, s.nodes());
  KP_TRY(store::LlmSpend spend, s.llm_spend());
  KP_TRY(r.candidates, s.measured_candidates());
  r.llm_calls = spend.calls;
  r.tokens = spend.input_tokens + spend.output_tokens;
  r.cost_usd = spend.cost_usd;
  std::map<int64_t, std::string> outcome_of;  // candidate -> its last verdict
  // A KernelBench run's root is the problem's own Model, evaluated as the seed: it is the
  // reference, not a solution, and counts neither as correct nor as the best (KernelBench's
  // fast_p is over generated kernels). A native task's seed is a kernel and counts.
  std::set<int64_t> reference_candidates;
  if (kind == "kernelbench")
    for (const auto& n : nodes)
      if (n.parent < 0) reference_candidates.insert(n.candidate);
  const CandidateClasses cc = classify_candidates(s, evals, reference_candidates);
  r.classes = cc.classes;
  r.correct_s = cc.correct_s;
  r.planned_with_class = cc.planned_with_class;
  r.aimed = cc.aimed;
  const store::EvaluationRow* best = nullptr;
  std::set<int64_t> passed;
  for (const auto& e : evals) {
    outcome_of[e.candidate] = e.outcome;
    if (e.outcome != "ok" || e.seconds <= 0 || reference_candidates.count(e.candidate)) continue;
    passed.insert(e.candidate);
    if (!best || e.seconds < best->seconds) best = &e;
  }
  r.ok_candidates = static_cast<int>(passed.size());
  if (best) {
    r.correct = true;
    r.best_s = best->seconds;
    r.joules_per_call = best->joules;
    json j = json::parse(best->report_json, nullptr, false);
    std::string unprofiled;
    if (j.is_object()) unprofiled = j.value("unprofiled", "");
    // The model loop records {"eval": the verdict, "feedback": ..., ...}; the tuner the verdict.
    if (j.is_object() && j.contains("eval") && j["eval"].is_object()) j = j["eval"];
    if (j.is_object()) {
      r.reference_s = j.value("reference_median_s", 0.0);
      r.floor_s = j.value("physics_floor_s", 0.0);
      r.achieved_flops = j.value("achieved_flops_per_s", 0.0);
      r.achieved_bytes = j.value("achieved_bytes_per_s", 0.0);
      if (j.contains("device") && j["device"].is_object()) r.device = j["device"].value("name", "");
    }
    r.speedup = best->speedup > 0 ? best->speedup : (r.reference_s > 0 ? r.reference_s / r.best_s : 0);
    if (r.floor_s > 0) r.speed_of_light = r.floor_s / r.best_s;
    if (auto f = s.findings(best->candidate); f.ok())
      for (const auto& x : *f) r.diagnosis.push_back(fmt::format("{} ({}): {}", x.tool, x.severity, x.text));
    if (r.diagnosis.empty() && !unprofiled.empty()) r.diagnosis.push_back("not profiled: " + unprofiled);
  }
  int64_t best_node = -1;
  double best_node_s = 0;
  std::map<int64_t, int64_t> parent;
  for (const auto& n : nodes) {
    TreeNode t;
    t.id = n.id;
    t.parent = n.parent;
    t.direction = n.direction;
    t.outcome = n.measured ? (outcome_of.count(n.candidate) ? outcome_of[n.candidate] : (n.ok ? "ok" : "failed")) : "";
    if (n.measured && n.ok) {
      t.seconds = n.seconds;
      if (n.seconds > 0 && (best_node < 0 || n.seconds < best_node_s)) best_node = n.id, best_node_s = n.seconds;
    }
    parent[n.id] = n.parent;
    r.tree.push_back(t);
  }
  std::set<int64_t> path;
  for (int64_t at = best_node; at >= 0 && !path.count(at); at = parent.count(at) ? parent[at] : -1) path.insert(at);
  for (auto& t : r.tree) t.on_best_path = path.count(t.id) > 0;
  if (fs::exists(run_dir / "best.cu", ec)) r.best_source = (run_dir / "best.cu").string();
  if (auto text = read_file((run_dir / "best.json").string()); text.ok()) {
    json b = json::parse(*text, nullptr, false);
    if (b.is_object()) {
      r.objective = b.value("objective", "time");
      if (r.objective != "time" && r.correct) {
        r.chosen_s = b.value("best_seconds", 0.0);
        r.chosen_joules = b.value("best_joules", 0.0);
      }
    }
  }
  r.state = evals.empty() ? campaign::ProblemState::kPending : campaign::ProblemState::kDone;
  return r;
}

std::optional<double> energy_change(const ProblemResult& p) {
  if (p.chosen_s <= 0 || p.chosen_joules <= 0 || p.joules_per_call <= 0) return std::nullopt;
  return p.chosen_joules / p.joules_per_call - 1;
}

void summarize(CampaignReport& r) {
  std::map<std::string, std::vector<const ProblemResult*>> by;
  for (const auto& p : r.problems) by[p.group].push_back(&p);
  if (by.size() > 1)
    for (const auto& p : r.problems) by["~all"].push_back(&p);
  r.groups.clear();
  for (const auto& [name, ps] : by) {
    GroupSummary g;
    g.group = name == "~all" ? "all" : name;
    g.problems = static_cast<int>(ps.size());
    std::vector<double> sp, ve, vc, vt;
    for (const auto* p : ps) {
      g.candidates += p->candidates;
      g.cost_usd += p->cost_usd;
      for (const auto& [k, n] : p->classes) g.classes[k] += n;
      g.planned_with_class += p->planned_with_class;
      g.aimed += p->aimed;
      if (!p->correct) continue;
      ++g.correct;
      for (size_t k = 0; k < 4; ++k)
        if (p->speedup > kFastP[k]) g.fast_p[k] += 1;
      if (p->speedup > 0) sp.push_back(p->speedup);
      if (p->vs_eager > 0) ve.push_back(p->vs_eager);
      if (p->vs_compile > 0) vc.push_back(p->vs_compile);
      if (p->vs_torch > 0) vt.push_back(p->vs_torch);
      for (size_t k = 0; k < 4; ++k)
        if (p->vs_torch > kFastP[k]) g.fast_p_vs_torch[k] += 1;
    }
    for (double& f : g.fast_p) f = g.problems ? f / g.problems : 0;
    for (double& f : g.fast_p_vs_torch) f = g.problems ? f / g.problems : 0;
    g.geomean_vs_torch = geomean(vt);
    g.with_torch = static_cast<int>(vt.size());
    g.geomean_speedup = geomean(sp);
    g.geomean_vs_eager = geomean(ve);
    g.geomean_vs_compile = geomean(vc);
    g.with_eager = static_cast<int>(ve.size());
    g.with_compile = static_cast<int>(vc.size());
    g.correctness_rate = g.problems ? static_cast<double>(g.correct) / g.problems : 0;
    r.groups.push_back(g);
  }
}

Result<CampaignReport> campaign_report(const fs::path& dir, const std::vector<fs::path>& baselines) {
  KP_TRY(campaign::CampaignSpec spec, campaign::load_campaign(dir));
  CampaignReport r;
  r.title = fs::absolute(dir).lexically_normal().filename().string();
  Baselines b;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir / "baselines", ec))
    if (e.is_directory()) load_baselines(e.path(), b);
  for (const auto& f : baselines) load_baselines(f, b);
  const auto ledger = campaign::campaign_ledger(dir, spec);
  std::set<std::string> missing_cards;
  for (size_t i = 0; i < spec.problems.size(); ++i) {
    const auto& p = spec.problems[i];
    const fs::path run = dir / "runs" / p.folder();
    ProblemResult pr;
    if (fs::exists(run / "store.db", ec)) {
      auto read = read_run(run, p.id, p.kind, p.level);
      if (!read.ok()) return std::move(read).error().wrap(p.id);
      pr = *read;
    } else {
      pr.id = p.id;
      pr.kind = p.kind;
      pr.level = p.level;
      pr.group = group_of(p.kind, p.level);
    }
    pr.state = ledger[i].state;
    pr.error = ledger[i].error;
    if (p.kind == "kernelbench" && pr.correct && !pr.device.empty()) {
      if (const json* doc = b.for_card(pr.device)) {
        pr.eager_s = baseline_ms(*doc, p.level, p.path.filename().string(), "eager") / 1e3;
        pr.compile_s = baseline_ms(*doc, p.level, p.path.filename().string(), "compile") / 1e3;
        if (pr.eager_s > 0) pr.vs_eager = pr.eager_s / pr.best_s;
        if (pr.compile_s > 0) pr.vs_compile = pr.compile_s / pr.best_s;
        pr.torch_s = pr.eager_s > 0 && pr.compile_s > 0 ? std::min(pr.eager_s, pr.compile_s)
                                                         : std::max(pr.eager_s, pr.compile_s);
        if (pr.torch_s > 0) pr.vs_torch = pr.torch_s / pr.best_s;
      } else {
        missing_cards.insert(pr.device);
      }
    }
    if (p.kind == "kernelbench" && pr.classes.count("correct")) {  // split against PyTorch on this card
      pr.classes.erase("correct");
      for (double t : pr.correct_s) ++pr.classes[against_torch(t, pr.torch_s)];
    }
    r.problems.push_back(std::move(pr));
  }
  for (const auto& card : missing_cards)
    r.notes.push_back(fmt::format("no PyTorch baseline measured on {}: the columns against eager and torch.compile are "
                                  "empty for its problems (`kernelpro bench run` measures them first on a GPU; or "
                                  "`kernelpro baseline --out {}/baselines/{}`)",
                                  card, dir.string(), campaign::gpu_slug(card)));
  summarize(r);
  return r;
}

json to_json(const CampaignReport& r) {
  json groups = json::array(), problems = json::array();
  for (const auto& g : r.groups) {
    json fp;
    json fp_torch;
    for (size_t k = 0; k < 4; ++k) {
      fp[fmt::format("{:g}", kFastP[k])] = g.fast_p[k];
      fp_torch[fmt::format("{:g}", kFastP[k])] = g.fast_p_vs_torch[k];
    }
    groups.push_back({{"group", g.group},
                      {"problems", g.problems},
                      {"correct", g.correct},
                      {"correctness_rate", g.correctness_rate},
                      {"fast_p", fp},
                      {"geomean_speedup", g.geomean_speedup},
                      {"geomean_vs_eager", g.geomean_vs_eager},
                      {"with_eager", g.with_eager},
                      {"geomean_vs_compile", g.geomean_vs_compile},
                      {"with_compile", g.with_compile},
                      {"fast_p_vs_torch", fp_torch},
                      {"geomean_vs_torch", g.geomean_vs_torch},
                      {"with_torch", g.with_torch},
                      {"candidates", g.candidates},
                      {"cost_usd", g.cost_usd},
                      {"candidate_classes", g.classes},
                      {"analysis_aimed", {{"planned_with_class", g.planned_with_class}, {"aimed", g.aimed}}}});
  }
  for (const auto& p : r.problems) {
    json tree = json::array();
    for (const auto& t : p.tree)
      tree.push_back({{"id", t.id}, {"parent", t.parent}, {"outcome", t.outcome}, {"seconds", t.seconds},
                      {"direction", t.direction}, {"best_path", t.on_best_path}});
    problems.push_back({{"id", p.id},
                        {"kind", p.kind},
                        {"group", p.group},
                        {"level", p.level},
                        {"state", campaign::to_string(p.state)},
                        {"error", p.error},
                        {"correct", p.correct},
                        {"best_s", p.best_s},
                        {"reference_s", p.reference_s},
                        {"speedup", p.speedup},
                        {"eager_s", p.eager_s},
                        {"compile_s", p.compile_s},
                        {"vs_eager", p.vs_eager},
                        {"vs_compile", p.vs_compile},
                        {"torch_s", p.torch_s},
                        {"vs_torch", p.vs_torch},
                        {"physics_floor_s", p.floor_s},
                        {"speed_of_light", p.speed_of_light},
                        {"joules_per_call", p.joules_per_call},
                        {"objective", p.objective},
                        {"chosen_s", p.chosen_s},
                        {"chosen_joules_per_call", p.chosen_joules},
                        {"energy_change_vs_fastest", energy_change(p) ? json(*energy_change(p)) : json(nullptr)},
                        {"achieved_flops_per_s", p.achieved_flops},
                        {"achieved_bytes_per_s", p.achieved_bytes},
                        {"candidates", p.candidates},
                        {"ok_candidates", p.ok_candidates},
                        {"llm_calls", p.llm_calls},
                        {"tokens", p.tokens},
                        {"cost_usd", p.cost_usd},
                        {"device", p.device},
                        {"best_source", p.best_source},
                        {"diagnosis", p.diagnosis},
                        {"candidate_classes", p.classes},
                        {"analysis_aimed", {{"planned_with_class", p.planned_with_class}, {"aimed", p.aimed}}},
                        {"tree", tree}});
  }
  return {{"format", "kernelpro-campaign-report"}, {"version", 1}, {"title", r.title},
          {"groups", groups},                      {"problems", problems}, {"notes", r.notes}};
}

std::string to_csv(const CampaignReport& r) {
  std::string o =
      "id,group,state,correct,best_s,reference_s,speedup,eager_s,vs_eager,compile_s,vs_compile,speed_of_light,"
      "joules_per_call,candidates,llm_calls,tokens,cost_usd,device,torch_s,vs_torch\n";
  for (const auto& p : r.problems)
    o += fmt::format("{},{},{},{},{:.6g},{:.6g},{:.4g},{:.6g},{:.4g},{:.6g},{:.4g},{:.4g},{:.6g},{},{},{},{:.4f},{},{:.6g},{:.4g}\n",
                     csv_field(p.id), p.group, campaign::to_string(p.state), p.correct ? 1 : 0, p.best_s, p.reference_s,
                     p.speedup, p.eager_s, p.vs_eager, p.compile_s, p.vs_compile, p.speed_of_light, p.joules_per_call,
                     p.candidates, p.llm_calls, p.tokens, p.cost_usd, csv_field(p.device), p.torch_s, p.vs_torch);
  return o;
}

namespace {

// The Energy table's cells for a problem searched under an energy objective (problem, objective,
// chosen time and J per call, fastest time and J per call, change); nullopt for any other.
std::optional<std::array<std::string, 7>> energy_cells(const ProblemResult& p) {
  if (p.objective == "time" || p.chosen_s <= 0) return std::nullopt;
  auto joules = [](double j) { return j > 0 ? fmt::format("{:.3g}", j) : std::string("-"); };
  const auto change = energy_change(p);
  return std::array<std::string, 7>{p.id,           p.objective,           format_seconds(p.chosen_s),
                                    joules(p.chosen_joules), format_seconds(p.best_s), joules(p.joules_per_call),
                                    change ? fmt::format("{:+.1f}%", 100 * *change) : "-"};
}

// Under an energy objective: per problem the candidate the search chose against the fastest one.
std::string energy_text(const CampaignReport& r) {
  std::string o;
  std::vector<double> ratios;
  for (const auto& p : r.problems) {
    const auto c = energy_cells(p);
    if (!c) continue;
    if (o.empty())
      o = fmt::format("\n{:<28} {:<24} {:>10} {:>10} {:>10} {:>10} {:>9}\n", "problem", "objective", "chosen",
                      "J/call", "fastest", "J/call", "energy");
    if (const auto change = energy_change(p)) ratios.push_back(1 + *change);
    o += fmt::format("{:<28} {:<24} {:>10} {:>10} {:>10} {:>10} {:>9}\n", (*c)[0], (*c)[1], (*c)[2], (*c)[3], (*c)[4],
                     (*c)[5], (*c)[6]);
  }
  if (!ratios.empty())
    o += fmt::format("energy per call of the chosen candidates against the fastest: {:+.1f}% (geomean of {})\n",
                     100 * (geomean(ratios) - 1), ratios.size());
  return o;
}

// Where the candidates went, per group: each class with its count, and how often a child planned
// from an analysed parent aimed at the bottleneck the analysis named.
std::string classes_text(const CampaignReport& r) {
  std::string o;
  for (const auto& g : r.groups) {
    if (g.classes.empty()) continue;
    if (o.empty()) o = "\nwhere the candidates went:\n";
    o += fmt::format("{:<8}", g.group);
    std::string sep;
    for (const auto& [k, n] : g.classes) {
      o += fmt::format("{} {} {}", sep, n, k);
      sep = ";";
    }
    if (g.planned_with_class > 0)
      o += fmt::format("; {} of {} children of an analysed candidate aimed at its bottleneck", g.aimed,
                       g.planned_with_class);
    o += "\n";
  }
  return o;
}

}  // namespace

std::string to_text(const CampaignReport& r) {
  std::string o = fmt::format("{}\n\n", r.title);
  o += fmt::format("{:<8} {:>8} {:>8} {:>7} {:>7} {:>7} {:>7} {:>9} {:>9} {:>10} {:>6} {:>8}\n", "group", "problems",
                   "correct", "fast_0", "fast_1", "fast_1.5", "fast_2", "geomean", "vs eager", "vs compile", "cands",
                   "cost");
  for (const auto& g : r.groups)
    o += fmt::format("{:<8} {:>8} {:>8} {:>7.2f} {:>7.2f} {:>7.2f} {:>7.2f} {:>9} {:>9} {:>10} {:>6} {:>8}\n", g.group,
                     g.problems, g.correct, g.fast_p[0], g.fast_p[1], g.fast_p[2], g.fast_p[3], x_or_dash(g.geomean_speedup),
                     x_or_dash(g.geomean_vs_eager), x_or_dash(g.geomean_vs_compile), g.candidates,
                     fmt::format("${:.2f}", g.cost_usd));
  if (std::any_of(r.groups.begin(), r.groups.end(), [](const GroupSummary& g) { return g.with_torch > 0; })) {
    o += "\nagainst the faster of eager and torch.compile (KernelBench v3):\n";
    o += fmt::format("{:<8} {:>7} {:>7} {:>8} {:>7} {:>9} {:>11}\n", "group", "fast_0", "fast_1", "fast_1.5", "fast_2",
                     "geomean", "baselines");
    for (const auto& g : r.groups)
      o += fmt::format("{:<8} {:>7.2f} {:>7.2f} {:>8.2f} {:>7.2f} {:>9} {:>11}\n", g.group, g.fast_p_vs_torch[0],
                       g.fast_p_vs_torch[1], g.fast_p_vs_torch[2], g.fast_p_vs_torch[3], x_or_dash(g.geomean_vs_torch),
                       fmt::format("{}/{}", g.with_torch, g.problems));
  }
  o += fmt::format("\n{:<28} {:<10} {:>10} {:>9} {:>9} {:>10} {:>9} {:>6} {:>10} {:>6}\n", "problem", "state", "best",
                   "speedup", "vs eager", "vs compile", "vs torch", "SOL", "J/call", "cands");
  for (const auto& p : r.problems)
    o += fmt::format("{:<28} {:<10} {:>10} {:>9} {:>9} {:>10} {:>9} {:>6} {:>10} {:>6}\n", p.id,
                     campaign::to_string(p.state), p.correct ? format_seconds(p.best_s) : "-", x_or_dash(p.speedup),
                     x_or_dash(p.vs_eager), x_or_dash(p.vs_compile), x_or_dash(p.vs_torch),
                     p.speed_of_light > 0 ? fmt::format("{:.0f}%", 100 * p.speed_of_light) : "-",
                     p.joules_per_call > 0 ? fmt::format("{:.3g}", p.joules_per_call) : "-", p.candidates);
  o += energy_text(r);
  o += classes_text(r);
  for (const auto& p : r.problems)
    if (p.state == campaign::ProblemState::kFailed) o += fmt::format("\n{} failed: {}\n", p.id, p.error);
  for (const auto& n : r.notes) o += "\nnote: " + n + "\n";
  return o;
}

// ----- HTML -----

namespace {

const char* outcome_colour(const std::string& outcome) {
  if (outcome == "ok") return "#2e7d32";
  if (outcome == "incorrect") return "#ef6c00";
  if (outcome == "rejected") return "#6a1b9a";
  if (outcome == "compile_error") return "#9e9e9e";
  if (outcome.empty()) return "#ffffff";
  return "#c62828";  // crash, timeout, runtime_error, load_error
}

// Speedups in bins of a log scale, as bars.
std::string histogram_svg(const std::string& title, const std::vector<double>& speedups) {
  const std::vector<std::pair<double, std::string>> bins = {
      {0.5, "<0.5"}, {0.8, "0.5-0.8"}, {1.0, "0.8-1"}, {1.25, "1-1.25"}, {1.5, "1.25-1.5"}, {2.0, "1.5-2"},
      {4.0, "2-4"},  {1e300, ">4"}};
  std::vector<int> count(bins.size(), 0);
  for (double s : speedups)
    for (size_t i = 0; i < bins.size(); ++i)
      if (s < bins[i].first) {
        ++count[i];
        break;
      }
  const int top = std::max(1, *std::max_element(count.begin(), count.end()));
  const int w = 420, h = 180, bw = 46;
  std::string o = fmt::format(R"(<svg class="plot hist" role="img" width="{}" height="{}" viewBox="0 0 {} {}"><title>{}</title>)",
                              w, h + 40, w, h + 40, esc(title));
  for (size_t i = 0; i < bins.size(); ++i) {
    const int bh = count[i] * h / top;
    const int x = 10 + static_cast<int>(i) * (bw + 5);
    o += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{}: {}</title></rect>)", x, 10 + h - bh,
                     bw, bh, bins[i].first <= 1.0 ? "#b0bec5" : "#1565c0", bins[i].second, count[i]);
    o += fmt::format(R"(<text x="{}" y="{}" font-size="10" text-anchor="middle">{}</text>)", x + bw / 2, h + 24,
                     esc(bins[i].second));
    if (count[i] > 0)
      o += fmt::format(R"(<text x="{}" y="{}" font-size="10" text-anchor="middle">{}</text>)", x + bw / 2, 6 + h - bh,
                       count[i]);
  }
  return o + "</svg>";
}

// Horizontal bars per problem on a log scale: against the reference, eager and compile.
std::string bars_svg(const std::vector<const ProblemResult*>& ps) {
  const int row = 16, label = 190, plot = 420, rows = static_cast<int>(ps.size());
  const double lo = std::log(0.25), hi = std::log(8.0);
  auto xpos = [&](double v) {
    const double t = (std::log(std::clamp(v, 0.25, 8.0)) - lo) / (hi - lo);
    return label + static_cast<int>(t * plot);
  };
  const int h = rows * (3 * row / 2 + 6) + 30;
  std::string o = fmt::format(
      R"(<svg class="plot bars" role="img" width="{}" height="{}" viewBox="0 0 {} {}"><title>speedup per problem</title>)",
      label + plot + 20, h, label + plot + 20, h);
  int y = 10;
  for (const auto* p : ps) {
    o += fmt::format(R"(<text x="{}" y="{}" font-size="11" text-anchor="end">{}</text>)", label - 6, y + 12, esc(p->id));
    const std::pair<double, const char*> series[] = {
        {p->speedup, "#1565c0"}, {p->vs_eager, "#f9a825"}, {p->vs_compile, "#6a1b9a"}};
    const char* names[] = {"reference", "eager", "torch.compile"};
    for (int k = 0; k < 3; ++k) {
      if (series[k].first <= 0) continue;
      const int x0 = xpos(1.0), x1 = xpos(series[k].first);
      o += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{} vs {}: {:.2f}x</title></rect>)",
                       std::min(x0, x1), y + k * row / 2, std::max(1, std::abs(x1 - x0)), row / 2 - 1, series[k].second,
                       esc(p->id), names[k], series[k].first);
    }
    y += 3 * row / 2 + 6;
  }
  o += fmt::format(R"(<line x1="{0}" y1="0" x2="{0}" y2="{1}" stroke="#000"/>)", xpos(1.0), y);
  for (double t : {0.25, 0.5, 1.0, 2.0, 4.0, 8.0})
    o += fmt::format(R"(<text x="{}" y="{}" font-size="10" text-anchor="middle">{:g}x</text>)", xpos(t), y + 14, t);
  return o + "</svg>";
}

// Achieved FLOP/s against arithmetic intensity (FLOP per byte), log-log, one point per problem.
std::string roofline_svg(const std::vector<const ProblemResult*>& ps) {
  std::vector<const ProblemResult*> pts;
  for (const auto* p : ps)
    if (p->achieved_bytes > 0 && p->achieved_flops > 0) pts.push_back(p);
  const int w = 460, h = 300, m = 50;
  std::string o = fmt::format(
      R"(<svg class="plot roofline" role="img" width="{}" height="{}" viewBox="0 0 {} {}"><title>roofline of the best candidates</title>)",
      w, h, w, h);
  o += fmt::format(R"(<rect x="{}" y="10" width="{}" height="{}" fill="none" stroke="#999"/>)", m, w - m - 10, h - m - 10);
  if (pts.empty()) {
    o += fmt::format(R"(<text x="{}" y="{}" font-size="12">no candidate with measured bytes and FLOPs</text>)", m + 10, h / 2);
    return o + "</svg>";
  }
  double ai_lo = 1e300, ai_hi = 0, f_lo = 1e300, f_hi = 0;
  for (const auto* p : pts) {
    const double ai = p->achieved_flops / p->achieved_bytes;
    ai_lo = std::min(ai_lo, ai), ai_hi = std::max(ai_hi, ai);
    f_lo = std::min(f_lo, p->achieved_flops), f_hi = std::max(f_hi, p->achieved_flops);
  }
  ai_lo /= 4, ai_hi *= 4, f_lo /= 4, f_hi *= 4;
  auto sx = [&](double v) { return m + (std::log(v) - std::log(ai_lo)) / (std::log(ai_hi) - std::log(ai_lo)) * (w - m - 10); };
  auto sy = [&](double v) { return 10 + (h - m - 10) * (1 - (std::log(v) - std::log(f_lo)) / (std::log(f_hi) - std::log(f_lo))); };
  for (const auto* p : pts) {
    const double ai = p->achieved_flops / p->achieved_bytes;
    o += fmt::format(
        R"(<circle cx="{:.1f}" cy="{:.1f}" r="5" fill="#1565c0"><title>{}: {:.3g} FLOP/B, {:.3g} FLOP/s, {:.3g} B/s{}</title></circle>)",
        sx(ai), sy(p->achieved_flops), esc(p->id), ai, p->achieved_flops, p->achieved_bytes,
        p->speed_of_light > 0 ? fmt::format(", {:.0f}% of the physics floor", 100 * p->speed_of_light) : "");
    o += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="10">{}</text>)", sx(ai) + 7, sy(p->achieved_flops) + 3,
                     esc(p->id));
  }
  o += fmt::format(R"(<text x="{}" y="{}" font-size="11" text-anchor="middle">FLOP per byte (log)</text>)", w / 2, h - 12);
  o += fmt::format(R"svg(<text x="14" y="{}" font-size="11" transform="rotate(-90 14 {})" text-anchor="middle">FLOP/s (log)</text>)svg",
                   h / 2, h / 2);
  return o + "</svg>";
}

// The search tree, depth left to right; nodes coloured by verdict, the path to the best bold.
std::string tree_svg(const ProblemResult& p) {
  if (p.tree.empty()) return "<p>No node yet.</p>";
  std::map<int64_t, std::vector<int64_t>> kids;
  std::vector<int64_t> roots;
  std::map<int64_t, const TreeNode*> by_id;
  for (const auto& t : p.tree) by_id[t.id] = &t;
  for (const auto& t : p.tree) (t.parent >= 0 && by_id.count(t.parent) ? kids[t.parent] : roots).push_back(t.id);
  std::map<int64_t, std::pair<int, int>> pos;  // depth, row
  int row = 0, max_depth = 0;
  std::vector<std::pair<int64_t, int>> stack;
  for (auto it = roots.rbegin(); it != roots.rend(); ++it) stack.push_back({*it, 0});
  while (!stack.empty()) {
    auto [id, d] = stack.back();
    stack.pop_back();
    if (pos.count(id)) continue;
    pos[id] = {d, row++};
    max_depth = std::max(max_depth, d);
    auto& k = kids[id];
    for (auto it = k.rbegin(); it != k.rend(); ++it) stack.push_back({*it, d + 1});
  }
  const int dx = 70, dy = 22, w = (max_depth + 1) * dx + 40, h = row * dy + 20;
  std::string o = fmt::format(
      R"(<svg class="plot tree" role="img" width="{}" height="{}" viewBox="0 0 {} {}"><title>search tree of {}</title>)", w, h,
      w, h, esc(p.id));
  auto xy = [&](int64_t id) { return std::pair<int, int>{20 + pos[id].first * dx, 15 + pos[id].second * dy}; };
  for (const auto& t : p.tree)
    if (t.parent >= 0 && pos.count(t.parent) && pos.count(t.id)) {
      auto [x0, y0] = xy(t.parent);
      auto [x1, y1] = xy(t.id);
      o += fmt::format(R"(<path d="M{} {} H{} V{} H{}" fill="none" stroke="{}" stroke-width="{}"/>)", x0, y0, (x0 + x1) / 2,
                       y1, x1, t.on_best_path ? "#1565c0" : "#bbb", t.on_best_path ? 3 : 1);
    }
  for (const auto& t : p.tree) {
    if (!pos.count(t.id)) continue;
    auto [x, y] = xy(t.id);
    o += fmt::format(
        R"(<circle cx="{}" cy="{}" r="7" fill="{}" stroke="{}" stroke-width="{}"><title>node {}: {}{}{}</title></circle>)", x,
        y, outcome_colour(t.outcome), t.on_best_path ? "#1565c0" : "#333", t.on_best_path ? 3 : 1, t.id,
        t.outcome.empty() ? "not measured" : t.outcome, t.seconds > 0 ? " " + format_seconds(t.seconds) : std::string(),
        t.direction.empty() ? "" : " - " + esc(t.direction.substr(0, 120)));
  }
  return o + "</svg>";
}

const char* kStyle = R"(
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px;margin:8px 0}th,td{border:1px solid #ddd;padding:3px 8px;text-align:right}
th{background:#f4f6f8}td:first-child,th:first-child{text-align:left}.failed{color:#c62828}
.legend span{display:inline-block;margin-right:14px;font-size:12px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}
details{margin:6px 0}summary{cursor:pointer}pre{background:#f7f7f7;padding:8px;overflow:auto;font-size:12px}
)";

// Where the candidates went: per problem, each class's count (the same numbers as the text's).
std::string classes_html(const CampaignReport& r) {
  std::set<std::string> names;
  for (const auto& p : r.problems)
    for (const auto& [k, n] : p.classes) names.insert(k);
  if (names.empty()) return "";
  std::string o = "<h2>Where the candidates went</h2>\n<table id=\"classes\"><tr><th>problem</th>";
  for (const auto& k : names) o += "<th>" + esc(k) + "</th>";
  o += "<th>aimed at the analysed bottleneck</th></tr>\n";
  for (const auto& p : r.problems) {
    o += "<tr><td>" + esc(p.id) + "</td>";
    for (const auto& k : names) {
      auto it = p.classes.find(k);
      o += fmt::format("<td>{}</td>", it == p.classes.end() ? 0 : it->second);
    }
    o += p.planned_with_class > 0 ? fmt::format("<td>{} of {}</td>", p.aimed, p.planned_with_class) : "<td>-</td>";
    o += "</tr>\n";
  }
  return o + "</table>\n";
}

}  // namespace

std::string to_html(const CampaignReport& r) {
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>kernelpro: " + esc(r.title) +
                  "</title><style>" + kStyle + "</style></head><body>\n";
  o += "<h1>kernelpro: " + esc(r.title) + "</h1>\n";
  o += "<h2>Summary</h2>\n<table id=\"summary\"><tr><th>group</th><th>problems</th><th>correct</th><th>fast_0</th><th>fast_1</th>"
       "<th>fast_1.5</th><th>fast_2</th><th>geomean speedup</th><th>vs eager</th><th>vs torch.compile</th>"
       "<th>vs faster torch</th><th>fast_1 vs faster torch</th><th>candidates</th><th>LLM cost</th></tr>\n";
  for (const auto& g : r.groups)
    o += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.2f}</td><td>{:.2f}</td><td>{:.2f}</td><td>{:.2f}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td><td>{:.2f}</td><td>{}</td><td>${:.2f}</td></tr>\n",
        esc(g.group), g.problems, g.correct, g.fast_p[0], g.fast_p[1], g.fast_p[2], g.fast_p[3], x_or_dash(g.geomean_speedup),
        x_or_dash(g.geomean_vs_eager), x_or_dash(g.geomean_vs_compile), x_or_dash(g.geomean_vs_torch),
        g.fast_p_vs_torch[1], g.candidates, g.cost_usd);
  o += "</table>\n<p>fast_p: the share of a group's problems with a correct candidate more than p times faster than the "
       "reference timed in the same evaluation (KernelBench's definition). \"vs faster torch\" is KernelBench v3's "
       "column: against the faster of PyTorch eager and torch.compile measured on the same card; its fast_1 counts a "
       "problem without that baseline as not faster. Geomeans are over the correct problems.</p>\n";
  for (const auto& n : r.notes) o += "<p class=\"note\">Note: " + esc(n) + "</p>\n";

  o += "<h2>Speedup distribution</h2>\n";
  for (const auto& g : r.groups) {
    if (g.group == "all") continue;
    std::vector<double> sp;
    for (const auto& p : r.problems)
      if (p.group == g.group && p.correct && p.speedup > 0) sp.push_back(p.speedup);
    o += "<div><b>" + esc(g.group) + "</b><br>" + histogram_svg(g.group + " speedups", sp) + "</div>\n";
  }
  std::vector<const ProblemResult*> all;
  for (const auto& p : r.problems) all.push_back(&p);
  o += "<h2>Per problem</h2>\n<div class=\"legend\"><span><i style=\"background:#1565c0\"></i>against the reference</span>"
       "<span><i style=\"background:#f9a825\"></i>against PyTorch eager</span><span><i style=\"background:#6a1b9a\"></i>"
       "against torch.compile</span></div>\n" +
       bars_svg(all) + "\n";
  o += "<table id=\"problems\"><tr><th>problem</th><th>state</th><th>best</th><th>speedup</th><th>vs eager</th>"
       "<th>vs torch.compile</th><th>vs faster torch</th><th>speed of light</th><th>J per call</th><th>candidates</th>"
       "<th>LLM calls</th><th>tokens</th><th>cost</th><th>GPU</th></tr>\n";
  for (const auto& p : r.problems)
    o += fmt::format(
        "<tr><td><a href=\"#p-{0}\">{0}</a></td><td class=\"{1}\">{1}</td><td>{2}</td><td>{3}</td><td>{4}</td><td>{5}</td>"
        "<td>{13}</td><td>{6}</td><td>{7}</td><td>{8}</td><td>{9}</td><td>{10}</td><td>${11:.3f}</td><td>{12}</td></tr>\n",
        esc(p.id), esc(campaign::to_string(p.state)), p.correct ? format_seconds(p.best_s) : "-", x_or_dash(p.speedup),
        x_or_dash(p.vs_eager), x_or_dash(p.vs_compile),
        p.speed_of_light > 0 ? fmt::format("{:.0f}%", 100 * p.speed_of_light) : "-",
        p.joules_per_call > 0 ? fmt::format("{:.3g}", p.joules_per_call) : "-", p.candidates, p.llm_calls, p.tokens,
        p.cost_usd, esc(p.device), x_or_dash(p.vs_torch));
  o += "</table>\n";
  std::string energy;
  for (const auto& p : r.problems) {
    const auto c = energy_cells(p);
    if (!c) continue;
    energy += "<tr>";
    for (const auto& cell : *c) energy += "<td>" + esc(cell) + "</td>";
    energy += "</tr>\n";
  }
  if (!energy.empty())
    o += "<h2>Energy</h2>\n<p>The candidate each search chose under its energy objective against the fastest "
         "candidate of the same run, both measured in their own evaluations.</p>\n<table id=\"energy\"><tr><th>problem"
         "</th><th>objective</th><th>chosen</th><th>J per call</th><th>fastest</th><th>J per call</th><th>energy</th>"
         "</tr>\n" + energy + "</table>\n";
  o += classes_html(r);
  o += "<h2>Roofline</h2>\n" + roofline_svg(all) + "\n";
  o += "<h2>Search trees and diagnoses</h2>\n<div class=\"legend\">";
  for (const char* oc : {"ok", "incorrect", "rejected", "compile_error", "crash"})
    o += fmt::format("<span><i style=\"background:{}\"></i>{}</span>", outcome_colour(oc), oc);
  o += "</div>\n";
  for (const auto& p : r.problems) {
    o += fmt::format("<section id=\"p-{}\"><h3>{}</h3>\n", esc(p.id), esc(p.id));
    if (p.state == campaign::ProblemState::kFailed) o += "<p class=\"failed\">" + esc(p.error) + "</p>\n";
    o += tree_svg(p) + "\n";
    if (!p.diagnosis.empty()) {
      o += "<details open><summary>diagnosis of the best candidate</summary><ul>";
      for (const auto& d : p.diagnosis) o += "<li>" + esc(d) + "</li>";
      o += "</ul></details>\n";
    }
    if (!p.best_source.empty()) {
      auto src = read_file(p.best_source);
      if (src.ok()) o += "<details><summary>best kernel</summary><pre>" + esc(*src) + "</pre></details>\n";
    }
    o += "</section>\n";
  }
  o += "</body></html>\n";
  return o;
}

}  // namespace kp::report
