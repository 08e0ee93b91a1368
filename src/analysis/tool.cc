#include "analysis/tool.h"

#include <algorithm>
#include <cmath>

namespace kp::analysis {

const char* to_string(Severity s) {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kCritical: return "critical";
  }
  return "info";
}

std::optional<Severity> severity_from_string(std::string_view s) {
  for (Severity v : {Severity::kInfo, Severity::kWarning, Severity::kCritical})
    if (s == to_string(v)) return v;
  return std::nullopt;
}

const std::vector<std::string>& known_actions() {
  static const std::vector<std::string> actions = [] {
    std::vector<std::string> a = {
        "avoid_atomics",         // privatise, reduce in registers or shared memory first
        "avoid_bank_conflicts",  // pad or swizzle shared-memory tiles
        "avoid_fp64",            // single-precision literals and math functions
        "coalesce",              // adjacent threads touch adjacent addresses
        "fuse",                  // one kernel instead of several passes over memory
        "increase_ilp",          // independent work per thread: unroll, several accumulators
        "increase_occupancy",    // more resident warps per SM
        "increase_parallelism",  // more blocks or threads: fill every SM
        "fewer_barriers",        // fewer __syncthreads, warp-level primitives
        "fewer_launches",        // batch, fuse or capture in a CUDA graph
        "remove_copies",         // no host-device copies inside the timed call
        "remove_fences",         // fence once where ordering is needed, release/acquire flags
        "reduce_divergence",     // uniform control flow within a warp
        "reduce_registers",      // fewer live values, __launch_bounds__, smaller tiles
        "reduce_shared_memory",  // smaller tiles or fewer stages
        "reduce_special_functions",  // fewer MUFU (exp, rcp, sqrt): algebra, tables, fast math
        "reuse_data",            // tile through shared memory or registers: fewer DRAM bytes
        "tile_for_l2",           // block order and tile size that keep the working set in L2
        "tune_block_size",       // threads per block that divide the work into full waves
        "use_async_copy",        // cp.async or TMA: overlap loads with compute
        "use_tensor_cores",      // mma.sync / wgmma for the matrix arithmetic
        "use_wgmma_tma",         // Hopper's warpgroup MMA and tensor memory accelerator
        "vectorize_loads",       // 128-bit loads and stores (float4, int4)
    };
    std::sort(a.begin(), a.end());
    return a;
  }();
  return actions;
}

bool is_known_action(std::string_view tag) {
  const auto& a = known_actions();
  return std::binary_search(a.begin(), a.end(), tag);
}

namespace {

// The function name without parameters, return type, namespaces or template arguments:
// "(anonymous namespace)::gelu_seed(float const*, float*, long)" -> "gelu_seed".
std::string base_name(std::string_view full) {
  size_t paren = full.find('(');
  // "(anonymous namespace)::x(...)": the first '(' opens the namespace, not the parameters.
  while (paren != std::string_view::npos && full.substr(paren).rfind("(anonymous namespace)", 0) == 0)
    paren = full.find('(', paren + 1);
  std::string_view head = full.substr(0, paren);
  int depth = 0;
  std::string out;
  for (char c : head) {
    if (c == '<') ++depth;
    else if (c == '>') --depth;
    else if (depth == 0) out += c;
  }
  size_t colon = out.rfind("::");
  if (colon != std::string::npos) out = out.substr(colon + 2);
  size_t space = out.rfind(' ');
  if (space != std::string::npos) out = out.substr(space + 1);
  return out;
}

}  // namespace

const profile::KernelSass* Evidence::sass_for(const profile::KernelMetrics& k) const {
  for (const auto& s : sass)
    if (s.name == k.name || s.mangled_name == k.name) return &s;
  const std::string want = base_name(k.name);
  const profile::KernelSass* found = nullptr;
  int matches = 0;
  for (const auto& s : sass)
    if (!want.empty() && base_name(s.name) == want) {
      found = &s;
      ++matches;
    }
  if (matches == 1) return found;
  if (sass.size() == 1 && kernels.size() == 1) return &sass.front();
  return nullptr;
}

const profile::TraceKernel* Evidence::traced(size_t i) const {
  if (!trace || trace->kernels.size() != kernels.size() + static_cast<size_t>(unprofiled_launches) ||
      i >= kernels.size())
    return nullptr;
  return &trace->kernels[i];
}

namespace {

int64_t product(const std::array<int64_t, 3>& d) { return d[0] * std::max<int64_t>(d[1], 1) * std::max<int64_t>(d[2], 1); }

}  // namespace

int64_t Evidence::block_threads(size_t i) const {
  int64_t n = i < kernels.size() ? product(kernels[i].block) : 0;
  if (n <= 0)
    if (const profile::TraceKernel* tk = traced(i)) n = product(tk->block);
  return n;
}

int64_t Evidence::grid_blocks(size_t i) const {
  int64_t n = i < kernels.size() ? product(kernels[i].grid) : 0;
  if (n <= 0)
    if (const profile::TraceKernel* tk = traced(i)) n = product(tk->grid);
  return n;
}

double Evidence::kernel_seconds() const {
  double s = 0;
  for (const auto& k : kernels) s += k.get_or("gpu__time_duration.sum", 0) * 1e-9;
  return s;
}

bool Tool::wanted(const Evidence& stage1) const {
  const auto& classes = spec().classes;
  if (classes.empty()) return true;
  if (!stage1.roofline) return false;
  return std::find(classes.begin(), classes.end(), stage1.roofline->cls) != classes.end();
}

std::optional<double> metric(const profile::KernelMetrics& k, std::string_view name) {
  auto v = k.get(name);
  if (!v || !std::isfinite(*v)) return std::nullopt;
  return v;
}

EvidenceItem evidence(std::string metric, double value, std::string op, double threshold, std::string unit) {
  return EvidenceItem{std::move(metric), value, std::move(op), threshold, std::move(unit)};
}

EvidenceItem context(std::string metric, double value, std::string unit) {
  return EvidenceItem{std::move(metric), value, "", 0, std::move(unit)};
}

nlohmann::json to_json(const EvidenceItem& e) {
  nlohmann::json j = {{"metric", e.metric}, {"value", e.value}};
  if (!e.op.empty()) {
    j["op"] = e.op;
    j["threshold"] = e.threshold;
  }
  if (!e.unit.empty()) j["unit"] = e.unit;
  return j;
}

nlohmann::json to_json(const Finding& f) {
  nlohmann::json ev = nlohmann::json::array();
  for (const auto& e : f.evidence) ev.push_back(to_json(e));
  return {{"tool", f.tool},         {"kernel", f.kernel},     {"severity", to_string(f.severity)},
          {"estimated_gain", f.estimated_gain}, {"title", f.title}, {"evidence", ev},
          {"guidance", f.guidance}, {"actions", f.actions}};
}

nlohmann::json to_json(const ToolSpec& s) {
  nlohmann::json classes = nlohmann::json::array();
  for (auto c : s.classes) classes.push_back(to_string(c));
  return {{"name", s.name},          {"title", s.title},          {"about", s.about},
          {"classes", classes},      {"metrics", s.metrics},      {"needs_sass", s.needs_sass},
          {"needs_trace", s.needs_trace}};
}

}  // namespace kp::analysis
