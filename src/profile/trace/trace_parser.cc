#include "profile/trace/trace_parser.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include <fmt/format.h>

#include "util/strings.h"

namespace kp::profile {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr int kOutsideCall = -1;

std::string demangle(const std::string& mangled) {
  int status = 0;
  char* out = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) return mangled;
  std::string s(out);
  std::free(out);
  return s;
}

// Field readers for one line: each returns false (after setting error) when the field is
// missing or of the wrong type.
class LineReader {
 public:
  LineReader(const json& j, size_t line_no) : j_(j), line_no_(line_no) {}

  template <typename T>
  bool uint(const char* key, T& out) {
    auto it = j_.find(key);
    if (it == j_.end() || !it->is_number_unsigned()) return fail(key, "a non-negative integer");
    out = static_cast<T>(it->get<uint64_t>());
    return true;
  }
  template <typename T>
  bool sint(const char* key, T& out) {
    auto it = j_.find(key);
    if (it == j_.end() || !it->is_number_integer()) return fail(key, "an integer");
    out = static_cast<T>(it->get<int64_t>());
    return true;
  }
  bool str(const char* key, std::string& out) {
    auto it = j_.find(key);
    if (it == j_.end() || !it->is_string()) return fail(key, "a string");
    out = it->get<std::string>();
    return true;
  }
  bool triple(const char* key, std::array<int64_t, 3>& out) {
    auto it = j_.find(key);
    if (it == j_.end() || !it->is_array() || it->size() != 3) return fail(key, "an array of 3 integers");
    for (size_t i = 0; i < 3; ++i) {
      if (!(*it)[i].is_number_integer()) return fail(key, "an array of 3 integers");
      out[i] = (*it)[i].get<int64_t>();
    }
    return true;
  }
  bool flag(const char* key) const {
    auto it = j_.find(key);
    return it != j_.end() && it->is_boolean() && it->get<bool>();
  }
  Error error() const { return make_error(ErrorCode::kTool, error_); }

 private:
  bool fail(const char* key, const char* what) {
    error_ = fmt::format(
        "trace line {}: field \"{}\" should be {} in {}; the file is not libkp_trace's "
        "format version 1 (rebuild kp_trace with this kernelpro)",
        line_no_, key, what, j_.dump().substr(0, 200));
    return false;
  }
  const json& j_;
  size_t line_no_;
  std::string error_;
};

// Launch counts of one call per API domain.
struct LaunchCounts {
  uint64_t runtime = 0;
  uint64_t driver = 0;
};

struct Builder {
  std::map<int, TraceCall> calls;
  TraceCall outside;
  std::map<int, LaunchCounts> launches;

  Builder() { outside.index = kOutsideCall; }

  TraceCall& at(int call) {
    if (call < 0) return outside;
    TraceCall& c = calls[call];
    c.index = call;
    return c;
  }
};

bool is_incomplete(uint64_t start, uint64_t end) { return start == 0 || end == 0 || end < start; }

// Parses one JSON object into b / trace. Returns false with r.error() set on a bad field.
bool parse_record(const json& j, size_t line_no, Builder& b, Trace& trace, Error& error) {
  LineReader r(j, line_no);
  auto type_it = j.find("type");
  if (type_it == j.end() || !type_it->is_string()) {
    error = make_error(ErrorCode::kTool,
                       fmt::format("trace line {}: no \"type\" field in {}", line_no, j.dump().substr(0, 200)));
    return false;
  }
  const std::string type = type_it->get<std::string>();
  auto bad = [&]() {
    error = r.error();
    return false;
  };
  if (type == "kernel") {
    TraceKernel k;
    int call = 0;
    if (!r.sint("call", call) || !r.str("name", k.mangled_name) || !r.uint("stream", k.stream) ||
        !r.triple("grid", k.grid) || !r.triple("block", k.block) || !r.sint("registers", k.registers_per_thread) ||
        !r.sint("static_smem", k.static_shared_bytes) || !r.sint("dynamic_smem", k.dynamic_shared_bytes) ||
        !r.uint("start", k.start_ns) || !r.uint("end", k.end_ns) || !r.uint("correlation", k.correlation_id)) {
      return bad();
    }
    if (r.flag("incomplete") || is_incomplete(k.start_ns, k.end_ns)) {
      ++trace.incomplete_records;
      return true;
    }
    k.name = demangle(k.mangled_name);
    b.at(call).kernels.push_back(std::move(k));
  } else if (type == "memcpy" || type == "memset") {
    TraceCopy c;
    c.kind = type;
    int call = 0;
    if (!r.sint("call", call) || (type == "memcpy" && !r.str("direction", c.direction)) || !r.uint("bytes", c.bytes) ||
        !r.uint("stream", c.stream) || !r.uint("start", c.start_ns) || !r.uint("end", c.end_ns)) {
      return bad();
    }
    if (r.flag("incomplete") || is_incomplete(c.start_ns, c.end_ns)) {
      ++trace.incomplete_records;
      return true;
    }
    b.at(call).copies.push_back(std::move(c));
  } else if (type == "api") {
    int call = 0;
    uint64_t count = 0;
    std::string domain;
    if (!r.sint("call", call) || !r.str("domain", domain) || !r.uint("count", count)) return bad();
    if (r.flag("launch")) {
      LaunchCounts& l = b.launches[call < 0 ? kOutsideCall : call];
      (domain == "runtime" ? l.runtime : l.driver) += count;
    }
    b.at(call);  // a call with API records but no GPU work still counts as a call
  } else if (type == "begin" || type == "end") {
    int call = 0;
    if (!r.sint("call", call)) return bad();
    b.at(call);
  } else if (type == "error") {
    std::string message;
    if (!r.str("error", message)) return bad();
    if (!trace.error.empty()) trace.error += "; ";
    trace.error += message;
  } else if (type == "footer") {
    uint64_t dropped = 0;
    if (!r.uint("dropped", dropped)) return bad();
    trace.dropped_records += dropped;
    trace.finished = true;
  }
  // "header" and unknown types: nothing to keep.
  return true;
}

