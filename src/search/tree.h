// The search tree over kernel versions (DESIGN.md section 7): a node is a candidate with its
// measurement, an edge the direction that made it from its parent (a planner idea, a finding's
// action, a repair, a parameter tune). Rewards are in log space, so that a 2x speedup is worth
// the same wherever in the tree it is found.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace kp::search {

// What to optimise. kEnergyAtMatchedTime: the least energy among candidates within
// RewardOptions::matched_time_pct of the fastest seen so far.
enum class Objective { kTime, kEnergy, kEdp, kEnergyAtMatchedTime };
const char* to_string(Objective o);  // "time", "energy", "edp", "energy-at-matched-time"
Result<Objective> objective_from_string(std::string_view s);

// What an evaluated candidate measured; ok is false for every outcome but "ok".
struct Measurement {
  bool ok = false;
  double seconds = 0;  // median per call
  double joules = 0;   // per call; 0 when energy was not measured
};

enum class EdgeKind { kRoot, kIdea, kFinding, kRepair, kTune };
const char* to_string(EdgeKind k);  // "root", "idea", "finding", "repair", "tune": the store's node kind
std::optional<EdgeKind> edge_kind_from_string(std::string_view s);  // nullopt for any other name

struct Direction {
  EdgeKind kind = EdgeKind::kIdea;
  std::string text;  // what to change, in words (or the parameter values of a tune)
};

struct RewardOptions {
  Objective objective = Objective::kTime;
  double scale = 1.0;             // reward = scale * log(reference / candidate), then clipped
  double clip = 3.0;              // to [-clip, clip]
  double failure_penalty = -1.0;  // a failed candidate's reward
  double matched_time_pct = 5.0;  // kEnergyAtMatchedTime: "matched" is within this % of the fastest
};

// The reward of `m` against the reference's measurement. `fastest` is the best time seen so far
// (kEnergyAtMatchedTime only): a candidate slower than the match window gets at most zero, less
// the further outside it is. The energy objectives use time where either side has no energy.
double reward(const Measurement& m, const Measurement& reference, const RewardOptions& o, double fastest = 0);

struct Node {
  int id = 0;
  int parent = -1;  // -1 for the root (the seed)
  int depth = 0;
  Direction via;
  std::optional<Measurement> measured;  // empty while the candidate is in flight
  double reward = 0;
  int visits = 0;    // measurements backed up through this node, its own included
  double value = 0;  // the sum of those rewards
  std::vector<int> children;
  int repairs = 0;         // children of kind kRepair
  bool exhausted = false;  // the proposer has no further direction for it
  bool closed = false;     // a dead end: never selected again
  int failing_run = 0;     // children in a row (latest last) that failed
  int slower_run = 0;      // measured children in a row no faster than this node
  bool failed() const { return measured && !measured->ok; }
  double mean() const { return visits > 0 ? value / visits : 0.0; }
};

class Tree {
 public:
  // The root is the seed (or, with no seed, the reference), already measured.
  Tree(Measurement root, Measurement reference, RewardOptions options = {});

  // A new child of `parent` by `direction`, not yet measured. Returns its id.
  int add(int parent, Direction direction);
  // Records the child's measurement, its reward, and backs the reward up to the root.
  void measure(int id, const Measurement& m);

  const Node& node(int id) const { return nodes_.at(static_cast<size_t>(id)); }
  Node& node(int id) { return nodes_.at(static_cast<size_t>(id)); }
  size_t size() const { return nodes_.size(); }
  const Measurement& reference() const { return reference_; }
  const RewardOptions& options() const { return options_; }

  // The measured, passing node the objective ranks first (the root if none passes), ranked on the
  // measurements themselves, not on the clipped rewards: candidates far from the reference all
  // clip to the same reward, and the first of them would win. kTime: the least time; kEnergy:
  // the least energy; kEdp: the least time x energy; kEnergyAtMatchedTime: the least energy among
  // the nodes within matched_time_pct of the fastest, else the fastest. A node without energy
  // ranks after those with it under the energy objectives (by time among themselves); ties go to
  // the faster, then the older.
  int best() const;
  // The node measured last (the root before any other): the one greedy and beam repair first.
  // With children in flight (the model's pipeline) it need not be the newest node.
  int last_measured() const { return last_measured_; }
  int fastest() const;             // the passing node with the least time; -1 if none
  double fastest_seconds() const;  // of the passing nodes; 0 if none

 private:
  std::vector<Node> nodes_;
  Measurement reference_;
  RewardOptions options_;
  int last_measured_ = 0;
};

}  // namespace kp::search
