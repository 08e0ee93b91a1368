#include "analysis/rule_tool.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include "analysis/rule_expr.h"
#include "profile/metric_lists.h"
#include "util/resource_root.h"

namespace fs = std::filesystem;

namespace kp::analysis {

const std::vector<DerivedName>& rule_derived_names() {
  static const std::vector<DerivedName> names = {
      {"kernel.duration_s", "the kernel's duration, seconds (gpu__time_duration.sum / 1e9)"},
      {"kernel.grid_blocks", "blocks in the grid (x*y*z), from the collector or the trace"},
      {"kernel.block_threads", "threads per block (x*y*z), from the collector or the trace"},
      {"kernel.threads", "kernel.grid_blocks * kernel.block_threads"},
      {"kernel.index", "the kernel's position in the call, from 0"},
      {"sass.instructions", "static SASS instruction count"},
      {"sass.local_loads", "static LDL count (spill reloads, local arrays)"},
      {"sass.local_stores", "static STL count"},
      {"sass.global_loads", "static global load count (LDG and generic LD)"},
      {"sass.global_stores", "static global store count"},
      {"sass.tensor_instructions", "static tensor-core MMA count (HMMA, HGMMA, ...)"},
      {"ptxas.registers", "registers per thread"},
      {"ptxas.shared_bytes", "static shared memory per block, bytes"},
      {"ptxas.spill_bytes", "spill stores plus spill loads, bytes"},
      {"ptxas.stack_bytes", "local stack frame per thread, bytes"},
      {"call.kernels", "kernels launched by the call"},
      {"call.seconds", "median timed call, seconds"},
      {"call.kernel_seconds", "sum of the kernels' durations, seconds"},
      {"task.ideal_bytes", "the task's ideal DRAM bytes per call"},
      {"task.ideal_flops", "the task's ideal FLOP per call"},
      {"device.sm_count", "SMs on the device (132 on the H200)"},
      {"device.l2_bytes", "L2 cache size, bytes"},
  };
  return names;
}

namespace {

bool is_derived(std::string_view name) {
  for (const auto& d : rule_derived_names())
    if (d.name == name) return true;
  return false;
}

std::optional<double> positive(double v) { return v > 0 ? std::optional<double>(v) : std::nullopt; }
std::optional<double> product(const std::array<int64_t, 3>& d) {
  double p = static_cast<double>(d[0]) * static_cast<double>(d[1]) * static_cast<double>(d[2]);
  return positive(p);
}

}  // namespace

std::optional<double> rule_value(const Evidence& e, size_t i, std::string_view name) {
  if (i >= e.kernels.size()) return std::nullopt;
  const profile::KernelMetrics& k = e.kernels[i];
  if (!name.starts_with("kernel.") && !name.starts_with("sass.") && !name.starts_with("ptxas.") &&
      !name.starts_with("call.") && !name.starts_with("task.") && !name.starts_with("device."))
    return metric(k, name);
  auto grid = [&] {
    auto g = product(k.grid);
    if (!g && e.traced(i)) g = product(e.traced(i)->grid);
    return g;
  };
  auto block = [&] {
    auto b = product(k.block);
    if (!b && e.traced(i)) b = product(e.traced(i)->block);
    return b;
  };
  if (name == "kernel.duration_s") {
    auto ns = metric(k, "gpu__time_duration.sum");
    return ns ? std::optional<double>(*ns * 1e-9) : std::nullopt;
  }
  if (name == "kernel.grid_blocks") return grid();
  if (name == "kernel.block_threads") return block();
  if (name == "kernel.threads") {
    auto g = grid(), b = block();
    return g && b ? std::optional<double>(*g * *b) : std::nullopt;
  }
  if (name == "kernel.index") return static_cast<double>(i);
  if (name == "call.kernels") return static_cast<double>(e.kernels.size());
  if (name == "call.seconds") return positive(e.call_seconds);
  if (name == "call.kernel_seconds") return positive(e.kernel_seconds());
  if (name == "task.ideal_bytes") return positive(e.ideal_bytes);
  if (name == "task.ideal_flops") return positive(e.ideal_flops);
  if (name == "device.sm_count") return positive(e.device.sm_count > 0 ? e.device.sm_count : e.ceilings.sm_count);
  if (name == "device.l2_bytes") return positive(static_cast<double>(e.device.l2_bytes));
  const profile::KernelSass* s = e.sass_for(k);
  if (!s) return std::nullopt;
  if (name.starts_with("sass.")) {
    const profile::SassSummary& ss = s->sass;
    if (name == "sass.instructions") return static_cast<double>(ss.instructions);
    if (name == "sass.local_loads") return static_cast<double>(ss.local_loads);
    if (name == "sass.local_stores") return static_cast<double>(ss.local_stores);
    if (name == "sass.global_loads") return static_cast<double>(ss.global_loads());
    if (name == "sass.global_stores") return static_cast<double>(ss.global_stores());
    if (name == "sass.tensor_instructions") return static_cast<double>(ss.tensor_instructions());
    return std::nullopt;
  }
  if (!s->resources) return std::nullopt;
  const build::KernelResources& r = *s->resources;
  if (name == "ptxas.registers") return static_cast<double>(r.registers);
  if (name == "ptxas.shared_bytes") return static_cast<double>(r.shared_bytes);
  if (name == "ptxas.spill_bytes") return static_cast<double>(r.spill_store_bytes + r.spill_load_bytes);
  if (name == "ptxas.stack_bytes") return static_cast<double>(r.stack_frame_bytes);
  return std::nullopt;
}

namespace {

// A piece of a message template: literal text, or an expression with its fmt spec.
struct TemplatePart {
  std::string literal;
  std::optional<RuleExpr> expr;
  std::string spec;  // ".1f"; "" for the default (4 significant digits)
};

struct Rule {
  ToolSpec spec;
  std::optional<RuleExpr> when;  // always set once parsed
  std::optional<RuleExpr> gain;
  Severity severity = Severity::kInfo;
  std::vector<TemplatePart> message, guidance;
  std::vector<std::string> actions;
};

std::string fill(const std::vector<TemplatePart>& parts, const NameLookup& lookup) {
  std::string out;
  for (const auto& p : parts) {
    if (!p.expr) {
      out += p.literal;
      continue;
    }
    auto v = p.expr->value(lookup);
    if (!v) out += "n/a";
    else out += fmt::format(fmt::runtime("{:" + (p.spec.empty() ? std::string(".4g") : p.spec) + "}"), *v);
  }
  return out;
}

// "%" for percentages, "B" for bytes, "s" for seconds; "" otherwise.
std::string unit_of(std::string_view name) {
  if (name.find(".pct") != std::string_view::npos) return "%";
  if (name.find("bytes") != std::string_view::npos) return "B";
  if (name.ends_with("_s") || name == "gpu__time_duration.sum") return name.ends_with("_s") ? "s" : "ns";
  return "";
}

class RuleTool final : public Tool {
 public:
  explicit RuleTool(Rule rule) : rule_(std::move(rule)) {}
  const ToolSpec& spec() const override { return rule_.spec; }

