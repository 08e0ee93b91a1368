#include "analysis/rule_tool.h"

#include <filesystem>
#include <fstream>
#include <map>

#include <unistd.h>

#include <gtest/gtest.h>

#include "analysis/rule_expr.h"

namespace kp::analysis {
namespace {

namespace fs = std::filesystem;

NameLookup table(std::map<std::string, double> values) {
  return [values = std::move(values)](std::string_view n) -> std::optional<double> {
    auto it = values.find(std::string(n));
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

double eval(std::string_view text, std::map<std::string, double> values = {}) {
  auto e = RuleExpr::parse(text);
  EXPECT_TRUE(e.ok()) << text << ": " << (e.ok() ? "" : e.error().message);
  if (!e.ok()) return -12345;
  auto v = e->value(table(std::move(values)));
  EXPECT_TRUE(v.has_value()) << text;
  return v.value_or(-12345);
}

std::string parse_error(std::string_view text) {
  auto e = RuleExpr::parse(text);
  EXPECT_FALSE(e.ok()) << text;
  return e.ok() ? "" : e.error().message;
}

TEST(RuleExpr, PrecedenceAndNumbers) {
  EXPECT_DOUBLE_EQ(eval("1 + 2 * 3"), 7);
  EXPECT_DOUBLE_EQ(eval("(1 + 2) * 3"), 9);
  EXPECT_DOUBLE_EQ(eval("10 - 4 - 3"), 3);  // left-associative
  EXPECT_DOUBLE_EQ(eval("12 / 3 / 2"), 2);
  EXPECT_DOUBLE_EQ(eval("-2 * -3"), 6);
  EXPECT_DOUBLE_EQ(eval("1e-3 * 2.5E+3"), 2.5);
  EXPECT_DOUBLE_EQ(eval(".5 + 1"), 1.5);
  EXPECT_DOUBLE_EQ(eval("1 + 2 > 2"), 1);  // arithmetic binds tighter than comparison
  EXPECT_DOUBLE_EQ(eval("2 * 3 == 6"), 1);
  EXPECT_DOUBLE_EQ(eval("3 != 3"), 0);
  EXPECT_DOUBLE_EQ(eval("3 <= 3 and 4 >= 5"), 0);
}

TEST(RuleExpr, LogicAndFunctions) {
  EXPECT_DOUBLE_EQ(eval("1 < 2 or 1 > 2 and 0"), 1);  // 'and' binds tighter than 'or'
  EXPECT_DOUBLE_EQ(eval("(1 < 2 or 1 > 2) and 0"), 0);
  EXPECT_DOUBLE_EQ(eval("not 1 > 2"), 1);  // not applies to the comparison
  EXPECT_DOUBLE_EQ(eval("not not 3"), 1);
  EXPECT_DOUBLE_EQ(eval("min(4, 2) + max(4, 2) * abs(-1.5)"), 8);
  EXPECT_DOUBLE_EQ(eval("max(min(1, 2), 0.5)"), 1);
}

TEST(RuleExpr, NamesWithDotsAndUnderscores) {
  const std::string ld = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum";
  const std::string rq = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum";
  EXPECT_DOUBLE_EQ(eval(ld + " / " + rq + " > 4.5", {{ld, 160}, {rq, 10}}), 1);
  EXPECT_DOUBLE_EQ(eval("kernel.duration_s * 1e6", {{"kernel.duration_s", 2e-6}}), 2);
  auto e = RuleExpr::parse("a.x + b_y * a.x - max(c, b_y)");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->names(), (std::vector<std::string>{"a.x", "b_y", "c"}));
}

TEST(RuleExpr, MissingNameAndDivisionByZeroAreNotEvaluated) {
  auto e = RuleExpr::parse("dram__bytes_write.sum > 2 * dram__bytes_read.sum");
  ASSERT_TRUE(e.ok());
  auto r = e->evaluate(table({{"dram__bytes_write.sum", 6e8}}));
  EXPECT_FALSE(r.value.has_value());
  EXPECT_EQ(r.not_evaluated, "missing 'dram__bytes_read.sum'");
  EXPECT_EQ(e->value(table({{"dram__bytes_write.sum", 6e8}, {"dram__bytes_read.sum", 2e8}})), 1.0);

  auto d = RuleExpr::parse("a / (b - 1) > 3");
  ASSERT_TRUE(d.ok());
  auto z = d->evaluate(table({{"a", 1}, {"b", 1}}));
  EXPECT_FALSE(z.value.has_value());
  EXPECT_EQ(z.not_evaluated, "division by zero in 'a / (b - 1)'");
  // A missing operand of 'or' is not evaluated either, even when the other side is true.
  auto o = RuleExpr::parse("1 or x");
  ASSERT_TRUE(o.ok());
  EXPECT_FALSE(o->value(table({})).has_value());
}

TEST(RuleExpr, ParseErrorsSayWhereAndWhat) {
  EXPECT_EQ(parse_error("max(a, b"), "column 9: expected ')' after 'max(a, b'");
  EXPECT_EQ(parse_error("1 +"), "column 4: expected a number, a name or '(' after '1 +'");
  EXPECT_EQ(parse_error("a b"), "column 3: expected an operator or the end, found 'b' after 'a'");
  EXPECT_EQ(parse_error("min(1)"), "column 6: expected ',' (min takes two arguments) after 'min(1'");
  EXPECT_EQ(parse_error("1 < x < 3"), "column 7: comparisons do not chain: expected 'and' between them after '1 < x'");
  EXPECT_EQ(parse_error("x and"), "column 6: expected a number, a name or '(' after 'x and'");
  EXPECT_EQ(parse_error("1.2.3"), "column 1: expected a number, found '1.2.3'");
  EXPECT_EQ(parse_error("min + 1"), "column 5: expected '(' after the function name (min, max and abs are reserved) after 'min'");
  EXPECT_EQ(parse_error(""), "column 1: expected an expression");
  EXPECT_EQ(parse_error("(a + 1"), "column 7: expected ')' after '(a + 1'");
  EXPECT_EQ(parse_error("a # b"), "column 3: expected an operator or the end, found '#' after 'a'");
}

TEST(RuleExpr, ComparisonsOfBareNames) {
  auto e = RuleExpr::parse("x > 2 * y and 10 > z and x + z > 0");
  ASSERT_TRUE(e.ok());
  auto c = e->comparisons(table({{"x", 9}, {"y", 4}, {"z", 3}}));
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].name, "x");
  EXPECT_EQ(c[0].op, ">");
  EXPECT_DOUBLE_EQ(c[0].threshold, 8);
  EXPECT_EQ(c[1].name, "z");
  EXPECT_EQ(c[1].op, "<");  // "10 > z" reads as "z < 10"
  EXPECT_DOUBLE_EQ(c[1].threshold, 10);
}

// A rule over the stage-1 DRAM bytes and one stage-2 metric.
const char* kGoodRule = R"toml(name = "store_heavy_test"
title = "Writes dominate"
about = "Writes over twice the reads."
classes = ["memory-bound"]
metrics = ["smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio"]
when = "dram__bytes_write.sum > 2 * dram__bytes_read.sum and kernel.duration_s > 5e-6"
severity = "warning"
gain = "min(2, (dram__bytes_read.sum + dram__bytes_write.sum) / (2 * dram__bytes_read.sum))"
message = "writes {dram__bytes_write.sum / dram__bytes_read.sum:.1f}x reads, {smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio:.0f} B/sector {{x}}"
guidance = "Write once, in {kernel.grid_blocks:.0f} blocks."
actions = ["fuse", "coalesce"]
)toml";

