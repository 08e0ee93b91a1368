// Loads a KernelBench problem: one .py file that defines `class Model` (the reference, a
// torch.nn.Module), `def get_inputs()` and `def get_init_inputs()`. kernelpro never runs Python
// itself: the loader checks the text and fills the task's identity; the Python worker
// (python/kernelpro_torch) imports the file.
#pragma once

#include <filesystem>
#include <string_view>

#include "task/task.h"
#include "util/result.h"

namespace kp::task {

// Loads the problem at `path`. The Task has kind kKernelBench, name = the file name
// ("23_Softmax.py"), reference_path and dir absolute, problem_id = the integer before the first
// '_' of the file name (0 when there is none), and, when the parent folder is named levelN,
// level = N and category = "levelN" (else 0 and ""). description is the first line of Model's
// docstring, when it has one.
// Errors: kNotFound when the file does not exist; kInvalidInput when it is not a .py file, or
// when its text lacks a top-level `class Model`, `def get_inputs` or `def get_init_inputs` (the
// message names each missing one); kIo when it cannot be read.
Result<Task> load_kernelbench_problem(const std::filesystem::path& path);

// The same checks on text already read; `path` gives the name, folder and messages.
Result<Task> parse_kernelbench_problem(std::string_view text, const std::filesystem::path& path);

}  // namespace kp::task
