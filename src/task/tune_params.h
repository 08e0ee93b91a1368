// KP_TUNE, the tuning parameters a candidate declares in its own source
// (include/kernelpro/kp_abi.h): `KP_TUNE(BLOCK, 256, 128, 512)` names a parameter and its allowed
// values, the first being the default. The builder compiles the chosen values in as -D flags
// (build/builder.h); the search enumerates them (search/tune_space.h). The parser lives here,
// below both, because it reads text and needs neither.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace kp::task {

// A declared KP_TUNE parameter: its name and allowed values, the first being the default.
struct TuneParam {
  std::string name;
  std::vector<long long> values;
};

// Reads KP_TUNE(NAME, v0, v1, ...) declarations from source text, in order. Declarations in
// `//` comments, in lines that start with `*` and the macro's own `#define` are skipped.
// kInvalidInput when a declaration has no values or a non-integer value.
Result<std::vector<TuneParam>> parse_tune_params(std::string_view source);

}  // namespace kp::task