profile::KernelMetrics kernel(double read, double write) {
  profile::KernelMetrics k;
  k.name = "expand(float const*, float*, int)";
  k.grid = {4096, 1, 1};
  k.block = {256, 1, 1};
  k.values["gpu__time_duration.sum"] = 190000;  // 190 us
  k.values["dram__bytes_read.sum"] = read;
  k.values["dram__bytes_write.sum"] = write;
  k.values["smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio"] = 32;
  return k;
}

std::unique_ptr<Tool> good_rule() {
  auto t = parse_rule_tool(kGoodRule, "rules/store_heavy_test.toml");
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  return t.ok() ? std::move(*t) : nullptr;
}

TEST(RuleTool, SpecFromTheFile) {
  auto t = good_rule();
  ASSERT_TRUE(t);
  const ToolSpec& s = t->spec();
  EXPECT_EQ(s.name, "store_heavy_test");
  EXPECT_EQ(s.title, "Writes dominate");
  ASSERT_EQ(s.classes.size(), 1u);
  EXPECT_EQ(s.classes[0], BottleneckClass::kMemoryBound);
  EXPECT_EQ(s.metrics, (std::vector<std::string>{"smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio"}));
  EXPECT_FALSE(s.needs_sass);
}

TEST(RuleTool, FiresWithValuesFilledIn) {
  auto t = good_rule();
  ASSERT_TRUE(t);
  Evidence e;
  e.kernels = {kernel(2.7e8, 8.1e8)};
  auto f = t->run(e);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].tool, "store_heavy_test");
  EXPECT_EQ(f[0].kernel, "expand(float const*, float*, int)");
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_DOUBLE_EQ(f[0].estimated_gain, 2.0);  // (2.7 + 8.1) / 5.4 = 2
  EXPECT_EQ(f[0].title, "writes 3.0x reads, 32 B/sector {x}");
  EXPECT_EQ(f[0].guidance, "Write once, in 4096 blocks.");
  EXPECT_EQ(f[0].actions, (std::vector<std::string>{"fuse", "coalesce"}));
  // The comparisons' bare names with their thresholds, then the rest as context.
  ASSERT_EQ(f[0].evidence.size(), 3u);
  EXPECT_EQ(f[0].evidence[0].metric, "dram__bytes_write.sum");
  EXPECT_EQ(f[0].evidence[0].op, ">");
  EXPECT_DOUBLE_EQ(f[0].evidence[0].threshold, 5.4e8);
  EXPECT_EQ(f[0].evidence[0].unit, "B");
  EXPECT_EQ(f[0].evidence[1].metric, "kernel.duration_s");
  EXPECT_DOUBLE_EQ(f[0].evidence[1].value, 1.9e-4);
  EXPECT_EQ(f[0].evidence[2].metric, "dram__bytes_read.sum");
  EXPECT_EQ(f[0].evidence[2].op, "");
}

