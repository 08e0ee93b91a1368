#include "profile/ncu/ncu_csv.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "util/strings.h"

namespace kp::profile {

namespace {

constexpr std::string_view kNoKernels = "No kernels were profiled";

bool contains(std::string_view text, std::string_view what) { return text.find(what) != std::string_view::npos; }

// One CSV record and the 1-based line of the text it starts on.
struct Record {
  std::vector<std::string> fields;
  size_t line = 0;
};

// The table that starts at the header line: the header and the records after it.
struct Table {
  bool found = false;  // a header line was found
  size_t header_line = 0;
  std::vector<std::string> header;
  std::vector<Record> rows;

  std::optional<size_t> column(std::string_view name) const {
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return i;
    return std::nullopt;
  }
};

// Reads one record at text[pos] (the start of a line); moves pos past its final newline.
// Returns kTool for an unterminated quoted field.
Result<std::vector<std::string>> read_record(std::string_view text, size_t& pos, size_t& line, size_t start_line) {
  std::vector<std::string> fields;
  std::string field;
  while (true) {
    field.clear();
    if (pos < text.size() && text[pos] == '"') {
      ++pos;
      while (true) {
        if (pos >= text.size())
          return make_error(
              ErrorCode::kTool,
              fmt::format("ncu CSV line {}: a quoted field is never closed (the output was cut short?)", start_line));
        char c = text[pos++];
        if (c == '"') {
          if (pos < text.size() && text[pos] == '"') {
            field += '"';
            ++pos;
          } else {
            break;
          }
        } else {
          if (c == '\n') ++line;
          field += c;
        }
      }
    }
    // Unquoted text, or what follows a closing quote, up to the separator.
    while (pos < text.size() && text[pos] != ',' && text[pos] != '\n') field += text[pos++];
    if (!field.empty() && field.back() == '\r') field.pop_back();
    fields.push_back(field);
    if (pos < text.size() && text[pos] == ',') {
      ++pos;
      continue;
    }
    if (pos < text.size()) ++pos;  // the newline
    ++line;
    return fields;
  }
}

// Finds the header (the first line starting with "ID") and reads the records after it. Lines
// that start with "==" or, in a quoted table, do not start with a quote, are skipped.
Result<Table> read_table(std::string_view text) {
  if (contains(text, "ERR_NVGPUCTRPERM")) return make_error(ErrorCode::kUnavailable, counter_permission_message());
  if (trim(text).empty()) return make_error(ErrorCode::kTool, "ncu's output is empty: no CSV table to read");
  Table table;
  size_t pos = 0, line = 1;
  bool quoted = true;
  while (pos < text.size()) {
    std::string_view rest = text.substr(pos);
    if (starts_with(rest, "\"ID\"") || starts_with(rest, "ID,")) {
      quoted = rest.front() == '"';
      table.header_line = line;
      KP_TRY(table.header, read_record(text, pos, line, line));
      table.found = true;
      break;
    }
    size_t nl = text.find('\n', pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line;
  }
  if (!table.found) {
    if (contains(text, kNoKernels)) return table;
    std::string first(trim(text.substr(0, text.find('\n'))));
    if (first.size() > 160) first = first.substr(0, 160) + "...";
    std::string error_line;
    for (const auto& l : split_lines(text))
      if (starts_with(l, "==ERROR==")) {
        error_line = fmt::format("; ncu said: {}", trim(l));
        break;
      }
    return make_error(
        ErrorCode::kTool,
        fmt::format("no CSV header line starting with \"ID\" in ncu's output (first line: \"{}\"){}; run ncu "
                    "with --csv, and read its --log-file",
                    first, error_line));
  }
  while (pos < text.size()) {
    std::string_view rest = text.substr(pos);
    size_t nl = rest.find('\n');
    std::string_view this_line = rest.substr(0, nl);
    bool skip = trim(this_line).empty() || starts_with(this_line, "==") || (quoted && this_line.front() != '"');
    if (skip) {
      pos = nl == std::string_view::npos ? text.size() : pos + nl + 1;
      ++line;
      continue;
    }
    Record r;
    r.line = line;
    KP_TRY(r.fields, read_record(text, pos, line, r.line));
    if (r.fields.size() > table.header.size()) {
      bool extra_empty = std::all_of(r.fields.begin() + static_cast<std::ptrdiff_t>(table.header.size()),
                                     r.fields.end(), [](const std::string& f) { return f.empty(); });
      if (!extra_empty)
        return make_error(
            ErrorCode::kTool,
            fmt::format("ncu CSV line {}: {} fields, but the header (line {}) has {} columns; the table is "
                        "malformed (two outputs mixed in one file?)",
                        r.line, r.fields.size(), table.header_line, table.header.size()));
    }
    r.fields.resize(table.header.size());  // pads a short row
    table.rows.push_back(std::move(r));
  }
  return table;
}

// ---- numbers ----

enum class NumberStyle { kUs, kEuropean };  // "1,234.5" vs "1.234,5"

// Digits, separators and an optional exponent: the shape of a number as ncu prints it.
bool looks_numeric(std::string_view v) {
  size_t i = 0;
  if (i < v.size() && (v[i] == '-' || v[i] == '+')) ++i;
  bool digit = false;
  for (; i < v.size(); ++i) {
    char c = v[i];
    if (c >= '0' && c <= '9') {
      digit = true;
    } else if (c == ',' || c == '.') {
    } else {
      break;
    }
  }
  if (!digit) return false;
  if (i == v.size()) return true;
  if (v[i] != 'e' && v[i] != 'E') return false;
  ++i;
  if (i < v.size() && (v[i] == '-' || v[i] == '+')) ++i;
  size_t exp_start = i;
  while (i < v.size() && v[i] >= '0' && v[i] <= '9') ++i;
  return i == v.size() && i > exp_start;
}

// Which style one value proves, if any.
std::optional<NumberStyle> evidence(std::string_view v) {
  if (!looks_numeric(v)) return std::nullopt;
  size_t e = v.find_first_of("eE");
  std::string_view m = v.substr(0, e);
  size_t commas = std::count(m.begin(), m.end(), ','), dots = std::count(m.begin(), m.end(), '.');
  if (commas > 0 && dots > 0) return m.rfind('.') > m.rfind(',') ? NumberStyle::kUs : NumberStyle::kEuropean;
  if (dots >= 2) return NumberStyle::kEuropean;
  if (commas >= 2) return NumberStyle::kUs;
  auto single = [&](char sep, NumberStyle if_decimal) -> std::optional<NumberStyle> {
    size_t at = m.find(sep);
    size_t lead = at - (m.front() == '-' || m.front() == '+' ? 1 : 0);
    size_t after = m.size() - at - 1;
    if (after != 3 || lead > 3 || lead == 0 || e != std::string_view::npos) return if_decimal;
    return std::nullopt;  // "1,234" or "1.234": either style
  };
  if (dots == 1) return single('.', NumberStyle::kUs);
  if (commas == 1) return single(',', NumberStyle::kEuropean);
  return std::nullopt;
}

// European when some value proves it and more values prove it than prove US style.
template <typename Values>
NumberStyle detect_style(const Values& values) {
  size_t us = 0, eu = 0;
  for (std::string_view v : values) {
    auto s = evidence(trim(v));
    if (s == NumberStyle::kUs) ++us;
    if (s == NumberStyle::kEuropean) ++eu;
  }
  return eu > us ? NumberStyle::kEuropean : NumberStyle::kUs;
}

// A value as a number, or nullopt when it is not one.
std::optional<double> to_number(std::string_view raw, NumberStyle style) {
  std::string_view v = trim(raw);
  if (!looks_numeric(v)) return std::nullopt;
  std::string s;
  for (char c : v) {
    if (style == NumberStyle::kUs) {
      if (c != ',') s += c;
    } else if (c == ',') {
      s += '.';
    } else if (c != '.') {
      s += c;
    }
  }
  if (!s.empty() && s.front() == '+') s.erase(0, 1);
  if (std::count(s.begin(), s.end(), '.') > 1) return std::nullopt;
  double d = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return d;
}

bool is_missing(std::string_view v) {
  v = trim(v);
  return v.empty() || v == "n/a" || v == "N/A";
}

Result<int64_t> parse_id(std::string_view v, NumberStyle style, size_t line) {
  auto d = to_number(v, style);
  if (!d || *d < 0 || *d != static_cast<double>(static_cast<int64_t>(*d)))
    return make_error(ErrorCode::kTool, fmt::format("ncu CSV line {}: the ID \"{}\" is not a launch index", line, v));
  return static_cast<int64_t>(*d);
}

// Columns of the raw page that describe the launch rather than measure it.
bool is_info_column(const std::string& name) {
  static const std::set<std::string, std::less<>> kInfo = {"ID",          "Process ID", "Process Name", "Host Name",
                                                           "Kernel Name", "Context",    "Stream",       "Block Size",
                                                           "Grid Size",   "Device",     "CC",           "Kernel Time"};
  return kInfo.count(name) > 0 || name.find(':') != std::string::npos;
}

std::string field(const Record& r, std::optional<size_t> col) {
  return col && *col < r.fields.size() ? r.fields[*col] : std::string();
}

std::array<int64_t, 3> dim3_or_zero(std::string_view text) {
  return parse_ncu_dim3(text).value_or(std::array<int64_t, 3>{0, 0, 0});
}

}  // namespace

std::string counter_permission_message() {
  return "the GPU's performance counters are restricted to admin users (ERR_NVGPUCTRPERM): run as root, or set "
         "`options nvidia NVreg_RestrictProfilingToAdminUsers=0` in /etc/modprobe.d and reboot; in a container, add "
         "--cap-add=SYS_ADMIN; see https://developer.nvidia.com/ERR_NVGPUCTRPERM";
}

std::optional<std::array<int64_t, 3>> parse_ncu_dim3(std::string_view text) {
  text = trim(text);
  if (text.size() < 2 || text.front() != '(' || text.back() != ')') return std::nullopt;
  auto parts = split(text.substr(1, text.size() - 2), ',');
  if (parts.size() != 3) return std::nullopt;
  std::array<int64_t, 3> out{};
  for (size_t i = 0; i < 3; ++i) {
    std::string_view p = trim(parts[i]);
    auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), out[i]);
    if (p.empty() || ec != std::errc() || end != p.data() + p.size() || out[i] < 0) return std::nullopt;
  }
  return out;
}

