#include "task/native_task_loader.h"

#include <regex>
#include <set>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "util/strings.h"

namespace kp::task {
namespace {

namespace fs = std::filesystem;

Error invalid(std::string_view origin, const std::string& what) {
  return make_error(ErrorCode::kInvalidInput, fmt::format("{}: {}", origin, what));
}

Result<int64_t> evaluate_dim(const toml::node& node, const SymbolTable& symbols, std::string_view origin,
                             const std::string& where, std::string* text) {
  if (auto i = node.value_exact<int64_t>()) {
    *text = std::to_string(*i);
    if (*i < 1) return invalid(origin, fmt::format("{}: dimension {} must be >= 1", where, *i));
    return *i;
  }
  if (auto s = node.value_exact<std::string>()) {
    *text = *s;
    auto v = evaluate_expression(*s, symbols);
    if (!v.ok()) return invalid(origin, fmt::format("{}: {}", where, v.error().message));
    if (!v->is_integer) return invalid(origin, fmt::format("{}: dimension \"{}\" is not an integer", where, *s));
    if (v->i < 1) return invalid(origin, fmt::format("{}: dimension \"{}\" = {} must be >= 1", where, *s, v->i));
    return v->i;
  }
  return invalid(origin, fmt::format("{}: each dimension must be an integer or a string expression", where));
}

Result<Distribution> parse_distribution(const toml::node* node, DType dtype, std::string_view origin,
                                        const std::string& where) {
  Distribution d;
  if (dtype == DType::kBool) d = {DistKind::kBernoulli, 0.5, 0};
  else if (!is_floating(dtype)) d = {DistKind::kRandint, 0, 100};
  if (!node) return d;
  const toml::table* t = node->as_table();
  if (!t) return invalid(origin, fmt::format("{}.init must be a table like {{ dist = \"normal\", mean = 0.0, std = 1.0 }}", where));
  auto name = (*t)["dist"].value<std::string>();
  if (!name) return invalid(origin, fmt::format("{}.init.dist is missing (normal, uniform, randint, bernoulli)", where));
  auto kind = dist_kind_from_string(*name);
  if (!kind) return invalid(origin, fmt::format("{}.init.dist = \"{}\" is unknown; use normal, uniform, randint or bernoulli", where, *name));
  d.kind = *kind;
  auto get = [&](const char* key, double def) { return (*t)[key].value<double>().value_or(def); };
  switch (*kind) {
    case DistKind::kNormal:
      d.a = get("mean", 0); d.b = get("std", 1);
      if (!is_floating(dtype)) return invalid(origin, fmt::format("{}: normal needs a floating dtype; use randint for {}", where, to_string(dtype)));
      if (d.b < 0) return invalid(origin, fmt::format("{}.init.std must be >= 0", where));
      break;
    case DistKind::kUniform:
      d.a = get("low", 0); d.b = get("high", 1);
      if (!is_floating(dtype)) return invalid(origin, fmt::format("{}: uniform needs a floating dtype; use randint for {}", where, to_string(dtype)));
      if (!(d.a < d.b)) return invalid(origin, fmt::format("{}.init: low must be < high", where));
      break;
    case DistKind::kRandint:
      d.a = get("low", 0); d.b = get("high", 100);
      if (dtype == DType::kBool) return invalid(origin, fmt::format("{}: use bernoulli for bool", where));
      if (!(d.a < d.b)) return invalid(origin, fmt::format("{}.init: low must be < high", where));
      break;
    case DistKind::kBernoulli:
      d.a = get("p", 0.5); d.b = 0;
      if (d.a < 0 || d.a > 1) return invalid(origin, fmt::format("{}.init.p must be in [0, 1]", where));
      break;
  }
  return d;
}

Result<std::vector<TensorSpec>> parse_tensors(const toml::table& root, const char* key, bool is_input,
                                              const SymbolTable& symbols, std::string_view origin,
                                              std::set<std::string>& names) {
  std::vector<TensorSpec> out;
  const toml::node* node = root.get(key);
  if (!node) {
    if (is_input) return out;
    return invalid(origin, "no [[outputs]]: a task needs at least one output tensor");
  }
  const toml::array* arr = node->as_array();
  if (!arr) return invalid(origin, fmt::format("'{}' must be an array of tables: write [[{}]]", key, key));
  for (size_t i = 0; i < arr->size(); ++i) {
    const toml::table* t = (*arr)[i].as_table();
    std::string where = fmt::format("{}[{}]", key, i);
    if (!t) return invalid(origin, fmt::format("{} must be a table", where));
    TensorSpec spec;
    auto name = (*t)["name"].value<std::string>();
    if (!name || name->empty()) return invalid(origin, fmt::format("{}.name is missing", where));
    spec.name = *name;
    where = fmt::format("{} '{}'", key, spec.name);
    if (!names.insert(spec.name).second) return invalid(origin, fmt::format("{}: the name is used twice", where));
    auto dtype_name = (*t)["dtype"].value<std::string>();
    if (!dtype_name) return invalid(origin, fmt::format("{}: dtype is missing (fp32, fp16, bf16, int32, int64, bool, fp64)", where));
    auto dtype = dtype_from_string(*dtype_name);
    if (!dtype) return invalid(origin, fmt::format("{}: unknown dtype \"{}\"; use one of fp32, fp16, bf16, int32, int64, bool, fp64", where, *dtype_name));
    spec.dtype = *dtype;
    const toml::array* shape = (*t)["shape"].as_array();
    if (!shape) return invalid(origin, fmt::format("{}: shape is missing; write shape = [\"M\", \"N\"] (use [] for a scalar tensor)", where));
    if (shape->size() > 8) return invalid(origin, fmt::format("{}: rank {} exceeds the ABI's 8", where, shape->size()));
    for (const auto& dim : *shape) {
      std::string text;
      KP_TRY(int64_t v, evaluate_dim(dim, symbols, origin, where, &text));
      spec.shape.push_back(v);
      spec.shape_text.push_back(text);
    }
    if (is_input) {
      KP_TRY(spec.init, parse_distribution((*t).get("init"), spec.dtype, origin, where));
    } else if ((*t).get("init")) {
      return invalid(origin, fmt::format("{}: outputs take no init", where));
    }
    out.push_back(std::move(spec));
  }
  if (!is_input && out.empty()) return invalid(origin, "[[outputs]] is empty: a task needs at least one output");
  return out;
}

Result<std::vector<std::string>> string_list(const toml::table* t, const char* key, std::string_view origin) {
  std::vector<std::string> out;
  if (!t || !t->get(key)) return out;
  const toml::array* arr = t->get(key)->as_array();
  if (!arr) return invalid(origin, fmt::format("build.{} must be a list of strings", key));
  static const std::set<std::string> known = {"cublas", "cublasLt", "cudnn", "curand", "cufft"};
  for (const auto& v : *arr) {
    auto s = v.value<std::string>();
    if (!s) return invalid(origin, fmt::format("build.{} must be a list of strings", key));
    if (!known.count(*s)) return invalid(origin, fmt::format("build.{}: unknown library \"{}\"; known: cublas, cublasLt, cudnn, curand, cufft", key, *s));
    out.push_back(*s);
  }
  return out;
}

}  // namespace

Result<Task> parse_native_task(std::string_view text, const fs::path& dir, std::string_view origin) {
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    return invalid(origin, fmt::format("line {}, column {}: {} (not valid TOML)", b.line, b.column, e.description()));
  }
  Task task;
  task.kind = TaskKind::kNative;
  task.dir = dir;
  auto name = root["name"].value<std::string>();
  if (!name || name->empty()) return invalid(origin, "'name' is missing; add name = \"my_task\"");
  if (!std::regex_match(*name, std::regex("[A-Za-z0-9_.-]+")))
    return invalid(origin, fmt::format("name \"{}\" may use only letters, digits, '_', '.', '-'", *name));
  task.name = *name;
  task.description = root["description"].value_or(std::string());
  task.category = root["category"].value_or(std::string());

