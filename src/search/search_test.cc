// The search on synthetic landscapes: each node's path from the root ("/1/0") names a point
// whose time (or failure) a table or a formula gives, and the expander proposes a parent's
// children in order until the landscape has no more. Deterministic: no randomness anywhere.
#include <cmath>
#include <functional>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "search/strategy.h"

namespace kp::search {
namespace {

// seconds < 0: the candidate fails; nullopt: the parent has no such child.
using Landscape = std::function<std::optional<double>(const std::string& path, int depth)>;

struct Searched {
  Tree tree;
  std::map<int, std::string> paths{{0, ""}};
  int evaluated = 0;
};

Searched search(const std::string& strategy, const Landscape& land, int budget, SearchOptions o = {}) {
  Searched r{Tree({true, 1.0, 0}, {true, 1.0, 0}), {{0, ""}}, 0};
  auto s = make_strategy(strategy, o);
  EXPECT_TRUE(s.ok());
  auto expand = [&](const Tree& t, const Expansion& e) -> std::optional<std::pair<Direction, Measurement>> {
    const std::string path = r.paths[e.parent] + "/" + std::to_string(t.node(e.parent).children.size());
    auto secs = land(path, t.node(e.parent).depth + 1);
    if (!secs) return std::nullopt;
    r.paths[static_cast<int>(t.size())] = path;
    return std::make_pair(Direction{EdgeKind::kIdea, path}, Measurement{*secs > 0, *secs > 0 ? *secs : 0, 0});
  };
  r.evaluated = run_search(**s, r.tree, expand, budget, o);
  return r;
}

double best_seconds(const Searched& r) { return r.tree.node(r.tree.best()).measured->seconds; }

// The first move that looks best (/0, 0.80 s) leads onto a plateau where nothing is faster; the
// one that looks worse (/1, 0.95 s) leads down a chain to 0.30 s.
std::optional<double> deceptive(const std::string& p, int depth) {
  static const std::map<std::string, double> table = {{"/0", 0.80},   {"/1", 0.95},     {"/2", 1.05},      {"/3", 1.10},
                                                      {"/1/0", 0.70}, {"/1/0/0", 0.50}, {"/1/0/0/0", 0.30}};
  if (auto it = table.find(p); it != table.end()) return it->second;
  if (depth > 4) return std::nullopt;
  const int last = p.back() - '0';
  if (last >= 6) return std::nullopt;                                                  // six children a node
  if (p.rfind("/0/", 0) == 0) return 0.82 + 0.01 * (std::hash<std::string>{}(p) % 8);  // the plateau
  if (p.rfind("/1/", 0) == 0) return 1.0;                                              // off B's chain: slower
  return std::nullopt;
}

TEST(Search, MctsFindsTheOptimumOfADeceptiveLandscapeThatGreedyMisses) {
  Searched mcts = search("mcts", deceptive, 40);
  Searched greedy = search("greedy", deceptive, 40);
  EXPECT_DOUBLE_EQ(best_seconds(mcts), 0.30) << mcts.evaluated << " evaluated";
  EXPECT_GE(best_seconds(greedy), 0.80);
  EXPECT_EQ(greedy.evaluated, 40);
  // The plateau's root was closed as a dead end: its children kept being no faster.
  int a = -1;
  for (const auto& [id, path] : mcts.paths)
    if (path == "/0") a = id;
  ASSERT_GE(a, 0);
  EXPECT_TRUE(mcts.tree.node(a).closed);
  EXPECT_LE(static_cast<int>(mcts.tree.node(a).children.size()), SearchOptions{}.dead_end_slower);
  // Without exploration, pruning and a wide root, the same MCTS is as short-sighted as greedy.
  SearchOptions blind;
  blind.exploration = 0;
  blind.dead_end_slower = 1000;
  blind.root_widen_c = 1;
  EXPECT_GE(best_seconds(search("mcts", deceptive, 40, blind)), 0.80);
}

TEST(Search, ProgressiveWideningIsWideAtTheRootAndNarrowDeeper) {
  // Every child 2% faster than its parent: nothing fails, nothing is pruned.
  Landscape better = [](const std::string& p, int depth) -> std::optional<double> {
    if (depth > 6) return std::nullopt;
    return std::pow(0.98, depth) * (1 + 0.001 * (p.back() - '0'));
  };
  SearchOptions o;
  Searched r = search("mcts", better, 60, o);
  EXPECT_EQ(r.evaluated, 60);
  size_t deeper_max = 0;
  for (size_t i = 0; i < r.tree.size(); ++i) {
    const Node& n = r.tree.node(static_cast<int>(i));
    EXPECT_LE(static_cast<int>(n.children.size()), widening_limit(n, o))
        << "node " << i << " with " << n.visits << " visits";
    if (n.parent >= 0) deeper_max = std::max(deeper_max, n.children.size());
  }
  EXPECT_GT(r.tree.node(0).children.size(), deeper_max) << "the root is the widest";
  EXPECT_EQ(widening_limit(r.tree.node(0), o), static_cast<int>(std::ceil(2.0 * std::sqrt(r.tree.node(0).visits))));
}

TEST(Search, FailingNodesGetRepairChildrenAndDeadEndsAreClosed) {
  // /0 fails; its first repair fails too, the second passes at 0.5 s. /1 passes, and its
  // children all fail: it is closed after three.
  Landscape land = [](const std::string& p, int) -> std::optional<double> {
    static const std::map<std::string, double> t = {{"/0", -1},   {"/0/0", -1}, {"/0/1", 0.5}, {"/1", 0.9},
                                                    {"/1/0", -1}, {"/1/1", -1}, {"/1/2", -1},  {"/1/3", 0.1}};
    if (auto it = t.find(p); it != t.end()) return it->second;
    return std::nullopt;
  };
  Searched r = search("mcts", land, 30);
  std::map<std::string, int> id;
  for (const auto& [i, p] : r.paths) id[p] = i;
  ASSERT_TRUE(id.count("/0/1"));
  EXPECT_EQ(r.tree.node(id["/0/0"]).via.kind, EdgeKind::kRepair);
  EXPECT_EQ(r.tree.node(id["/0/1"]).via.kind, EdgeKind::kRepair);
  EXPECT_EQ(r.tree.node(id["/0"]).repairs, 2);
  EXPECT_DOUBLE_EQ(best_seconds(r), 0.5);
  EXPECT_TRUE(r.tree.node(id["/1"]).closed) << "three failing children in a row";
  EXPECT_FALSE(id.count("/1/3")) << "a closed node is not expanded again";
  EXPECT_DOUBLE_EQ(r.tree.node(id["/0/0"]).reward, RewardOptions{}.failure_penalty);
}

TEST(Search, BeamExpandsItsFrontierInTurn) {
  Landscape flat = [](const std::string& p, int depth) -> std::optional<double> {
    if (depth > 3 || p.back() - '0' >= 4) return std::nullopt;
    return 0.9 - 0.01 * depth - 0.001 * (p.back() - '0');
  };
  SearchOptions o;
  o.beam_width = 2;
  Searched r = search("beam", flat, 12, o);
  EXPECT_EQ(r.evaluated, 12);
  EXPECT_LT(best_seconds(r), 0.88) << "it went at least two levels down";
  EXPECT_FALSE(make_strategy("annealing").ok());
}

TEST(Search, RewardsAreClippedLogGainsUnderEachObjective) {
  const Measurement ref{true, 2.0, 10.0};
  RewardOptions o;
  EXPECT_NEAR(reward({true, 1.0, 10.0}, ref, o), std::log(2.0), 1e-12);
  EXPECT_DOUBLE_EQ(reward({true, 1e-6, 1.0}, ref, o), 3.0) << "clipped";
  EXPECT_DOUBLE_EQ(reward({false, 0, 0}, ref, o), -1.0);
  o.objective = Objective::kEnergy;
  EXPECT_NEAR(reward({true, 2.0, 5.0}, ref, o), std::log(2.0), 1e-12);
  EXPECT_NEAR(reward({true, 1.0, 0.0}, ref, o), std::log(2.0), 1e-12) << "no energy: time";
  o.objective = Objective::kEdp;
  EXPECT_NEAR(reward({true, 1.0, 5.0}, ref, o), std::log(4.0), 1e-12);
  o.objective = Objective::kEnergyAtMatchedTime;
  // Fastest 1.0 s: a 1.04 s candidate is matched (its energy counts), a 1.5 s one is not.
  EXPECT_NEAR(reward({true, 1.04, 2.5}, ref, o, 1.0), std::log(4.0), 1e-12);
  EXPECT_LT(reward({true, 1.5, 1.0}, ref, o, 1.0), 0.0);
  EXPECT_EQ(objective_from_string("edp").value(), Objective::kEdp);
  EXPECT_FALSE(objective_from_string("speed").ok());
}

// The H100 campaign of 2026-12-07: gemm_bf16's tuner points were all 80x slower than cuBLAS, so
// their rewards clipped to the same -3 and the seed (16.5 ms, 8.0 J) was written as the best over
// a point that was faster and cheaper (15.3 ms, 6.5 J). The best is ranked on the measurements.
TEST(Search, TheBestIsRankedOnTheMeasurementsNotOnClippedRewards) {
  const Measurement ref{true, 0.000189, 0};  // no reference energy: the rewards fall back to time
  for (Objective obj : {Objective::kTime, Objective::kEnergy, Objective::kEdp, Objective::kEnergyAtMatchedTime}) {
    RewardOptions o;
    o.objective = obj;
    Tree t({true, 0.0165, 8.04}, ref, o);
    const int slow = t.add(0, {EdgeKind::kTune, "TILE=8"});
    t.measure(slow, {true, 0.0264, 13.7});
    const int fast = t.add(0, {EdgeKind::kTune, "TILE=32"});
    t.measure(fast, {true, 0.0153, 6.47});
    EXPECT_DOUBLE_EQ(t.node(0).reward, t.node(fast).reward) << "both clipped";
    EXPECT_EQ(t.best(), fast) << to_string(obj);
  }
  // Energy at matched time: the frugal one within 5% of the fastest wins; one outside does not.
  RewardOptions o;
  o.objective = Objective::kEnergyAtMatchedTime;
  Tree t({true, 1.0, 10.0}, {true, 2.0, 20.0}, o);
  const int frugal = t.add(0, {EdgeKind::kIdea, "fewer registers"});
  t.measure(frugal, {true, 1.04, 8.0});
  const int slow_frugal = t.add(0, {EdgeKind::kIdea, "half the SMs"});
  t.measure(slow_frugal, {true, 1.5, 4.0});
  EXPECT_EQ(t.best(), frugal);
  o.objective = Objective::kEnergy;
  Tree e({true, 1.0, 10.0}, {true, 2.0, 20.0}, o);
  e.measure(e.add(0, {EdgeKind::kIdea, "a"}), {true, 1.04, 8.0});
  const int least = e.add(0, {EdgeKind::kIdea, "b"});
  e.measure(least, {true, 1.5, 4.0});
  EXPECT_EQ(e.best(), least);
  o.objective = Objective::kTime;
  Tree tm({true, 1.0, 10.0}, {true, 2.0, 20.0}, o);
  tm.measure(tm.add(0, {EdgeKind::kIdea, "c"}), {false, 0, 0});
  EXPECT_EQ(tm.best(), 0) << "the root when nothing else passes";
}

}  // namespace
}  // namespace kp::search

