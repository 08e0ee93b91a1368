// Loads a native task folder (docs/task-format.md): task.toml, reference.cu, optional seed.cu.
#pragma once

#include <filesystem>
#include <string_view>

#include "task/task.h"
#include "util/result.h"

namespace kp::task {

// Loads the task in `path`, which may be the folder or its task.toml. On failure returns
// kNotFound (missing folder, task.toml or reference.cu) or kInvalidInput (malformed TOML, an
// unknown dtype or distribution, a shape that does not evaluate, a duplicate name); the message
// names the file, the offending key and what to write instead.
Result<Task> load_native_task(const std::filesystem::path& path);

// Parses task.toml text; `dir` is the folder the paths are relative to and `origin` names the
// file in messages. Does not check that reference.cu exists (load_native_task does).
Result<Task> parse_native_task(std::string_view toml_text, const std::filesystem::path& dir,
                               std::string_view origin);

}  // namespace kp::task