  if (const toml::node* sym = root.get("symbols")) {
    const toml::table* t = sym->as_table();
    if (!t) return invalid(origin, "[symbols] must be a table of integers, like N = 4096");
    for (const auto& [k, v] : *t) {
      auto i = v.value_exact<int64_t>();
      if (!i) return invalid(origin, fmt::format("symbols.{} must be an integer", k.str()));
      if (*i < 1) return invalid(origin, fmt::format("symbols.{} = {} must be >= 1", k.str(), *i));
      task.symbols.emplace(std::string(k.str()), *i);
    }
  }
  std::set<std::string> names;
  KP_TRY(task.inputs, parse_tensors(root, "inputs", true, task.symbols, origin, names));
  KP_TRY(task.outputs, parse_tensors(root, "outputs", false, task.symbols, origin, names));

  if (const toml::node* sc = root.get("scalars")) {
    const toml::array* arr = sc->as_array();
    if (!arr) return invalid(origin, "'scalars' must be an array of tables: write [[scalars]]");
    for (const auto& n : *arr) {
      const toml::table* t = n.as_table();
      if (!t) return invalid(origin, "each [[scalars]] entry must be a table");
      ScalarSpec s;
      auto sname = (*t)["name"].value<std::string>();
      if (!sname) return invalid(origin, "[[scalars]]: name is missing");
      s.name = *sname;
      if (!names.insert(s.name).second) return invalid(origin, fmt::format("scalar '{}': the name is used twice", s.name));
      const toml::node* v = t->get("value");
      if (!v) return invalid(origin, fmt::format("scalar '{}': value is missing", s.name));
      if (auto i = v->value_exact<int64_t>()) {
        s.is_integer = true; s.i = *i; s.f = static_cast<double>(*i);
      } else if (auto f = v->value_exact<double>()) {
        s.is_integer = false; s.f = *f; s.i = static_cast<int64_t>(*f);
      } else {
        return invalid(origin, fmt::format("scalar '{}': value must be a number", s.name));
      }
      task.scalars.push_back(s);
    }
  }