TEST(RuleTool, QuietOnTheFixedTwinAndOnMissingEvidence) {
  auto t = good_rule();
  ASSERT_TRUE(t);
  Evidence fixed;
  fixed.kernels = {kernel(2.7e8, 2.7e8)};  // one write per read: gelu-like
  EXPECT_TRUE(t->run(fixed).empty());
  Evidence missing;
  missing.kernels = {kernel(2.7e8, 8.1e8)};
  missing.kernels[0].values.erase("dram__bytes_read.sum");
  EXPECT_TRUE(t->run(missing).empty());
  // Fires per kernel: only the flawed one of two.
  Evidence two;
  two.kernels = {kernel(2.7e8, 2.7e8), kernel(1e8, 5e8)};
  two.kernels[1].name = "second";
  auto f = t->run(two);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kernel, "second");
}

TEST(RuleTool, DerivedValues) {
  Evidence e;
  e.kernels = {kernel(1, 1), kernel(1, 1)};
  e.kernels[1].grid = {0, 0, 0};
  profile::TraceCall call;
  call.kernels.resize(2);
  call.kernels[1].grid = {8, 2, 1};
  call.kernels[1].block = {128, 1, 1};
  e.trace = call;
  e.call_seconds = 4e-4;
  e.device.sm_count = 132;
  profile::KernelSass s;
  s.name = "expand(float const*, float*, int)";
  s.sass.local_loads = 3;
  s.resources = build::KernelResources{};
  s.resources->registers = 40;
  s.resources->spill_store_bytes = 8;
  s.resources->spill_load_bytes = 12;
  e.sass = {s};
  EXPECT_EQ(rule_value(e, 0, "kernel.grid_blocks"), 4096.0);
  EXPECT_EQ(rule_value(e, 1, "kernel.grid_blocks"), 16.0);  // from the trace
  EXPECT_EQ(rule_value(e, 1, "kernel.threads"), 4096.0);  // trace grid, collector block
  EXPECT_EQ(rule_value(e, 1, "kernel.index"), 1.0);
  EXPECT_EQ(rule_value(e, 0, "call.kernels"), 2.0);
  EXPECT_EQ(rule_value(e, 0, "call.seconds"), 4e-4);
  EXPECT_EQ(rule_value(e, 0, "device.sm_count"), 132.0);
  EXPECT_EQ(rule_value(e, 0, "sass.local_loads"), 3.0);
  EXPECT_EQ(rule_value(e, 0, "ptxas.registers"), 40.0);
  EXPECT_EQ(rule_value(e, 0, "ptxas.spill_bytes"), 20.0);
  EXPECT_FALSE(rule_value(e, 0, "task.ideal_bytes").has_value());  // 0: not given
  EXPECT_FALSE(rule_value(e, 0, "device.l2_bytes").has_value());
  EXPECT_EQ(rule_value(e, 0, "dram__bytes_read.sum"), 1.0);
  EXPECT_FALSE(rule_value(e, 5, "call.kernels").has_value());
}

