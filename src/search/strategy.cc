#include "search/strategy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>

namespace kp::search {

int widening_limit(const Node& n, const SearchOptions& o) {
  const double c = n.parent < 0 ? o.root_widen_c : o.widen_c;
  return static_cast<int>(std::ceil(c * std::pow(std::max(1, n.visits), o.widen_alpha)));
}

namespace {

bool open(const Node& n) { return !n.closed && n.measured.has_value(); }

// Whether `n` can take one more child now.
std::optional<Expansion> expandable(const Node& n, const SearchOptions& o) {
  if (n.closed || n.exhausted || !n.measured) return std::nullopt;
  if (n.failed()) {
    if (n.repairs < o.max_repairs) return Expansion{n.id, true};
    return std::nullopt;
  }
  if (static_cast<int>(n.children.size()) < widening_limit(n, o)) return Expansion{n.id, false};
  return std::nullopt;
}

class Mcts final : public Strategy {
 public:
  explicit Mcts(SearchOptions o) : o_(o) {}
  const char* name() const override { return "mcts"; }

  std::optional<Expansion> next(Tree& tree) override {
    std::vector<bool> waiting(tree.size(), false);  // nodes that only children in flight may open again
    for (;;) {
      if (tree.node(0).closed) return std::nullopt;
      int id = 0;
      for (;;) {
        Node& n = tree.node(id);
        if (auto e = expandable(n, o_)) return e;
        // Descend to the best open child by UCT.
        int pick = -1;
        double best = -std::numeric_limits<double>::infinity();
        for (int c : n.children) {
          const Node& ch = tree.node(c);
          if (!open(ch) || waiting[static_cast<size_t>(c)]) continue;
          const double u =
              ch.mean() + o_.exploration * std::sqrt(std::log(std::max(1, n.visits)) / std::max(1, ch.visits));
          if (u > best) {
            best = u;
            pick = c;
          }
        }
        if (pick >= 0) {
          id = pick;
          continue;
        }
        // No open child. A passing, unexhausted node widens past its limit rather than stop;
        // any other node is a dead end.
        if (!n.exhausted && !n.failed() && n.measured) return Expansion{n.id, false};
        // Children in flight may open it again: passed over in this selection, not closed.
        bool in_flight = false;
        for (int c : n.children) in_flight = in_flight || !tree.node(c).measured;
        if (in_flight) {
          if (id == 0) return std::nullopt;
          waiting[static_cast<size_t>(id)] = true;
          break;
        }
        n.closed = true;
        break;  // and select again from the root
      }
    }
  }

 private:
  SearchOptions o_;
};

// Expands the best passing node that can take a child (failing nodes get their repairs first,
// as a person fixing a build error would).
class Greedy final : public Strategy {
 public:
  explicit Greedy(SearchOptions o) : o_(o) {}
  const char* name() const override { return "greedy"; }
  std::optional<Expansion> next(Tree& tree) override {
    const Node& last = tree.node(tree.last_measured());
    if (last.failed() && !last.closed && last.repairs < o_.max_repairs) return Expansion{last.id, true};
    std::vector<int> order = ranked(tree);
    for (int id : order) {
      const Node& n = tree.node(id);
      if (!n.closed && !n.exhausted) return Expansion{id, false};
    }
    return std::nullopt;
  }
  static std::vector<int> ranked(const Tree& tree) {
    std::vector<int> ids;
    for (size_t i = 0; i < tree.size(); ++i)
      if (tree.node(static_cast<int>(i)).measured && tree.node(static_cast<int>(i)).measured->ok)
        ids.push_back(static_cast<int>(i));
    std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) { return tree.node(a).reward > tree.node(b).reward; });
    return ids;
  }

 private:
  SearchOptions o_;
};

// The beam_width best passing nodes are the frontier; the one of them with the fewest children
// is expanded next (ties: the better one), so each gets its share before the beam moves on.
class Beam final : public Strategy {
 public:
  explicit Beam(SearchOptions o) : o_(o) {}
  const char* name() const override { return "beam"; }
  std::optional<Expansion> next(Tree& tree) override {
    const Node& last = tree.node(tree.last_measured());
    if (last.failed() && !last.closed && last.repairs < o_.max_repairs) return Expansion{last.id, true};
    std::vector<int> frontier;
    for (int id : Greedy::ranked(tree)) {
      const Node& n = tree.node(id);
      if (n.closed || n.exhausted) continue;
      frontier.push_back(id);
      if (static_cast<int>(frontier.size()) == std::max(1, o_.beam_width)) break;
    }
    if (frontier.empty()) return std::nullopt;
    int pick = frontier[0];
    for (int id : frontier)
      if (tree.node(id).children.size() < tree.node(pick).children.size()) pick = id;
    return Expansion{pick, false};
  }

 private:
  SearchOptions o_;
};

}  // namespace

Result<std::unique_ptr<Strategy>> make_strategy(const std::string& name, const SearchOptions& o) {
  if (name == "mcts") return std::unique_ptr<Strategy>(new Mcts(o));
  if (name == "greedy") return std::unique_ptr<Strategy>(new Greedy(o));
  if (name == "beam") return std::unique_ptr<Strategy>(new Beam(o));
  return make_error(ErrorCode::kInvalidInput, fmt::format("search \"{}\": expected mcts, greedy or beam", name));
}

void prune(Tree& tree, int parent, const SearchOptions& o) {
  Node& p = tree.node(parent);
  // Never the root: closing it ends the search.
  if (p.parent >= 0 && (p.failing_run >= o.dead_end_failures || p.slower_run >= o.dead_end_slower)) p.closed = true;
  if (p.failed() && p.repairs >= o.max_repairs) {
    bool fixed = false;
    for (int c : p.children) fixed = fixed || (tree.node(c).measured && tree.node(c).measured->ok);
    // Repairs still in flight may yet fix it.
    bool waiting = false;
    for (int c : p.children) waiting = waiting || !tree.node(c).measured;
    if (!fixed && !waiting) p.closed = true;
  }
}

int run_search(Strategy& strategy, Tree& tree, const ExpandFn& expand, int budget, const SearchOptions& o,
               const LoopHooks& hooks) {
  int evaluated = 0;
  while (evaluated < budget && !(hooks.stop && hooks.stop())) {
    auto e = strategy.next(tree);
    if (!e) break;
    auto child = expand(tree, *e);
    Node& parent = tree.node(e->parent);
    if (!child) {
      parent.exhausted = true;
      continue;
    }
    Direction d = std::move(child->first);
    if (e->repair) d.kind = EdgeKind::kRepair;
    const int id = tree.add(e->parent, std::move(d));
    tree.measure(id, child->second);
    ++evaluated;
    prune(tree, e->parent, o);
    if (hooks.after) hooks.after(tree, id);
  }
  return evaluated;
}

}  // namespace kp::search
