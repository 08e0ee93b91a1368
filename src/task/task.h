// The task model: what a kernel must compute, on which tensors, to what tolerance, and its
// ideal cost. Loaders (native_task_loader.h, kernelbench_loader.h) produce it; nothing below
// the loaders reads task files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "task/dtype.h"
#include "util/expr.h"

namespace kp::task {

// How input values are drawn. Stored and printed by name.
enum class DistKind { kNormal, kUniform, kRandint, kBernoulli };
const char* to_string(DistKind kind);
std::optional<DistKind> dist_kind_from_string(std::string_view name);

struct Distribution {
  DistKind kind = DistKind::kNormal;
  // normal: a = mean, b = std. uniform: [a, b). randint: integers in [a, b). bernoulli: a = p.
  double a = 0.0;
  double b = 1.0;
};

struct TensorSpec {
  std::string name;
  DType dtype = DType::kFp32;
  std::vector<int64_t> shape;            // evaluated dimensions, each >= 1
  std::vector<std::string> shape_text;   // as written in the task (symbols or numbers)
  Distribution init;                     // inputs only
  int64_t numel() const;
  uint64_t bytes() const;
};

struct ScalarSpec {
  std::string name;
  bool is_integer = false;  // kind 1 in the ABI
  double f = 0.0;           // always set
  int64_t i = 0;            // always set (truncated for reals)
};

// Pass rule for one output element: |out - ref| <= atol + rtol * |ref|; and for the whole output
// ||out - ref||_2 / ||ref||_2 <= rel_norm. Integer and bool outputs compare exactly.
struct Tolerance {
  double atol = 0;
  double rtol = 0;
  double rel_norm = 0;
};
// The default for an output dtype (docs/task-format.md lists them).
Tolerance default_tolerance(DType dtype);

enum class TaskKind { kNative, kKernelBench };
const char* to_string(TaskKind kind);

// A KernelBench task is a problem file (a .py with Model, get_inputs, get_init_inputs) that the
// Python worker imports: it has no tensor specs, scalars, tolerance or ideal cost here (all
// empty or 0); name, category, dir, reference_path, level and problem_id are set.
struct Task {
  TaskKind kind = TaskKind::kNative;
  std::string name;                       // native: task.toml's name; KernelBench: "23_Softmax.py"
  std::string description;
  std::string category;                   // KernelBench: "level1".. when the folder is levelN
  std::filesystem::path dir;              // the task folder (absolute)
  std::filesystem::path reference_path;   // native: reference.cu; KernelBench: the problem .py
  int level = 0;                          // KernelBench: N of the levelN folder; 0 otherwise
  int problem_id = 0;                     // KernelBench: the number before the first '_'; 0 otherwise
  std::optional<std::filesystem::path> seed_path;
  SymbolTable symbols;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::vector<ScalarSpec> scalars;
  std::optional<Tolerance> tolerance;     // task-wide override; else per output dtype
  std::string flops_expr, bytes_expr;     // as written
  double ideal_flops = 0;                 // evaluated; 0 when not given
  double ideal_bytes = 0;                 // evaluated; 0 when not given
  std::vector<std::string> reference_libraries;  // linked into the reference (e.g. "cublas")
  std::vector<std::string> candidate_libraries;  // a candidate may link these; empty by default

  // The tolerance that applies to output i.
  Tolerance tolerance_for(size_t output_index) const;
  // Sum of the bytes of all inputs and outputs.
  uint64_t io_bytes() const;
};

}  // namespace kp::task