// The good rule with one line replaced.
std::string with(const std::string& key, const std::string& line) {
  std::string text = std::string("\n") + kGoodRule;
  size_t at = text.find("\n" + key + " = ");
  EXPECT_NE(at, std::string::npos) << key;
  size_t end = text.find('\n', at + 1);
  return (text.substr(0, at + 1) + line + text.substr(end)).substr(1);
}

std::string load_error(const std::string& text) {
  auto t = parse_rule_tool(text, "rules/x.toml");
  EXPECT_FALSE(t.ok());
  return t.ok() ? "" : t.error().message;
}

TEST(RuleTool, BadExpressionNamesFileLineAndColumn) {
  EXPECT_EQ(load_error(with("when", R"(when = "max(dram__bytes_read.sum, 1")")),
            "rules/x.toml:6: [when] column 28: expected ')' after 'max(dram__bytes_read.sum, 1'");
  EXPECT_EQ(load_error(with("gain", R"(gain = "2 *")")),
            "rules/x.toml:8: [gain] column 4: expected a number, a name or '(' after '2 *'");
}

TEST(RuleTool, UnknownMetricIsNamedWithTheKnownOnes) {
  std::string e = load_error(with("when", R"(when = "dram__bytes_red.sum > 1")"));
  EXPECT_EQ(e.rfind("rules/x.toml:6: [when] unknown metric 'dram__bytes_red.sum' (did you mean 'dram__bytes_read.sum'?); known: ", 0), 0u) << e;
  EXPECT_NE(e.find("lts__t_sector_hit_rate.pct"), std::string::npos);  // a stage-2 name
  EXPECT_NE(e.find("kernel.duration_s"), std::string::npos);           // a derived name
  e = load_error(with("metrics", R"(metrics = ["sm__warps_launched.sum"])"));
  EXPECT_EQ(e.rfind("rules/x.toml:5: [metrics] unknown metric 'sm__warps_launched.sum'", 0), 0u) << e;
  // A stage-2 metric read but not listed would never be collected.
  e = load_error(with("when", R"(when = "lts__t_sector_hit_rate.pct < 50")"));
  EXPECT_EQ(e, "rules/x.toml:6: [when] reads the stage-2 metric 'lts__t_sector_hit_rate.pct': add it to metrics, else it is never collected");
}

TEST(RuleTool, UnknownActionListsTheKnownOnes) {
  std::string e = load_error(with("actions", R"(actions = ["fuse", "go_faster"])"));
  EXPECT_EQ(e.rfind("rules/x.toml:11: [actions] unknown action 'go_faster'; known: avoid_atomics, ", 0), 0u) << e;
  EXPECT_NE(e.find("vectorize_loads"), std::string::npos);
}

TEST(RuleTool, UnknownPlaceholderIsALoadError) {
  std::string e = load_error(with("message", R"(message = "ratio {write_ratio:.1f}")"));
  EXPECT_EQ(e.rfind("rules/x.toml:9: [message] placeholder '{write_ratio:.1f}' unknown metric 'write_ratio'", 0), 0u) << e;
  e = load_error(with("guidance", R"(guidance = "see {max(1,")"));
  EXPECT_EQ(e, "rules/x.toml:10: [guidance] column 5: placeholder '{' without its '}'");
  e = load_error(with("message", R"(message = "{kernel.index:.1q}")"));
  EXPECT_EQ(e, "rules/x.toml:9: [message] placeholder '{kernel.index:.1q}': bad number format ':.1q' (use e.g. :.1f, :.3g, :.2e)");
  e = load_error(with("message", R"(message = "{(kernel.index}")"));
  EXPECT_EQ(e, "rules/x.toml:9: [message] placeholder '{(kernel.index}': column 14: expected ')' after '(kernel.index'");
}

TEST(RuleTool, BadSeverityNameClassAndKeys) {
  EXPECT_EQ(load_error(with("severity", R"(severity = "high")")),
            "rules/x.toml:7: severity 'high' must be info, warning or critical");
  EXPECT_EQ(load_error(with("name", R"(name = "StoreHeavy")")).rfind("rules/x.toml:1: name 'StoreHeavy' must be snake_case", 0), 0u);
  EXPECT_EQ(load_error(with("name", R"(name = "store__heavy")")).rfind("rules/x.toml:1: name 'store__heavy' must be snake_case", 0), 0u);
  EXPECT_EQ(load_error(with("classes", R"(classes = ["io-bound"])")),
            "rules/x.toml:4: [classes] unknown class 'io-bound'; known: memory-bound, compute-bound, latency-bound, launch-bound");
  EXPECT_EQ(load_error(std::string(kGoodRule) + "wen = \"1\"\n").rfind("rules/x.toml:12: unknown key 'wen'", 0), 0u);
  EXPECT_EQ(load_error(with("when", "when = 3")), "rules/x.toml:6: 'when' must be a string");
  std::string no_when = with("when", "");
  EXPECT_EQ(load_error(no_when), "rules/x.toml: 'when' is missing");
  std::string e = load_error("name = \"x\"\ntitle = \"unterminated\n");
  EXPECT_EQ(e.rfind("rules/x.toml:2: column ", 0), 0u) << e;
  EXPECT_NE(e.find("(not valid TOML)"), std::string::npos);
}

TEST(RuleTool, EveryFileInRulesLoadsAndIsSound) {
  const fs::path dir = fs::path(KP_SOURCE_DIR) / "rules";
  auto tools = load_rule_tools(dir);
  ASSERT_TRUE(tools.ok()) << tools.error().message;
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) files += entry.path().extension() == ".toml";
  EXPECT_EQ(tools->size(), files);
  EXPECT_GE(files, 3u);
  for (const auto& t : *tools) {
    EXPECT_FALSE(t->spec().about.empty()) << t->spec().name;
    // A rule never fires on an empty kernel (all evidence missing).
    Evidence e;
    e.kernels.resize(1);
    EXPECT_TRUE(t->run(e).empty()) << t->spec().name;
  }
  EXPECT_EQ(default_rule_dirs().front(), dir);
}

const Tool* find(const std::vector<std::unique_ptr<Tool>>& tools, std::string_view name) {
  for (const auto& t : tools)
    if (t->spec().name == name) return t.get();
  return nullptr;
}

class ExampleRules : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = load_rule_tools(fs::path(KP_SOURCE_DIR) / "rules");
    ASSERT_TRUE(r.ok()) << r.error().message;
    tools_ = std::move(*r);
  }
  std::vector<std::unique_ptr<Tool>> tools_;
};

TEST_F(ExampleRules, StoreHeavy) {
  const Tool* t = find(tools_, "store_heavy");
  ASSERT_TRUE(t);
  auto k = kernel(2.7e8, 8.1e8);  // a zero-fill pass before the write
  k.values["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"] = 78;
  k.values["smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio"] = 16;
  Evidence e;
  e.kernels = {k};
  auto f = t->run(e);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].title, "DRAM writes are 3.0x the reads (810 MB written, 270 MB read)");
  EXPECT_NE(f[0].guidance.find("16.0 of 32 bytes"), std::string::npos) << f[0].guidance;
  Evidence fixed;  // transpose-like: 612 MB each way
  fixed.kernels = {kernel(6.12e8, 6.12e8)};
  fixed.kernels[0].values["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"] = 78;
  EXPECT_TRUE(t->run(fixed).empty());
}

