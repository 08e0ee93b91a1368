#include "eval/library_policy.h"

#include <gtest/gtest.h>

namespace kp::eval {
namespace {

build::BuildResult built(std::vector<std::string> needed, std::vector<std::string> imported) {
  build::BuildResult b;
  b.ok = true;
  b.needed_libraries = std::move(needed);
  b.imported_symbols = std::move(imported);
  return b;
}

const std::vector<std::string> kPlain = {"libstdc++.so.6", "libgcc_s.so.1", "libc.so.6", "ld-linux-x86-64.so.2"};

TEST(LibraryPolicy, LibrariesAreKnownBySonameAndBySymbol) {
  EXPECT_EQ(cuda_library_of_soname("libcublas.so.13"), "cublas");
  EXPECT_EQ(cuda_library_of_soname("libcublasLt.so.13"), "cublasLt");
  EXPECT_EQ(cuda_library_of_soname("libcudnn_ops.so.9"), "cudnn");
  EXPECT_EQ(cuda_library_of_soname("libnvrtc-builtins.so.13.0"), "nvrtc");
  EXPECT_EQ(cuda_library_of_soname("libcudart.so.13"), std::nullopt);
  EXPECT_EQ(cuda_library_of_soname("libcuda.so.1"), std::nullopt);
  EXPECT_EQ(cuda_library_of_soname("libc.so.6"), std::nullopt);
  EXPECT_EQ(cuda_library_of_symbol("cublasSgemm_v2"), "cublas");
  EXPECT_EQ(cuda_library_of_symbol("cublasLtMatmul"), "cublasLt");
  EXPECT_EQ(cuda_library_of_symbol("cudnnConvolutionForward"), "cudnn");
  EXPECT_EQ(cuda_library_of_symbol("ncclAllReduce"), "nccl");
  // The runtime, the driver and C++ names of header-only libraries are not library calls.
  EXPECT_EQ(cuda_library_of_symbol("cudaLaunchKernel"), std::nullopt);
  EXPECT_EQ(cuda_library_of_symbol("cuTensorMapEncodeTiled"), std::nullopt);
  EXPECT_EQ(cuda_library_of_symbol("_ZN7cufftdx6detail4plan"), std::nullopt);
  EXPECT_EQ(cuda_library_of_symbol("curand_init"), std::nullopt);
}

TEST(LibraryPolicy, PlainCandidatePasses) {
  EXPECT_FALSE(find_forbidden_library(built(kPlain, {"__cudaLaunchKernel", "cudaGetLastError", "snprintf"}), {}));
}

TEST(LibraryPolicy, LinkedLibraryNeedsThePermissionOfTheTask) {
  auto needed = kPlain;
  needed.insert(needed.begin(), "libcublas.so.13");
  auto v = find_forbidden_library(built(needed, {"cublasSgemm_v2"}), {});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->library, "cublas");
  EXPECT_NE(v->reason.find("links libcublas.so.13 (cuBLAS)"), std::string::npos) << v->reason;
  EXPECT_NE(v->reason.find("candidate_libraries = [\"cublas\"]"), std::string::npos) << v->reason;
  EXPECT_FALSE(find_forbidden_library(built(needed, {"cublasSgemm_v2"}), {"cublas"}));
}

TEST(LibraryPolicy, CallsIntoAnUnlinkedLibraryAreSeenInTheImports) {
  auto v = find_forbidden_library(built(kPlain, {"cublasCreate_v2", "cublasSgemm_v2"}), {});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->library, "cublas");
  EXPECT_NE(v->reason.find("calls cublasCreate_v2 from cuBLAS"), std::string::npos) << v->reason;
  // Allowing cuBLAS does not allow cuBLASLt.
  auto lt = find_forbidden_library(built(kPlain, {"cublasLtMatmul"}), {"cublas"});
  ASSERT_TRUE(lt);
  EXPECT_EQ(lt->library, "cublasLt");
}

TEST(LibraryPolicy, DlopenIsRefusedWhateverTheTaskAllows) {
  for (const char* loader : {"dlopen", "dlmopen", "__libc_dlopen_mode"}) {
    auto v = find_forbidden_library(built(kPlain, {"dlsym", loader}), {"cublas"});
    ASSERT_TRUE(v) << loader;
    EXPECT_EQ(v->library, "dlopen");
    EXPECT_NE(v->reason.find(std::string("calls ") + loader), std::string::npos) << v->reason;
  }
}

TEST(LibraryPolicy, DlsymIsRefusedSinceItReachesTheLoaderUnimported) {
  for (const char* lookup : {"dlsym", "dlvsym"}) {
    auto v = find_forbidden_library(built(kPlain, {lookup, "cudaLaunchKernel"}), {"cublas"});
    ASSERT_TRUE(v) << lookup;
    EXPECT_EQ(v->library, "dlopen");
    EXPECT_NE(v->reason.find(std::string("calls ") + lookup), std::string::npos) << v->reason;
  }
  EXPECT_FALSE(find_forbidden_library(built(kPlain, {"cudaLaunchKernel"}), {})) << "an honest build";
}

TEST(LibraryPolicy, TheLoadersListsAreRefusedSinceTheyFindTheReferencesLibraries) {
  // Issue 41's red team: dl_iterate_phdr found the cuBLAS the reference had loaded, and a
  // hand-read symbol table called it, with no dlopen and no dlsym.
  for (const char* walk : {"dl_iterate_phdr", "dlinfo", "dladdr", "dladdr1"}) {
    auto v = find_forbidden_library(built(kPlain, {walk, "cudaLaunchKernel"}), {});
    ASSERT_TRUE(v) << walk;
    EXPECT_EQ(v->library, "dlopen");
    EXPECT_NE(v->reason.find(std::string("calls ") + walk), std::string::npos) << v->reason;
  }
}

TEST(LibraryPolicy, NothingRecordedNothingDecided) {
  build::BuildResult b;
  b.ok = true;
  EXPECT_FALSE(find_forbidden_library(b, {}));
}

}  // namespace
}  // namespace kp::eval