void finish_call(TraceCall& c, const LaunchCounts* l) {
  auto by_start = [](const auto& a, const auto& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns < b.end_ns;
  };
  std::stable_sort(c.kernels.begin(), c.kernels.end(), by_start);
  std::stable_sort(c.copies.begin(), c.copies.end(), by_start);
  if (l) c.launch_api_calls = std::max(l->runtime, l->driver);
  summarize_call(c);
}

// Span, union length and longest idle stretch of a call's activity intervals, in ns.
struct Coverage {
  uint64_t span_ns = 0;
  uint64_t busy_ns = 0;
  uint64_t largest_gap_ns = 0;
};

Coverage coverage(const TraceCall& c) {
  std::vector<std::pair<uint64_t, uint64_t>> iv;
  for (const auto& k : c.kernels) iv.emplace_back(k.start_ns, k.end_ns);
  for (const auto& x : c.copies) iv.emplace_back(x.start_ns, x.end_ns);
  Coverage cov;
  if (iv.empty()) return cov;
  std::sort(iv.begin(), iv.end());
  uint64_t first = iv.front().first, last_end = iv.front().second;
  uint64_t seg_start = iv.front().first;
  for (size_t i = 1; i < iv.size(); ++i) {
    if (iv[i].first > last_end) {
      cov.busy_ns += last_end - seg_start;
      cov.largest_gap_ns = std::max(cov.largest_gap_ns, iv[i].first - last_end);
      seg_start = iv[i].first;
    }
    last_end = std::max(last_end, iv[i].second);
  }
  cov.busy_ns += last_end - seg_start;
  cov.span_ns = last_end - first;
  return cov;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

Result<Trace> parse_trace(std::string_view jsonl) {
  Trace trace;
  Builder b;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < jsonl.size()) {
    size_t nl = jsonl.find('\n', pos);
    bool has_newline = nl != std::string_view::npos;
    std::string_view line = jsonl.substr(pos, has_newline ? nl - pos : std::string_view::npos);
    pos = has_newline ? nl + 1 : jsonl.size();
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    json j = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      if (!has_newline && j.is_discarded()) break;  // cut short by a dying process
      return make_error(ErrorCode::kTool, fmt::format("trace line {}: not a JSON object: {}; the trace file is damaged "
                                                      "or was not written by libkp_trace",
                                                      line_no, std::string(line.substr(0, 200))));
    }
    Error error;
    if (!parse_record(j, line_no, b, trace, error)) return error;
  }
  for (auto& [index, call] : b.calls) {
    auto it = b.launches.find(index);
    finish_call(call, it == b.launches.end() ? nullptr : &it->second);
    trace.calls.push_back(std::move(call));
  }
  auto it = b.launches.find(kOutsideCall);
  finish_call(b.outside, it == b.launches.end() ? nullptr : &it->second);
  trace.outside = std::move(b.outside);
  return trace;
}

void summarize_call(TraceCall& call) {
  Coverage cov = coverage(call);
  call.span_s = static_cast<double>(cov.span_ns) * 1e-9;
  call.busy_s = static_cast<double>(cov.busy_ns) * 1e-9;
  call.gaps_s = static_cast<double>(cov.span_ns - cov.busy_ns) * 1e-9;
  std::set<uint32_t> streams;
  for (const auto& k : call.kernels) streams.insert(k.stream);
  for (const auto& c : call.copies) streams.insert(c.stream);
  call.streams = static_cast<int>(streams.size());
}