TEST_F(ExampleRules, L1Thrash) {
  const Tool* t = find(tools_, "l1_thrash");
  ASSERT_TRUE(t);
  profile::KernelMetrics naive;  // FP32 GEMM without shared-memory tiling
  naive.name = "sgemm_naive";
  naive.values = {{"dram__bytes_read.sum", 1.7e10},
                  {"dram__bytes_write.sum", 9e7},
                  {"lts__t_bytes.sum", 5.3e10},
                  {"l1tex__t_sector_hit_rate.pct", 2.3},
                  {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 1.6e9},
                  {"lts__throughput.avg.pct_of_peak_sustained_elapsed", 80}};
  Evidence e;
  e.kernels = {naive};
  auto f = t->run(e);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_DOUBLE_EQ(f[0].estimated_gain, 1.6);
  EXPECT_EQ(f[0].actions, (std::vector<std::string>{"reuse_data"}));
  // Tiled: L1/shared serve the re-reads, L2 traffic near DRAM's.
  profile::KernelMetrics tiled = naive;
  tiled.values["lts__t_bytes.sum"] = 2.2e10;
  tiled.values["lts__throughput.avg.pct_of_peak_sustained_elapsed"] = 30;
  e.kernels = {tiled};
  EXPECT_TRUE(t->run(e).empty());
  // A streaming kernel (read once): no re-reads, quiet even with a 0% L1 hit rate.
  profile::KernelMetrics stream = naive;
  stream.values["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] = 1.7e10 / 32;
  stream.values["l1tex__t_sector_hit_rate.pct"] = 0;
  e.kernels = {stream};
  EXPECT_TRUE(t->run(e).empty());
}

TEST_F(ExampleRules, TinyKernel) {
  const Tool* t = find(tools_, "tiny_kernel");
  ASSERT_TRUE(t);
  profile::KernelMetrics gemm, bias;
  gemm.name = "gemm";
  gemm.values["gpu__time_duration.sum"] = 60000;
  bias.name = "bias_add";
  bias.values["gpu__time_duration.sum"] = 2100;
  Evidence e;
  e.kernels = {gemm, bias};
  e.call_seconds = 66e-6;
  auto f = t->run(e);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kernel, "bias_add");
  EXPECT_EQ(f[0].title, "Kernel 1 of 2 runs 2.1 us, about one launch's cost, in a 66 us call");
  EXPECT_NEAR(f[0].estimated_gain, 66.0 / 63.0, 1e-9);
  // Alone in its call there is nothing to fuse it with.
  Evidence alone;
  alone.kernels = {bias};
  alone.call_seconds = 5e-6;
  EXPECT_TRUE(t->run(alone).empty());
  // Beside a 2 ms kernel it is noise.
  e.kernels[0].values["gpu__time_duration.sum"] = 2e6;
  e.call_seconds = 2.01e-3;
  EXPECT_TRUE(t->run(e).empty());
}

