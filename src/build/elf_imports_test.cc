#include "build/elf_imports.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "tests/support/paths.h"
#include "util/strings.h"

namespace kp::build {
namespace {

std::string data(const char* name) { return read_file((testing::test_data_dir() / "elf" / name).string()).value(); }

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// readelf -d of examples/gemm_fp32/reference.cu built with -lcublas and an rpath.
TEST(ElfImports, NeededLibrariesComeFromTheDynamicSection) {
  auto libs = parse_needed_libraries(data("gemm_fp32_reference.readelf.txt"));
  EXPECT_EQ(libs, (std::vector<std::string>{"libcublas.so.13", "libstdc++.so.6", "libgcc_s.so.1", "libc.so.6",
                                            "ld-linux-x86-64.so.2"}));
  EXPECT_TRUE(parse_needed_libraries("").empty());
}

// nm --undefined-only of the object of tests/data/cheats/native/dlopen_cublas.cu: what its own
// code imports.
TEST(ElfImports, UndefinedSymbolsOfTheCandidatesObject) {
  auto syms = parse_undefined_symbols(data("dlopen_cublas.nm.txt"));
  EXPECT_TRUE(has(syms, "dlopen"));
  EXPECT_TRUE(has(syms, "dlsym"));
  EXPECT_TRUE(has(syms, "atexit"));
  EXPECT_FALSE(has(syms, "dlmopen"));
  EXPECT_TRUE(std::is_sorted(syms.begin(), syms.end()));
}

// nm -D --undefined-only of the linked .so: versions are stripped, and the static CUDA runtime
// linked into every candidate imports dlopen and dlmopen itself (which is why the library policy
// reads the object's symbols, not these).
TEST(ElfImports, DynamicSymbolsLoseTheirVersions) {
  auto syms = parse_undefined_symbols(data("dlopen_cublas_so.nm.txt"));
  EXPECT_TRUE(has(syms, "dlopen"));
  EXPECT_TRUE(has(syms, "dlmopen"));
  EXPECT_TRUE(has(syms, "pthread_create"));
  for (const auto& s : syms) EXPECT_EQ(s.find('@'), std::string::npos) << s;
  // Weak undefined symbols count too; defined ones never appear.
  EXPECT_EQ(parse_undefined_symbols("                 w __gmon_start__\n0000000000001000 T kp_run\n"),
            std::vector<std::string>{"__gmon_start__"});
}

}  // namespace
}  // namespace kp::build