Result<std::vector<KernelMetrics>> parse_ncu_raw_csv(std::string_view text) {
  KP_TRY(Table table, read_table(text));
  std::vector<KernelMetrics> kernels;
  if (!table.found) return kernels;
  auto id_col = table.column("ID");
  auto name_col = table.column("Kernel Name");
  if (!id_col || !name_col)
    return make_error(ErrorCode::kTool, fmt::format("ncu CSV header has no \"{}\" column: this is not the raw page "
                                                    "(run ncu with --page raw)",
                                                    id_col ? "Kernel Name" : "ID"));
  auto grid_col = table.column("Grid Size"), block_col = table.column("Block Size");
  std::optional<size_t> nvtx_col;
  std::vector<size_t> metric_cols;
  for (size_t i = 0; i < table.header.size(); ++i) {
    const std::string& h = table.header[i];
    if (!is_info_column(h))
      metric_cols.push_back(i);
    else if (!nvtx_col && h.find("Push/Pop") != std::string::npos)
      nvtx_col = i;
  }

  // The units row comes first: its ID field is empty.
  std::vector<std::string> units(table.header.size());
  size_t first = 0;
  if (!table.rows.empty() && trim(table.rows[0].fields[*id_col]).empty()) {
    units = table.rows[0].fields;
    first = 1;
  }
  std::vector<std::string_view> all_values;
  for (size_t r = first; r < table.rows.size(); ++r)
    for (size_t c : metric_cols) all_values.push_back(table.rows[r].fields[c]);
  NumberStyle style = detect_style(all_values);

  for (size_t r = first; r < table.rows.size(); ++r) {
    const Record& row = table.rows[r];
    KernelMetrics k;
    KP_TRY(k.launch_index, parse_id(row.fields[*id_col], style, row.line));
    k.name = row.fields[*name_col];
    k.grid = dim3_or_zero(field(row, grid_col));
    k.block = dim3_or_zero(field(row, block_col));
    if (nvtx_col) {
      std::string_view nvtx = trim(row.fields[*nvtx_col]);
      if (!nvtx.empty()) k.text["nvtx"] = std::string(nvtx);
    }
    for (size_t c : metric_cols) {
      const std::string& name = table.header[c];
      k.units[name] = units[c];
      const std::string& v = row.fields[c];
      if (is_missing(v)) continue;
      if (auto d = to_number(v, style))
        k.values[name] = *d;
      else
        k.text[name] = std::string(trim(v));
    }
    kernels.push_back(std::move(k));
  }
  return kernels;
}

