// `kernelpro bench report CAMPAIGN` and `kernelpro report RUN_DIR`: the numbers of the field, read
// from the campaign's ledger, each problem's run store, and the PyTorch baselines measured on the
// same GPU model. Printers: text for the terminal, JSON and CSV for scripts, and one
// self-contained HTML page (inline SVG, no script, no network) for people.
//
// Definitions:
//   speedup      the reference's time over the best candidate's, both timed in the candidate's
//                own evaluation (KernelBench: the problem's Model, i.e. PyTorch eager)
//   vs eager / vs compile   `kernelpro baseline`'s median time of PyTorch eager / torch.compile
//                over the best candidate's; only from a baseline measured on the card the
//                candidate was timed on (never mixed across cards)
//   vs torch     KernelBench v3's column: the faster of eager and torch.compile (of those measured
//                on the card) over the best candidate's; its fast_p counts every problem of the
//                group, a problem with no baseline as not faster
//   fast_p       KernelBench's: the fraction of the group's problems (every problem listed, run
//                or not) with a correct candidate more than p times faster than the reference;
//                fast_0 is the correctness rate
//   geomean      of the speedups of the problems with a correct candidate
//   speed of light   the physics floor (ideal bytes over measured DRAM bandwidth, or ideal FLOPs
//                over the peak) over the best time: 1.0 is the roofline
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "campaign/ledger.h"
#include "util/result.h"

namespace kp::report {

inline constexpr double kFastP[] = {0.0, 1.0, 1.5, 2.0};

struct TreeNode {
  int64_t id = 0, parent = -1;
  std::string outcome;  // the verdict's outcome; "" while not measured
  double seconds = 0;   // 0 unless ok
  std::string direction;
  bool on_best_path = false;
};

struct ProblemResult {
  std::string id, kind, group;  // group: "level1", "native"
  // The ledger's; for one run folder (`kernelpro report RUN_DIR`), kDone once a candidate was
  // evaluated, else kPending.
  campaign::ProblemState state = campaign::ProblemState::kPending;
  int level = 0;
  std::string error;                    // the ledger's, for failed problems
  bool correct = false;                 // a candidate passed every check
  double best_s = 0, reference_s = 0, speedup = 0;
  double eager_s = 0, compile_s = 0, vs_eager = 0, vs_compile = 0;  // 0: no baseline on this card
  double torch_s = 0, vs_torch = 0;  // the faster of eager_s and compile_s (those measured), over best_s
  double floor_s = 0, speed_of_light = 0;
  double joules_per_call = 0;  // of the fastest correct candidate (best_s)
  // The search's objective (best.json) and, under an energy objective, the candidate it chose:
  // its time and J per call against the fastest candidate's joules_per_call. chosen_s == 0: the
  // run wrote no best.json (or chose by time, when the chosen one is the fastest).
  std::string objective = "time";
  double chosen_s = 0, chosen_joules = 0;
  double achieved_flops = 0, achieved_bytes = 0;  // per second, of the best candidate
  int candidates = 0, ok_candidates = 0;
  int64_t llm_calls = 0, tokens = 0;
  double cost_usd = 0;
  std::string device;       // the card the best candidate was timed on
  std::string best_source;  // best.cu, when the run wrote one
  std::vector<std::string> diagnosis;  // the best candidate's findings, "tool: text"
  std::vector<TreeNode> tree;
  // Where the candidates went (report/transcripts.h): by class, "correct" split against PyTorch
  // for a KernelBench problem; and how many children planned from an analysed parent aimed at its
  // bottleneck class.
  std::map<std::string, int> classes;
  std::vector<double> correct_s;
  int planned_with_class = 0, aimed = 0;
};

struct GroupSummary {
  std::string group;
  int problems = 0, correct = 0;
  double fast_p[4] = {0, 0, 0, 0};  // for kFastP
  double geomean_speedup = 0;       // 0: no correct problem
  double geomean_vs_eager = 0, geomean_vs_compile = 0;
  int with_eager = 0, with_compile = 0;
  double fast_p_vs_torch[4] = {0, 0, 0, 0};  // for kFastP, against the faster of eager and compile
  double geomean_vs_torch = 0;
  int with_torch = 0;
  double correctness_rate = 0;
  int candidates = 0;
  double cost_usd = 0;
  std::map<std::string, int> classes;  // summed over the group's problems
  int planned_with_class = 0, aimed = 0;
};

struct CampaignReport {
  std::string title;  // the campaign or run folder
  std::vector<ProblemResult> problems;
  std::vector<GroupSummary> groups;  // by group name; "all" last when there is more than one
  std::vector<std::string> notes;    // e.g. a baseline left out because it was measured on another card
};

// The chosen candidate's energy against the fastest one's, as a fraction (-0.116: 11.6% fewer J
// per call; 0 when the objective chose the fastest); nullopt when either was not measured or the
// run chose by time.
std::optional<double> energy_change(const ProblemResult& p);

// A run folder (store.db) as one problem's result. `id`/`kind` name it in the report.
Result<ProblemResult> read_run(const std::filesystem::path& run_dir, const std::string& id, const std::string& kind,
                               int level);

// The whole campaign. `baselines`: more folders to look for kernelpro_baseline.json in (besides
// CAMPAIGN/baselines/*), e.g. bench/baselines/h200.
Result<CampaignReport> campaign_report(const std::filesystem::path& campaign_dir,
                                       const std::vector<std::filesystem::path>& baselines = {});

// Fills `groups` from `problems` (exposed for tests).
void summarize(CampaignReport& r);

nlohmann::json to_json(const CampaignReport& r);
std::string to_csv(const CampaignReport& r);   // one line per problem, a header first
std::string to_text(const CampaignReport& r);  // the groups' table, then the problems'
std::string to_html(const CampaignReport& r);  // a self-contained page

}  // namespace kp::report
