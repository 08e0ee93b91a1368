// The nvcc pipeline: a candidate or reference .cu becomes a shared object, built by nvcc in a
// pool of parallel jobs and cached by content (DESIGN.md section 3).
//
// The cache key is the SHA-256 of: the source text, the headers under include/kernelpro/, the full nvcc command line
// (flags, arch, -D values of KP_TUNE parameters, libraries), `nvcc --version` and the version of
// what the builder records beside the .so (kBuildMetaVersion), so that an entry never lacks a
// field that a newer kernelpro reads from it. A hit costs
// a file lookup; a miss runs nvcc with a timeout in a scratch directory and stores the result
// atomically, so concurrent kernelpro processes share one cache safely.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "build/artifact_cache.h"
#include "build/diagnostics.h"
#include "build/ptxas_report.h"
#include "util/result.h"
#include "util/thread_pool.h"

namespace kp::build {

// The version of the metadata stored with each cache entry. 2: needed_libraries and
// imported_symbols (for the library policy) beside exports_kp_run.
constexpr int kBuildMetaVersion = 2;

// CUTLASS as the builder needs it: include directories and the version (part of the cache key).
struct CutlassHeaders {
  std::vector<std::filesystem::path> include_dirs;
  std::string version;
};

struct BuildOptions {
  // The nvcc to run: a path, or a name searched in PATH. Default "nvcc".
  std::string nvcc = "nvcc";
  // Target architecture, e.g. "sm_90a". Empty: the first GPU's, from nvidia-smi (compute
  // capability 9.0 gives sm_90a, for WGMMA/TMA); "sm_90a" when there is no GPU.
  std::string arch;
  // Directory holding kernelpro/kp_abi.h. Default: the source tree's include/.
  std::filesystem::path include_dir;
  // Extra include directories and flags appended to every build.
  std::vector<std::filesystem::path> include_dirs;
  std::vector<std::string> extra_flags;
  // CUTLASS, for a candidate that includes <cute/...> or <cutlass/...>: asked once, when the
  // first such candidate is built, which also gets --expt-relaxed-constexpr (CuTe's constexpr
  // functions are called from device code). Its error (no CUTLASS) becomes that candidate's
  // compile error. Empty: such candidates are built without it (and fail to find the headers).
  std::function<Result<CutlassHeaders>()> find_cutlass;
  // Cache root. Default: $XDG_CACHE_HOME/kernelpro/build or ~/.cache/kernelpro/build (the CLI
  // resolves it; library code reads no environment).
  std::filesystem::path cache_dir;
  bool use_cache = true;
  // Parallel nvcc jobs in build_all. 0: one per CPU core.
  int jobs = 0;
  // nvcc is killed after this many seconds. Default 300.
  double timeout_s = 300;
};

struct BuildRequest {
  std::filesystem::path source;               // a .cu file
  std::vector<std::string> libraries;         // "cublas", "cublasLt", "cudnn", "curand", "cufft"
  std::map<std::string, long long> tune;      // KP_TUNE overrides; others take their default
};

// Whether a source includes CuTe or CUTLASS headers (#include <cute/...> or "cutlass/...").
bool uses_cutlass(std::string_view source);

// "sm_90a" for 9.0 (Hopper's arch-specific features), "sm_100a" for 10.0, "sm_XY" otherwise.
std::string arch_for_compute_capability(int major, int minor);

struct BuildResult {
  bool ok = false;                        // nvcc succeeded and the .so exists
  std::filesystem::path artifact;         // the cached .so (when ok)
  std::string log;                        // nvcc's stdout and stderr
  std::vector<Diagnostic> diagnostics;    // parsed from log
  PtxasReport resources;                  // parsed -Xptxas -v report (when ok)
  bool cache_hit = false;
  double seconds = 0;                     // wall time of this build call (lookup or nvcc)
  std::string key;                        // cache key
  std::vector<std::string> command;       // the nvcc command line
  std::map<std::string, long long> tune;  // the KP_TUNE values compiled in
  // Whether the shared object exports kp_run, read from its dynamic symbol table with `nm -D`
  // (nullopt when nm is unavailable: the worker's dlsym then decides).
  std::optional<bool> exports_kp_run;
  // The shared libraries the .so needs (DT_NEEDED, from `readelf -d`), e.g. "libcublas.so.13";
  // nullopt when readelf is unavailable.
  std::optional<std::vector<std::string>> needed_libraries;
  // What the source's own code imports: the undefined symbols of the object nvcc compiled it to
  // (kept with --keep), e.g. "cublasSgemm_v2", "dlopen". Read from the object, not the .so,
  // because the static CUDA runtime linked into every .so imports dlopen and dlmopen itself.
  // nullopt when nm is unavailable or the object was not found.
  std::optional<std::vector<std::string>> imported_symbols;
};

class Builder {
 public:
  explicit Builder(BuildOptions options);
  ~Builder();

  // Builds one source. A compile failure is a BuildResult with ok = false and diagnostics;
  // an Error means the build could not be attempted (nvcc missing, source unreadable, a bad
  // KP_TUNE override), with a message that says what to do.
  Result<BuildResult> build(const BuildRequest& request);
  // Builds several sources on the pool, in parallel; results in request order. Identical
  // requests in flight at once are built once.
  std::vector<Result<BuildResult>> build_all(const std::vector<BuildRequest>& requests);

  // The resolved architecture and `nvcc --version`'s last line (after the first build or
  // a call to toolchain()).
  Result<std::string> toolchain();
  const std::string& arch() const { return options_.arch; }

 private:
  Result<BuildResult> compile(const BuildRequest& request, const std::string& key, std::vector<std::string> command,
                              const std::vector<std::string>& link, std::map<std::string, long long> tune);
  BuildOptions options_;
  std::mutex mutex_;
  std::string nvcc_version_;  // guarded by mutex_
  std::optional<Result<CutlassHeaders>> cutlass_;  // guarded by mutex_: find_cutlass's answer
  std::unique_ptr<ArtifactCache> cache_;
  std::unique_ptr<ThreadPool> pool_;
};

// One of a fixed number of slots for nvcc, shared by every kernelpro process of a campaign, so
// that its lanes together run at most N compilers on the host's cores. KP_BUILD_SLOTS="DIR:N"
// (set by `kernelpro bench run`) names the slots: files DIR/slot-0 .. slot-(N-1), each held by an
// flock for as long as its nvcc runs. Without the variable there is no limit.
class BuildSlot {
 public:
  // Waits for a free slot of `spec` ("DIR:N"). kInvalidInput for a malformed spec, kIo when the
  // slot files cannot be made.
  static Result<BuildSlot> take(const std::string& spec);
  BuildSlot(BuildSlot&& o) noexcept : fd_(o.fd_), index_(o.index_) { o.fd_ = -1; }
  BuildSlot& operator=(BuildSlot&&) = delete;
  BuildSlot(const BuildSlot&) = delete;
  ~BuildSlot();
  int index() const { return index_; }

 private:
  BuildSlot(int fd, int index) : fd_(fd), index_(index) {}
  int fd_ = -1;
  int index_ = -1;
};

}  // namespace kp::build