  std::vector<Finding> run(const Evidence& e) const override {
    std::vector<Finding> out;
    for (size_t i = 0; i < e.kernels.size(); ++i) {
      NameLookup lookup = [&](std::string_view n) { return rule_value(e, i, n); };
      auto fired = rule_.when->value(lookup);
      if (!fired || *fired == 0) continue;
      Finding f;
      f.tool = rule_.spec.name;
      f.kernel = e.kernels[i].name;
      f.severity = rule_.severity;
      if (rule_.gain)
        if (auto g = rule_.gain->value(lookup)) f.estimated_gain = std::max(1.0, *g);
      f.title = fill(rule_.message, lookup);
      f.guidance = fill(rule_.guidance, lookup);
      f.actions = rule_.actions;
      std::set<std::string> covered;
      for (const auto& c : rule_.when->comparisons(lookup)) {
        f.evidence.push_back(evidence(c.name, c.value, c.op, c.threshold, unit_of(c.name)));
        covered.insert(c.name);
      }
      for (const auto& n : rule_.when->names())
        if (!covered.count(n))
          if (auto v = lookup(n)) f.evidence.push_back(context(n, *v, unit_of(n)));
      out.push_back(std::move(f));
    }
    return out;
  }

 private:
  Rule rule_;
};

Error invalid(std::string_view origin, const toml::node* node, const std::string& what) {
  if (node && node->source().begin.line > 0)
    return make_error(ErrorCode::kInvalidInput, fmt::format("{}:{}: {}", origin, node->source().begin.line, what));
  return make_error(ErrorCode::kInvalidInput, fmt::format("{}: {}", origin, what));
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

struct KnownNames {
  std::set<std::string> stage1, stage2;
  KnownNames() {
    stage1.insert(profile::stage1_metrics().begin(), profile::stage1_metrics().end());
    for (const auto& f : profile::stage2_families())
      for (const auto& m : profile::stage2_metrics(f))
        if (!stage1.count(m)) stage2.insert(m);
  }
  bool known(std::string_view n) const {
    return stage1.count(std::string(n)) || stage2.count(std::string(n)) || is_derived(n);
  }
  // "unknown metric 'x' (did you mean 'y'?); known: ...".
  std::string unknown(std::string_view n) const {
    std::vector<std::string> all(stage1.begin(), stage1.end());
    all.insert(all.end(), stage2.begin(), stage2.end());
    for (const auto& d : rule_derived_names()) all.push_back(d.name);
    std::string best;
    size_t best_d = std::max<size_t>(3, n.size() / 4) + 1;
    for (const auto& a : all)
      if (size_t d = edit_distance(n, a); d < best_d) best = a, best_d = d;
    std::string msg = fmt::format("unknown metric '{}'", n);
    if (!best.empty()) msg += fmt::format(" (did you mean '{}'?)", best);
    return msg + fmt::format("; known: the stage-1 and stage-2 metrics of profile/metric_lists.h ({}) and the derived names ({})",
                             fmt::join(std::vector<std::string>(all.begin(), all.end() - rule_derived_names().size()), ", "),
                             fmt::join(std::vector<std::string>(all.end() - rule_derived_names().size(), all.end()), ", "));
  }
};

const KnownNames& known_names() {
  static const KnownNames k;
  return k;
}

class RuleParser {
 public:
  explicit RuleParser(std::string_view origin) : origin_(origin) {}

  Result<std::unique_ptr<Tool>> parse(std::string_view text) {
    toml::table root;
    try {
      root = toml::parse(text, origin_);
    } catch (const toml::parse_error& e) {
      const auto& b = e.source().begin;
      return make_error(ErrorCode::kInvalidInput, fmt::format("{}:{}: column {}: {} (not valid TOML)", origin_, b.line,
                                                              b.column, e.description()));
    }
    static const std::set<std::string> keys = {"name", "title", "about", "classes", "metrics", "when",
                                               "severity", "gain", "message", "guidance", "actions"};
    for (const auto& [k, v] : root)
      if (!keys.count(std::string(k.str())))
        return invalid(origin_, &v, fmt::format("unknown key '{}'; a rule file has: name, title, about, classes, metrics, when, severity, gain, message, guidance, actions", k.str()));
    root_ = &root;
    Rule rule{};

    KP_TRY(rule.spec.name, string_key("name", true));
    if (!std::regex_match(rule.spec.name, std::regex("[a-z][a-z0-9]*(_[a-z0-9]+)*")))
      return invalid(origin_, root.get("name"), fmt::format("name '{}' must be snake_case (lower-case letters, digits and single '_', starting with a letter), like \"store_heavy\"", rule.spec.name));
    KP_TRY(rule.spec.title, string_key("title", true));
    KP_TRY(rule.spec.about, string_key("about", true));

    KP_TRY(auto classes, list_key("classes"));
    for (const auto& [c, node] : classes) {
      auto cls = bottleneck_class_from_string(c);
      if (!cls) return invalid(origin_, node, fmt::format("[classes] unknown class '{}'; known: memory-bound, compute-bound, latency-bound, launch-bound", c));
      rule.spec.classes.push_back(*cls);
    }
    KP_TRY(auto metrics, list_key("metrics"));
    const KnownNames& known = known_names();
    for (const auto& [m, node] : metrics) {
      if (is_derived(m)) return invalid(origin_, node, fmt::format("[metrics] '{}' is a derived name, always available: leave it out of metrics", m));
      if (!known.known(m)) return invalid(origin_, node, "[metrics] " + known.unknown(m));
      if (known.stage2.count(m) && std::find(rule.spec.metrics.begin(), rule.spec.metrics.end(), m) == rule.spec.metrics.end())
        rule.spec.metrics.push_back(m);
    }

    KP_TRY(auto when, expr_key("when", true, rule.spec.metrics));
    rule.when = std::move(when);
    KP_TRY(rule.gain, expr_key("gain", false, rule.spec.metrics));

    KP_TRY(std::string severity, string_key("severity", true));
    auto sev = severity_from_string(severity);
    if (!sev) return invalid(origin_, root.get("severity"), fmt::format("severity '{}' must be info, warning or critical", severity));
    rule.severity = *sev;

    KP_TRY(rule.message, template_key("message", true, rule.spec.metrics));
    KP_TRY(rule.guidance, template_key("guidance", true, rule.spec.metrics));

    KP_TRY(auto actions, list_key("actions"));
    for (const auto& [a, node] : actions) {
      if (!is_known_action(a))
        return invalid(origin_, node, fmt::format("[actions] unknown action '{}'; known: {}", a, fmt::join(known_actions(), ", ")));
      rule.actions.push_back(a);
    }
    for (const auto& n : rule.when->names())
      if (n.starts_with("sass.") || n.starts_with("ptxas.")) rule.spec.needs_sass = true;
    return std::unique_ptr<Tool>(std::make_unique<RuleTool>(std::move(rule)));
  }

 private:
  Result<std::string> string_key(const char* key, bool required) {
    const toml::node* n = root_->get(key);
    if (!n) {
      if (required) return invalid(origin_, nullptr, fmt::format("'{}' is missing", key));
      return std::string();
    }
    auto s = n->value<std::string>();
    if (!s) return invalid(origin_, n, fmt::format("'{}' must be a string", key));
    if (required && s->empty()) return invalid(origin_, n, fmt::format("'{}' is empty", key));
    return *s;
  }

  // A list of strings with each entry's node (for its line); empty when absent.
  Result<std::vector<std::pair<std::string, const toml::node*>>> list_key(const char* key) {
    std::vector<std::pair<std::string, const toml::node*>> out;
    const toml::node* n = root_->get(key);
    if (!n) return out;
    const toml::array* arr = n->as_array();
    if (!arr) return invalid(origin_, n, fmt::format("'{}' must be a list of strings, like {} = [\"a\", \"b\"]", key, key));
    for (const auto& e : *arr) {
      auto s = e.value<std::string>();
      if (!s) return invalid(origin_, &e, fmt::format("'{}' must be a list of strings", key));
      out.emplace_back(*s, &e);
    }
    return out;
  }

  // Every name of `e` must be known, and a stage-2 metric must be in `metrics`.
  Status check_names(const RuleExpr& e, const toml::node* node, const std::string& where,
                     const std::vector<std::string>& metrics) {
    const KnownNames& known = known_names();
    for (const auto& n : e.names()) {
      if (!known.known(n)) return invalid(origin_, node, fmt::format("{} {}", where, known.unknown(n)));
      if (known.stage2.count(n) && std::find(metrics.begin(), metrics.end(), n) == metrics.end())
        return invalid(origin_, node, fmt::format("{} reads the stage-2 metric '{}': add it to metrics, else it is never collected", where, n));
    }
    return ok_status();
  }

  Result<std::optional<RuleExpr>> expr_key(const char* key, bool required, const std::vector<std::string>& metrics) {
    const toml::node* n = root_->get(key);
    KP_TRY(std::string text, string_key(key, required));
    if (!n) return std::optional<RuleExpr>();
    const std::string where = fmt::format("[{}]", key);
    auto e = RuleExpr::parse(text);
    if (!e.ok()) return invalid(origin_, n, fmt::format("{} {}", where, e.error().message));
    KP_TRY_STATUS(check_names(*e, n, where, metrics));
    return std::optional<RuleExpr>(std::move(*e));
  }

  // "text {expr:.1f} more {{literal braces}}".
  Result<std::vector<TemplatePart>> template_key(const char* key, bool required, const std::vector<std::string>& metrics) {
    KP_TRY(std::string text, string_key(key, required));
    const toml::node* node = root_->get(key);
    std::vector<TemplatePart> parts;
    std::string literal;
    for (size_t i = 0; i < text.size(); ++i) {
      char c = text[i];
      if (c == '}' ) {
        if (i + 1 < text.size() && text[i + 1] == '}') {
          literal += '}';
          ++i;
          continue;
        }
        return invalid(origin_, node, fmt::format("[{}] column {}: unmatched '}}' (write '}}}}' for a literal brace)", key, i + 1));
      }
      if (c != '{') {
        literal += c;
        continue;
      }
      if (i + 1 < text.size() && text[i + 1] == '{') {
        literal += '{';
        ++i;
        continue;
      }
      size_t close = text.find('}', i);
      if (close == std::string::npos)
        return invalid(origin_, node, fmt::format("[{}] column {}: placeholder '{{' without its '}}'", key, i + 1));
      std::string inside = text.substr(i + 1, close - i - 1);
      std::string spec;
      if (size_t colon = inside.find(':'); colon != std::string::npos) {
        spec = inside.substr(colon + 1);
        inside = inside.substr(0, colon);
      }
      const std::string where = fmt::format("[{}] placeholder '{{{}}}'", key, text.substr(i + 1, close - i - 1));
      auto e = RuleExpr::parse(inside);
      if (!e.ok()) return invalid(origin_, node, fmt::format("{}: {}", where, e.error().message));
      KP_TRY_STATUS(check_names(*e, node, where, metrics));
      if (!spec.empty()) {
        try {
          (void)fmt::format(fmt::runtime("{:" + spec + "}"), 1.0);
        } catch (const fmt::format_error&) {
          return invalid(origin_, node, fmt::format("{}: bad number format ':{}' (use e.g. :.1f, :.3g, :.2e)", where, spec));
        }
      }
      if (!literal.empty()) parts.push_back(TemplatePart{std::move(literal), std::nullopt, ""});
      literal.clear();
      parts.push_back(TemplatePart{"", std::move(*e), spec});
      i = close;
    }
    if (!literal.empty()) parts.push_back(TemplatePart{std::move(literal), std::nullopt, ""});
    return parts;
  }

  std::string origin_;
  const toml::table* root_ = nullptr;
};

}  // namespace

Result<std::unique_ptr<Tool>> parse_rule_tool(std::string_view text, std::string_view origin) {
  return RuleParser(origin).parse(text);
}

Result<std::unique_ptr<Tool>> load_rule_tool(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return make_error(ErrorCode::kIo, fmt::format("{}: cannot read the rule file", file.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_rule_tool(ss.str(), file.string());
}

Result<std::vector<std::unique_ptr<Tool>>> load_rule_tools(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return make_error(ErrorCode::kNotFound, fmt::format("{}: no such rule folder", dir.string()));
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_regular_file() && entry.path().extension() == ".toml") files.push_back(entry.path());
  if (ec) return make_error(ErrorCode::kIo, fmt::format("{}: cannot list the rule folder: {}", dir.string(), ec.message()));
  std::sort(files.begin(), files.end());
  std::vector<std::unique_ptr<Tool>> tools;
  std::set<std::string> names;
  for (const auto& f : files) {
    KP_TRY(auto tool, load_rule_tool(f));
    if (!names.insert(tool->spec().name).second)
      return make_error(ErrorCode::kInvalidInput, fmt::format("{}: name '{}' is already used by another rule file in {}",
                                                              f.string(), tool->spec().name, dir.string()));
    tools.push_back(std::move(tool));
  }
  return tools;
}

std::vector<fs::path> default_rule_dirs() {
  std::vector<fs::path> dirs = {resource_root() / "rules"};
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg) dirs.push_back(fs::path(xdg) / "kernelpro" / "rules");
  else if (const char* home = std::getenv("HOME"); home && *home) dirs.push_back(fs::path(home) / ".config" / "kernelpro" / "rules");
  return dirs;
}

}  // namespace kp::analysis