TraceSummary summarize(const Trace& trace) {
  TraceSummary s;
  s.calls = static_cast<int>(trace.calls.size());
  s.outside_kernels = trace.outside.kernels.size();
  s.dropped_records = trace.dropped_records;
  s.incomplete_records = trace.incomplete_records;
  s.finished = trace.finished;
  s.error = trace.error;
  std::vector<double> spans, busy, gaps;
  std::set<uint32_t> streams;
  std::map<std::string, TraceKernelStat> stats;
  uint64_t launches = 0;
  for (const auto& c : trace.calls) {
    Coverage cov = coverage(c);
    spans.push_back(static_cast<double>(cov.span_ns) * 1e-9);
    busy.push_back(static_cast<double>(cov.busy_ns) * 1e-9);
    gaps.push_back(static_cast<double>(cov.span_ns - cov.busy_ns) * 1e-9);
    s.largest_gap_s = std::max(s.largest_gap_s, static_cast<double>(cov.largest_gap_ns) * 1e-9);
    launches += c.launch_api_calls;
    for (const auto& k : c.kernels) {
      ++s.kernels;
      if (k.duration_s() < kShortKernelS) ++s.short_kernels;
      TraceKernelStat& st = stats[k.name];
      st.name = k.name;
      ++st.count;
      st.total_s += k.duration_s();
      streams.insert(k.stream);
    }
    for (const auto& x : c.copies) {
      if (x.kind == "memset") {
        s.memset_bytes += x.bytes;
      } else {
        s.memcpy_bytes[x.direction] += x.bytes;
      }
      streams.insert(x.stream);
    }
  }
  s.median_span_s = median(spans);
  s.median_busy_s = median(busy);
  s.median_gaps_s = median(gaps);
  if (s.calls > 0) {
    s.mean_kernels_per_call = static_cast<double>(s.kernels) / s.calls;
    s.mean_launch_api_calls = static_cast<double>(launches) / s.calls;
  }
  for (auto& [name, st] : stats) s.kernel_stats.push_back(std::move(st));
  std::stable_sort(s.kernel_stats.begin(), s.kernel_stats.end(),
                   [](const TraceKernelStat& a, const TraceKernelStat& b) { return a.total_s > b.total_s; });
  s.streams.assign(streams.begin(), streams.end());
  return s;
}

nlohmann::json to_json(const TraceSummary& s) {
  json j = {
      {"calls", s.calls},
      {"median_span_s", s.median_span_s},
      {"median_busy_s", s.median_busy_s},
      {"median_gaps_s", s.median_gaps_s},
      {"mean_kernels_per_call", s.mean_kernels_per_call},
      {"mean_launch_api_calls", s.mean_launch_api_calls},
      {"memcpy_bytes", s.memcpy_bytes},
      {"memset_bytes", s.memset_bytes},
      {"kernels", s.kernels},
      {"short_kernels", s.short_kernels},
      {"largest_gap_s", s.largest_gap_s},
      {"streams", s.streams},
      {"outside_kernels", s.outside_kernels},
      {"dropped_records", s.dropped_records},
      {"incomplete_records", s.incomplete_records},
      {"finished", s.finished},
  };
  json stats = json::array();
  for (const auto& k : s.kernel_stats) stats.push_back({{"name", k.name}, {"count", k.count}, {"total_s", k.total_s}});
  j["kernel_stats"] = std::move(stats);
  if (!s.error.empty()) j["error"] = s.error;
  return j;
}

std::string describe(const TraceSummary& s) {
  std::string out;
  if (s.calls == 0) {
    out = fmt::format("no calls traced ({} kernels outside any call)", s.outside_kernels);
  } else {
    out = fmt::format(
        "{} call{}: median span {}, busy {}, idle gaps {} (largest {}); {:.1f} kernels and {:.1f} "
        "launch calls per call on {} stream{}; {} of {} kernels under {}",
        s.calls, s.calls == 1 ? "" : "s", format_seconds(s.median_span_s), format_seconds(s.median_busy_s),
        format_seconds(s.median_gaps_s), format_seconds(s.largest_gap_s), s.mean_kernels_per_call,
        s.mean_launch_api_calls, s.streams.size(), s.streams.size() == 1 ? "" : "s", s.short_kernels, s.kernels,
        format_seconds(kShortKernelS));
    for (const auto& [direction, bytes] : s.memcpy_bytes) {
      out += fmt::format("; memcpy {} {}", direction, format_bytes(static_cast<double>(bytes)));
    }
    if (s.memset_bytes > 0) out += "; memset " + format_bytes(static_cast<double>(s.memset_bytes));
  }
  if (s.dropped_records > 0) out += fmt::format("; {} records dropped by CUPTI", s.dropped_records);
  if (s.incomplete_records > 0) out += fmt::format("; {} incomplete records left out", s.incomplete_records);
  if (!s.error.empty()) out += "; error: " + s.error;
  if (!s.kernel_stats.empty()) {
    out += "\ntop kernels:";
    for (size_t i = 0; i < s.kernel_stats.size() && i < 3; ++i) {
      const auto& k = s.kernel_stats[i];
      out += fmt::format("{} {} x{} {}", i == 0 ? "" : ",", k.name, k.count, format_seconds(k.total_s));
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> trace_environment(const fs::path& lib, const fs::path& out) {
  std::error_code ec;
  fs::path abs_lib = fs::absolute(lib, ec);
  if (ec) abs_lib = lib;
  fs::path abs_out = fs::absolute(out, ec);
  if (ec) abs_out = out;
  return {{"CUDA_INJECTION64_PATH", abs_lib.lexically_normal().string()},
          {"KP_TRACE_OUT", abs_out.lexically_normal().string()}};
}

}  // namespace kp::profile