TEST(RuleTool, LoadingAFolderSortsAndReportsTheBadFile) {
  const fs::path dir = fs::temp_directory_path() / ("kp_rules_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto write = [&](const std::string& file, const std::string& text) { std::ofstream(dir / file) << text; };
  std::string b = kGoodRule, a = kGoodRule;
  b.replace(b.find("store_heavy_test"), 16, "rule_b");
  a.replace(a.find("store_heavy_test"), 16, "rule_a");
  write("b.toml", b);
  write("a.toml", a);
  write("notes.txt", "not a rule");
  auto tools = load_rule_tools(dir);
  ASSERT_TRUE(tools.ok()) << tools.error().message;
  ASSERT_EQ(tools->size(), 2u);
  EXPECT_EQ((*tools)[0]->spec().name, "rule_a");
  EXPECT_EQ((*tools)[1]->spec().name, "rule_b");
  write("c.toml", with("severity", R"(severity = "loud")"));
  auto bad = load_rule_tools(dir);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, (dir / "c.toml").string() + ":7: severity 'loud' must be info, warning or critical");
  fs::remove(dir / "c.toml");
  write("d.toml", a);  // the same name twice
  EXPECT_FALSE(load_rule_tools(dir).ok());
  fs::remove_all(dir);
  EXPECT_EQ(load_rule_tools(dir).error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace kp::analysis
