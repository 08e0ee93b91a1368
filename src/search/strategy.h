// Which node to expand next: MCTS with progressive widening, asymmetric branching, repair
// children for failing nodes and dead-end pruning; greedy and beam search behind the same
// interface, for the ablations. A strategy only decides; the caller proposes the direction
// (planner, finding, tuner), evaluates the child and records it in the tree (run_search).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "search/tree.h"

namespace kp::search {

struct Expansion {
  int parent = 0;
  bool repair = false;  // the parent failed: its child must be a repair of it
};

struct SearchOptions {
  // MCTS selection: UCT, mean reward + exploration * sqrt(ln(parent visits) / child visits).
  double exploration = 0.7;
  // Progressive widening: a node may have at most ceil(widen_c * visits^widen_alpha) children;
  // the root uses root_widen_c (asymmetric branching: diverse first implementations).
  double widen_c = 1.0;
  double widen_alpha = 0.5;
  double root_widen_c = 2.0;
  int max_repairs = 2;        // repair children a failing node may get before it is closed
  int dead_end_failures = 3;  // close a node whose last this-many children failed
  int dead_end_slower = 4;    // ... or whose last this-many children were no faster than it
  int beam_width = 3;         // beam: the nodes expanded, best first
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual const char* name() const = 0;
  // The next node to expand; empty when nothing is left (every node closed or exhausted), or,
  // with children in flight (added but not measured), when none can be expanded until they are.
  // A child in flight counts against its parent's widening, so the next pick goes elsewhere,
  // and a node that only its children in flight may open again is passed over, not closed.
  virtual std::optional<Expansion> next(Tree& tree) = 0;
};

// "mcts", "greedy" or "beam".
Result<std::unique_ptr<Strategy>> make_strategy(const std::string& name, const SearchOptions& options = {});

// The largest number of children `node` may have now.
int widening_limit(const Node& node, const SearchOptions& options);

// Dead-end pruning of `parent` once a child of it is measured: a node (never the root) whose last
// children kept failing or were no faster is closed, and so is a failing node whose repairs are
// spent without a fix (once none is in flight). run_search applies it; a loop of its own (the
// model's pipeline) calls it after each measurement.
void prune(Tree& tree, int parent, const SearchOptions& options = {});

// The loop: asks `strategy` for an expansion, `expand` for the child (it returns the direction
// and the child's measurement, or nothing when it has no direction for that parent, which marks
// the parent exhausted), records it, applies dead-end pruning and calls `after` with the new
// child's id; `budget` evaluations at most, and none once `stop` says so. Returns the number of
// children evaluated.
using ExpandFn = std::function<std::optional<std::pair<Direction, Measurement>>(const Tree&, const Expansion&)>;
struct LoopHooks {
  std::function<bool()> stop;                         // checked before each expansion
  std::function<void(const Tree&, int child)> after;  // after each recorded child
};
int run_search(Strategy& strategy, Tree& tree, const ExpandFn& expand, int budget, const SearchOptions& options = {},
               const LoopHooks& hooks = {});

}  // namespace kp::search