namespace kp::search {
namespace {

// Children in flight (added, not yet measured), as the model's pipeline makes them.
TEST(Search, AChildInFlightCountsAgainstWideningAndARepairInFlightKeepsItsNodeOpen) {
  SearchOptions o;
  auto mcts = make_strategy("mcts", o).value();
  Tree t({true, 1.0, 0}, {true, 1.0, 0});
  // The root may have ceil(2 * 1^0.5) = 2 children: two in flight fill it, and a third pick,
  // finding no measured child to descend to, widens the root rather than wait.
  EXPECT_EQ(mcts->next(t)->parent, 0);
  t.add(0, {EdgeKind::kIdea, ""});
  EXPECT_EQ(mcts->next(t)->parent, 0);
  t.add(0, {EdgeKind::kIdea, ""});
  EXPECT_EQ(mcts->next(t)->parent, 0);

  // With a narrow root (ceil(0.5 * 2^0.5) = 1 child), a failing child is the only way down.
  o.root_widen_c = 0.5;
  auto narrow = make_strategy("mcts", o).value();
  Tree n({true, 1.0, 0}, {true, 1.0, 0});
  const int f = n.add(0, {EdgeKind::kIdea, "f"});
  n.measure(f, {false, 0, 0});
  prune(n, 0, o);
  for (int i = 0; i < 2; ++i) {  // its two repairs, both in flight
    auto e = narrow->next(n);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->parent, f);
    EXPECT_TRUE(e->repair);
    n.add(f, {EdgeKind::kRepair, "r"});
  }
  // Its repairs spent and in flight, it is passed over (the root widens), not closed ...
  auto e = narrow->next(n);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->parent, 0);
  EXPECT_FALSE(n.node(f).closed);
  // ... until they are measured: one failing leaves it open, both failing close it.
  n.measure(2, {false, 0, 0});
  prune(n, f, o);
  EXPECT_FALSE(n.node(f).closed);
  n.measure(3, {false, 0, 0});
  prune(n, f, o);
  EXPECT_TRUE(n.node(f).closed);

  // Greedy repairs the node measured last, whatever was added since.
  auto greedy = make_strategy("greedy", o).value();
  Tree g({true, 1.0, 0}, {true, 1.0, 0});
  const int c = g.add(0, {EdgeKind::kIdea, ""});
  g.add(0, {EdgeKind::kIdea, ""});
  g.measure(c, {false, 0, 0});
  EXPECT_EQ(g.last_measured(), c);
  auto ge = greedy->next(g);
  ASSERT_TRUE(ge);
  EXPECT_EQ(ge->parent, c);
  EXPECT_TRUE(ge->repair);
}

TEST(Search, EdgeKindsRoundTripThroughTheirStoredNames) {
  for (EdgeKind k : {EdgeKind::kRoot, EdgeKind::kIdea, EdgeKind::kFinding, EdgeKind::kRepair, EdgeKind::kTune})
    EXPECT_EQ(edge_kind_from_string(to_string(k)), k) << to_string(k);
  EXPECT_STREQ(to_string(EdgeKind::kRepair), "repair") << "the run store keeps this name";
  EXPECT_EQ(edge_kind_from_string("Repair"), std::nullopt);
  EXPECT_EQ(edge_kind_from_string(""), std::nullopt);
}

}  // namespace
}  // namespace kp::search
