// What a built shared object takes from outside itself: the libraries the dynamic loader must
// load for it (DT_NEEDED) and the symbols its code calls but does not define. Parsed from the
// text of binutils' `readelf -d` and `nm --undefined-only`, so that the evaluator can tell,
// without a GPU, that a candidate links or loads a library its task forbids (eval/library_policy.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kp::build {

// The "Shared library: [name]" entries of `readelf -d` output, in order, e.g. "libcublas.so.13".
std::vector<std::string> parse_needed_libraries(std::string_view readelf_dynamic);

// The names of the undefined ("U") and weak undefined ("w", "v") symbols of `nm
// --undefined-only` or `nm -D --undefined-only` output, sorted and unique, with any symbol version
// removed ("dlopen@GLIBC_2.34" -> "dlopen"). Lines of other kinds and "file:" headers are skipped.
std::vector<std::string> parse_undefined_symbols(std::string_view nm_output);

}  // namespace kp::build