const char* to_string(NcuRuleType t) {
  switch (t) {
    case NcuRuleType::kOptimization: return "OPT";
    case NcuRuleType::kWarning: return "WRN";
    case NcuRuleType::kInfo: return "INF";
    case NcuRuleType::kError: return "ERR";
    case NcuRuleType::kOk: return "OK";
  }
  return "?";
}

std::optional<NcuRuleType> ncu_rule_type_from_string(std::string_view s) {
  for (auto t :
       {NcuRuleType::kOptimization, NcuRuleType::kWarning, NcuRuleType::kInfo, NcuRuleType::kError, NcuRuleType::kOk})
    if (s == to_string(t)) return t;
  return std::nullopt;
}

const NcuKernelDetails* NcuDetails::find(int64_t launch_index) const {
  for (const auto& k : kernels)
    if (k.launch_index == launch_index) return &k;
  return nullptr;
}

Result<NcuDetails> parse_ncu_details_csv(std::string_view text) {
  KP_TRY(Table table, read_table(text));
  NcuDetails details;
  if (!table.found) return details;
  auto id_col = table.column("ID"), name_col = table.column("Kernel Name"), value_col = table.column("Metric Value");
  if (!id_col || !name_col || !value_col)
    return make_error(ErrorCode::kTool,
                      fmt::format("ncu CSV header has no \"{}\" column: this is not the details page (run ncu with "
                                  "--page details)",
                                  !id_col     ? "ID"
                                  : !name_col ? "Kernel Name"
                                              : "Metric Value"));
  auto grid_col = table.column("Grid Size"), block_col = table.column("Block Size");
  auto section_col = table.column("Section Name"), metric_col = table.column("Metric Name");
  auto unit_col = table.column("Metric Unit");
  auto rule_col = table.column("Rule Name"), type_col = table.column("Rule Type");
  auto desc_col = table.column("Rule Description"), speedup_type_col = table.column("Estimated Speedup Type");
  auto speedup_col = table.column("Estimated Speedup");

  std::vector<std::string> all_values;
  for (const auto& row : table.rows) {
    all_values.push_back(field(row, value_col));
    all_values.push_back(field(row, speedup_col));
  }
  NumberStyle style = detect_style(all_values);

  std::map<int64_t, size_t> index;  // ID -> position in details.kernels
  for (const auto& row : table.rows) {
    KP_TRY(int64_t id, parse_id(row.fields[*id_col], style, row.line));
    auto [it, inserted] = index.emplace(id, details.kernels.size());
    if (inserted) {
      NcuKernelDetails k;
      k.launch_index = id;
      k.name = row.fields[*name_col];
      k.grid = dim3_or_zero(field(row, grid_col));
      k.block = dim3_or_zero(field(row, block_col));
      details.kernels.push_back(std::move(k));
    }
    NcuKernelDetails& k = details.kernels[it->second];
    std::string rule = field(row, rule_col);
    if (!trim(rule).empty()) {
      NcuRuleResult r;
      r.section = field(row, section_col);
      r.rule = std::string(trim(rule));
      r.type_text = std::string(trim(field(row, type_col)));
      r.type = ncu_rule_type_from_string(r.type_text);
      r.description = field(row, desc_col);
      r.speedup_type = std::string(trim(field(row, speedup_type_col)));
      std::string speedup = field(row, speedup_col);
      if (!is_missing(speedup)) r.estimated_speedup_pct = to_number(speedup, style);
      k.rules.push_back(std::move(r));
      continue;
    }
    NcuDetailMetric m;
    m.section = field(row, section_col);
    m.name = field(row, metric_col);
    m.unit = field(row, unit_col);
    std::string v = field(row, value_col);
    if (m.name.empty() && is_missing(v)) continue;
    if (!is_missing(v)) {
      m.value = to_number(v, style);
      if (!m.value) m.text = std::string(trim(v));
    }
    k.metrics.push_back(std::move(m));
  }
  return details;
}

}  // namespace kp::profile