  if (const toml::node* tol = root.get("tolerance")) {
    const toml::table* t = tol->as_table();
    if (!t) return invalid(origin, "[tolerance] must be a table with atol, rtol, rel_norm");
    Tolerance d = default_tolerance(task.outputs.front().dtype);
    Tolerance tl;
    tl.atol = (*t)["atol"].value<double>().value_or(d.atol);
    tl.rtol = (*t)["rtol"].value<double>().value_or(d.rtol);
    tl.rel_norm = (*t)["rel_norm"].value<double>().value_or(d.rel_norm);
    if (tl.atol < 0 || tl.rtol < 0 || tl.rel_norm < 0) return invalid(origin, "tolerance values must be >= 0");
    for (const auto& [k, _] : *t) {
      if (k != "atol" && k != "rtol" && k != "rel_norm")
        return invalid(origin, fmt::format("tolerance.{} is unknown; use atol, rtol, rel_norm", k.str()));
    }
    task.tolerance = tl;
  }

  if (const toml::table* cost = root["cost"].as_table()) {
    for (const char* key : {"flops", "bytes"}) {
      const toml::node* n = cost->get(key);
      if (!n) continue;
      std::string expr;
      if (auto s = n->value_exact<std::string>()) expr = *s;
      else if (auto v = n->value<double>()) expr = fmt::format("{}", *v);
      else return invalid(origin, fmt::format("cost.{} must be an expression string like \"2*M*N*K\"", key));
      auto v = evaluate_expression(expr, task.symbols);
      if (!v.ok()) return invalid(origin, fmt::format("cost.{}: {}", key, v.error().message));
      if (v->d < 0) return invalid(origin, fmt::format("cost.{} is negative", key));
      if (std::string(key) == "flops") { task.flops_expr = expr; task.ideal_flops = v->d; }
      else { task.bytes_expr = expr; task.ideal_bytes = v->d; }
    }
  }
  const toml::table* build = root["build"].as_table();
  KP_TRY(task.reference_libraries, string_list(build, "libraries", origin));
  KP_TRY(task.candidate_libraries, string_list(build, "candidate_libraries", origin));

  task.reference_path = dir / "reference.cu";
  if (fs::exists(dir / "seed.cu")) task.seed_path = dir / "seed.cu";
  return task;
}

Result<Task> load_native_task(const fs::path& path) {
  fs::path dir = path;
  std::error_code ec;
  if (fs::is_regular_file(path, ec) && path.filename() == "task.toml") dir = path.parent_path();
  if (!fs::is_directory(dir, ec))
    return make_error(ErrorCode::kNotFound,
                      fmt::format("{}: no such task folder (a native task is a folder with task.toml and reference.cu)", path.string()));
  dir = fs::absolute(dir).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();
  fs::path toml_path = dir / "task.toml";
  auto text = read_file(toml_path.string());
  if (!text.ok())
    return make_error(ErrorCode::kNotFound,
                      fmt::format("{}: no task.toml in the task folder (see docs/task-format.md)", toml_path.string()));
  KP_TRY(Task task, parse_native_task(*text, dir, toml_path.string()));
  if (!fs::exists(task.reference_path))
    return make_error(ErrorCode::kNotFound,
                      fmt::format("{}: the task has no reference.cu; write one that exports kp_run (include/kernelpro/kp_abi.h)",
                                  task.reference_path.string()));
  return task;
}

}  // namespace kp::task
