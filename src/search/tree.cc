#include "search/tree.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include <fmt/format.h>

namespace kp::search {

const char* to_string(Objective o) {
  switch (o) {
    case Objective::kTime: return "time";
    case Objective::kEnergy: return "energy";
    case Objective::kEdp: return "edp";
    case Objective::kEnergyAtMatchedTime: return "energy-at-matched-time";
  }
  return "?";
}

Result<Objective> objective_from_string(std::string_view s) {
  for (Objective o : {Objective::kTime, Objective::kEnergy, Objective::kEdp, Objective::kEnergyAtMatchedTime})
    if (s == to_string(o)) return o;
  return make_error(ErrorCode::kInvalidInput,
                    fmt::format("objective \"{}\": expected time, energy, edp or energy-at-matched-time", s));
}

const char* to_string(EdgeKind k) {
  switch (k) {
    case EdgeKind::kRoot: return "root";
    case EdgeKind::kIdea: return "idea";
    case EdgeKind::kFinding: return "finding";
    case EdgeKind::kRepair: return "repair";
    case EdgeKind::kTune: return "tune";
  }
  return "?";
}

std::optional<EdgeKind> edge_kind_from_string(std::string_view s) {
  for (EdgeKind k : {EdgeKind::kRoot, EdgeKind::kIdea, EdgeKind::kFinding, EdgeKind::kRepair, EdgeKind::kTune})
    if (s == to_string(k)) return k;
  return std::nullopt;
}

double reward(const Measurement& m, const Measurement& ref, const RewardOptions& o, double fastest) {
  if (!m.ok || m.seconds <= 0) return o.failure_penalty;
  auto clip = [&](double x) { return std::clamp(o.scale * x, -o.clip, o.clip); };
  const double time_gain = std::log(ref.seconds / m.seconds);
  // Without energy on both sides the energy objectives fall back to time.
  const bool energy = m.joules > 0 && ref.joules > 0;
  const double energy_gain = energy ? std::log(ref.joules / m.joules) : time_gain;
  switch (o.objective) {
    case Objective::kTime: return clip(time_gain);
    case Objective::kEnergy: return clip(energy_gain);
    case Objective::kEdp: return clip(energy ? time_gain + energy_gain : 2 * time_gain);
    case Objective::kEnergyAtMatchedTime: {
      const double window = (fastest > 0 ? std::min(fastest, m.seconds) : m.seconds) * (1 + o.matched_time_pct / 100);
      if (m.seconds <= window) return clip(energy_gain);
      // Outside the window: never above zero, and lower the further outside it is.
      return std::max(-o.clip, std::min(clip(energy_gain), 0.0) - o.scale * std::log(m.seconds / window));
    }
  }
  return o.failure_penalty;
}

Tree::Tree(Measurement root, Measurement reference, RewardOptions options) : reference_(reference), options_(options) {
  Node n;
  n.via = {EdgeKind::kRoot, "seed"};
  n.measured = root;
  n.reward = search::reward(root, reference_, options_, root.ok ? root.seconds : 0);
  n.visits = 1;
  n.value = n.reward;
  nodes_.push_back(std::move(n));
}

int Tree::add(int parent, Direction direction) {
  Node n;
  n.id = static_cast<int>(nodes_.size());
  n.parent = parent;
  n.depth = node(parent).depth + 1;
  if (direction.kind == EdgeKind::kRepair) ++node(parent).repairs;
  n.via = std::move(direction);
  node(parent).children.push_back(n.id);
  nodes_.push_back(std::move(n));
  return nodes_.back().id;
}

int Tree::fastest() const {
  int best = -1;
  for (const auto& n : nodes_)
    if (n.measured && n.measured->ok && (best < 0 || n.measured->seconds < nodes_[best].measured->seconds)) best = n.id;
  return best;
}

double Tree::fastest_seconds() const {
  const int f = fastest();
  return f < 0 ? 0 : node(f).measured->seconds;
}

void Tree::measure(int id, const Measurement& m) {
  Node& n = node(id);
  n.measured = m;
  last_measured_ = id;
  n.reward = search::reward(m, reference_, options_, fastest_seconds());
  for (int at = id; at >= 0; at = node(at).parent) {
    ++node(at).visits;
    node(at).value += n.reward;
  }
  if (n.parent < 0) return;
  Node& p = node(n.parent);
  p.failing_run = m.ok ? 0 : p.failing_run + 1;
  if (m.ok && p.measured && p.measured->ok) p.slower_run = m.seconds >= p.measured->seconds ? p.slower_run + 1 : 0;
}

int Tree::best() const {
  const double fastest = fastest_seconds();
  const double window = fastest * (1 + options_.matched_time_pct / 100);
  // Lower is better: (tier, the objective's figure, time).
  auto rank = [&](const Measurement& m) -> std::tuple<int, double, double> {
    const bool energy = m.joules > 0;
    switch (options_.objective) {
      case Objective::kTime: return {0, m.seconds, m.seconds};
      case Objective::kEnergy: return energy ? std::tuple{0, m.joules, m.seconds} : std::tuple{1, m.seconds, m.seconds};
      case Objective::kEdp:
        return energy ? std::tuple{0, m.joules * m.seconds, m.seconds} : std::tuple{1, m.seconds, m.seconds};
      case Objective::kEnergyAtMatchedTime:
        if (m.seconds > window) return {2, m.seconds, m.seconds};
        return energy ? std::tuple{0, m.joules, m.seconds} : std::tuple{1, m.seconds, m.seconds};
    }
    return {3, m.seconds, m.seconds};
  };
  int best = 0;
  std::optional<std::tuple<int, double, double>> best_rank;
  for (const auto& n : nodes_) {
    if (!n.measured || !n.measured->ok || n.measured->seconds <= 0) continue;
    const auto r = rank(*n.measured);
    if (!best_rank || r < *best_rank) {
      best_rank = r;
      best = n.id;
    }
  }
  return best;
}

}  // namespace kp::search
