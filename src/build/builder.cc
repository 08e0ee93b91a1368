#include "build/builder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <regex>
#include <thread>

#include <fmt/format.h>

#include "build/elf_imports.h"
#include "sys/subprocess.h"
#include "sys/temp_dir.h"
#include "task/tune_params.h"
#include "util/hash.h"
#include "util/strings.h"
#include "util/resource_root.h"

namespace kp::build {

namespace fs = std::filesystem;

namespace {

const std::map<std::string, std::string>& library_flags() {
  static const std::map<std::string, std::string> m = {
      {"cublas", "-lcublas"}, {"cublasLt", "-lcublasLt"}, {"cudnn", "-lcudnn"}, {"curand", "-lcurand"}, {"cufft", "-lcufft"}};
  return m;
}

std::string detect_arch(const std::string& fallback) {
  sys::Command c;
  c.argv = {"nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"};
  c.timeout = std::chrono::milliseconds(10000);
  auto r = sys::run(c);
  if (!r.ok() || !r->success()) return fallback;
  auto lines = split_lines(r->stdout_text);
  if (lines.empty()) return fallback;
  auto parts = split(std::string(trim(lines[0])), '.');
  if (parts.size() != 2) return fallback;
  try {
    return arch_for_compute_capability(std::stoi(parts[0]), std::stoi(parts[1]));
  } catch (...) {
    return fallback;
  }
}

// Whether the shared object's dynamic symbol table defines kp_run; nullopt without nm.
std::optional<bool> exports_kp_run(const fs::path& so) {
  sys::Command c;
  c.argv = {"nm", "-D", "--defined-only", so.string()};
  c.timeout = std::chrono::milliseconds(30000);
  auto r = sys::run(c);
  if (!r.ok() || !r->success()) return std::nullopt;
  for (const auto& line : split_lines(r->stdout_text)) {
    auto fields = split(std::string(trim(line)), ' ');
    if (!fields.empty() && fields.back() == "kp_run") return true;
  }
  return false;
}

// DT_NEEDED of the shared object; nullopt without readelf.
std::optional<std::vector<std::string>> needed_libraries(const fs::path& so) {
  sys::Command c;
  c.argv = {"readelf", "-d", so.string()};
  c.timeout = std::chrono::milliseconds(30000);
  auto r = sys::run(c);
  if (!r.ok() || !r->success()) return std::nullopt;
  return parse_needed_libraries(r->stdout_text);
}

// The undefined symbols of the objects nvcc kept in dir (--keep): the source's own, and not
// the device-link stub (<out stem>_dlink.o), which only registers the fatbinary. nullopt
// without nm or without an object.
std::optional<std::vector<std::string>> object_imports(const fs::path& dir, const fs::path& out) {
  const std::string dlink = out.stem().string() + "_dlink.o";
  std::string text;
  bool found = false;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".o" || e.path().filename() == dlink) continue;
    sys::Command c;
    c.argv = {"nm", "--undefined-only", e.path().string()};
    c.timeout = std::chrono::milliseconds(30000);
    auto r = sys::run(c);
    if (!r.ok() || !r->success()) return std::nullopt;
    text += r->stdout_text;
    found = true;
  }
  if (!found) return std::nullopt;
  return parse_undefined_symbols(text);
}

// The toolkit's library directory, from where nvcc is (its bin/../lib64), so that a shared object
// linked against cuBLAS finds it at dlopen time even when the loader's path lacks it.
std::optional<fs::path> toolkit_lib_dir(const std::string& nvcc) {
  fs::path exe = nvcc;
  if (nvcc.find('/') == std::string::npos) {
    const char* path = std::getenv("PATH");
    if (!path) return std::nullopt;
    for (const auto& dir : split(path, ':')) {
      if (!dir.empty() && fs::exists(fs::path(dir) / nvcc)) {
        exe = fs::path(dir) / nvcc;
        break;
      }
    }
  }
  std::error_code ec;
  fs::path lib = fs::weakly_canonical(exe, ec).parent_path().parent_path() / "lib64";
  if (ec || !fs::is_directory(lib)) return std::nullopt;
  return lib;
}

}  // namespace

bool uses_cutlass(std::string_view source) {
  static const std::regex include(R"re(^[ \t]*#[ \t]*include[ \t]*[<"](cute|cutlass)/)re", std::regex::multiline);
  return std::regex_search(source.begin(), source.end(), include);
}

std::string arch_for_compute_capability(int major, int minor) {
  std::string base = fmt::format("sm_{}{}", major, minor);
  if ((major == 9 && minor == 0) || (major == 10 && minor == 0)) return base + "a";
  return base;
}

Builder::Builder(BuildOptions options) : options_(std::move(options)) {
  if (options_.include_dir.empty()) options_.include_dir = resource_root() / "include";
  if (options_.arch.empty()) options_.arch = detect_arch("sm_90a");
  if (options_.jobs <= 0) options_.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (options_.cache_dir.empty()) options_.cache_dir = fs::temp_directory_path() / "kernelpro-build-cache";
  cache_ = std::make_unique<ArtifactCache>(options_.cache_dir);
}

Builder::~Builder() = default;

Result<std::string> Builder::toolchain() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!nvcc_version_.empty()) return nvcc_version_;
  sys::Command c;
  c.argv = {options_.nvcc, "--version"};
  c.timeout = std::chrono::milliseconds(30000);
  auto r = sys::run(c);
  if (!r.ok())
    return make_error(ErrorCode::kNotFound,
                      fmt::format("cannot run {}: {}; install the CUDA toolkit and put nvcc on PATH (or pass --nvcc)",
                                  options_.nvcc, r.error().message));
  if (!r->success())
    return make_error(ErrorCode::kTool, fmt::format("{} --version {}: {}", options_.nvcc, r->describe(), r->stderr_text));
  nvcc_version_ = std::string(trim(r->stdout_text));
  return nvcc_version_;
}

Result<BuildResult> Builder::build(const BuildRequest& request) {
  auto start = std::chrono::steady_clock::now();
  KP_TRY(std::string version, toolchain());
  auto source = read_file(request.source.string());
  if (!source.ok()) return std::move(source).error().wrap("reading the candidate");
  // Every header kernelpro ships to candidates (kp_abi.h, kp_check.h) is part of the key.
  std::vector<fs::path> headers;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(options_.include_dir / "kernelpro", ec))
    if (e.path().extension() == ".h") headers.push_back(e.path());
  std::sort(headers.begin(), headers.end());
  if (headers.empty())
    return make_error(ErrorCode::kNotFound, fmt::format("no kernelpro/kp_abi.h under {}; is the include directory right?",
                                                        options_.include_dir.string()));
  std::string abi;
  for (const auto& p : headers) {
    KP_TRY(std::string text, read_file(p.string()));
    abi += p.filename().string() + '\0' + text + '\0';
  }

  KP_TRY(auto params, task::parse_tune_params(*source));
  std::map<std::string, long long> tune;
  for (const auto& p : params) tune[p.name] = p.values.front();
  for (const auto& [name, value] : request.tune) {
    auto it = std::find_if(params.begin(), params.end(), [&](const task::TuneParam& p) { return p.name == name; });
    if (it == params.end())
      return make_error(ErrorCode::kInvalidInput, fmt::format("{}: no KP_TUNE({}, ...) to override", request.source.string(), name));
    if (std::find(it->values.begin(), it->values.end(), value) == it->values.end())
      return make_error(ErrorCode::kInvalidInput, fmt::format("{}: {} = {} is not one of the declared values", request.source.string(), name, value));
    tune[name] = value;
  }

  // -nodlink: no device-link step. A candidate is whole-program CUDA (no -rdc), so nvlink had
  // nothing to link and added an empty cubin to every .so, which cost its SASS listing one more
  // nvdisasm run (ARCHITECTURE.md, d-no-dlink).
  std::vector<std::string> cmd = {options_.nvcc, "-std=c++17", "-O3", "-lineinfo", "-shared", "-nodlink", "-Xcompiler",
                                  "-fPIC", "-Xptxas", "-v"};
  std::string arch = options_.arch;
  std::string compute = "compute_" + arch.substr(3);
  cmd.push_back(fmt::format("-gencode=arch={},code={}", compute, arch));
  cmd.push_back("-I" + options_.include_dir.string());
  for (const auto& d : options_.include_dirs) cmd.push_back("-I" + d.string());
  if (options_.find_cutlass && uses_cutlass(*source)) {
    Result<CutlassHeaders> cutlass = CutlassHeaders{};
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!cutlass_) cutlass_ = options_.find_cutlass();
      cutlass = *cutlass_;
    }
    if (!cutlass) {
      // Not an error of kernelpro's: the candidate cannot be built here, and says why.
      BuildResult r;
      r.log = fmt::format("kernelpro: {} includes CuTe/CUTLASS headers, but {}\n", request.source.string(),
                          cutlass.error().message);
      r.diagnostics.push_back(Diagnostic{request.source.string(), 0, 0, Severity::kError, r.log, {},
                                         DiagnosticTool::kDriver, ""});
      r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return r;
    }
    cmd.push_back("--expt-relaxed-constexpr");
    // The version is in the key through the command: other headers, another build.
    cmd.push_back("-DKP_CUTLASS_VERSION=\"" + cutlass->version + "\"");
    for (const auto& d : cutlass->include_dirs) cmd.push_back("-I" + d.string());
  }
  for (const auto& [name, value] : tune) cmd.push_back(fmt::format("-D{}={}", name, value));
  for (const auto& f : options_.extra_flags) cmd.push_back(f);
  std::vector<std::string> link;
  for (const auto& lib : request.libraries) {
    auto it = library_flags().find(lib);
    if (it == library_flags().end()) return make_error(ErrorCode::kInvalidInput, fmt::format("unknown library \"{}\"", lib));
    link.push_back(it->second);
  }
  if (!link.empty()) {
    if (auto lib = toolkit_lib_dir(options_.nvcc)) link.push_back("--linker-options=-rpath=" + lib->string());
  }

  Sha256 h;
  h.update(*source);
  h.update(std::string_view("\0abi\0", 5));
  h.update(abi);
  h.update(std::string_view("\0cmd\0", 5));
  for (const auto& c : cmd) h.update(c + "\n");
  for (const auto& l : link) h.update(l + "\n");
  h.update(std::string_view("\0nvcc\0", 6));
  h.update(version);
  h.update(fmt::format("\nmeta {}", kBuildMetaVersion));
  std::string key = h.hex_digest();

  if (options_.use_cache) {
    auto hit = cache_->lookup(key);
    if (hit.ok() && hit->has_value()) {
      const CachedArtifact& a = **hit;
      BuildResult r;
      r.ok = true;
      r.cache_hit = true;
      r.artifact = a.artifact_path;
      r.log = a.build_log;
      r.diagnostics = parse_nvcc_diagnostics(r.log);
      auto res = parse_ptxas_report(r.log);
      if (res.ok()) r.resources = *res;
      r.key = key;
      r.command = a.meta.value("command", cmd);
      r.tune = tune;
      // Read at store time; entries from before that field existed are checked now.
      if (a.meta.contains("exports_kp_run")) r.exports_kp_run = a.meta["exports_kp_run"].get<bool>();
      else r.exports_kp_run = exports_kp_run(r.artifact);
      // Stored since meta version 2, which is part of the key.
      if (a.meta.contains("needed_libraries") && a.meta["needed_libraries"].is_array()) r.needed_libraries = a.meta["needed_libraries"].get<std::vector<std::string>>();
      else r.needed_libraries = needed_libraries(r.artifact);
      if (a.meta.contains("imported_symbols") && a.meta["imported_symbols"].is_array()) r.imported_symbols = a.meta["imported_symbols"].get<std::vector<std::string>>();
      r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return r;
    }
  }
  auto r = compile(request, key, cmd, link, tune);
  if (r.ok()) r->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

Result<BuildResult> Builder::compile(const BuildRequest& request, const std::string& key, std::vector<std::string> cmd,
                                     const std::vector<std::string>& link, std::map<std::string, long long> tune) {
  KP_TRY(sys::TempDir dir, sys::TempDir::create("kernelpro-nvcc-"));
  fs::path out = dir.path() / "artifact.so";
  std::vector<std::string> full = cmd;
  full.push_back("--keep");  // leaves the source's object in dir, for object_imports
  full.push_back(fs::absolute(request.source).string());
  full.push_back("-o");
  full.push_back(out.string());
  for (const auto& flag : link) full.push_back(flag);
  sys::Command c;
  c.argv = full;
  c.cwd = dir.path().string();
  c.timeout = std::chrono::milliseconds(static_cast<int64_t>(options_.timeout_s * 1000));
  std::optional<BuildSlot> slot;
  if (const char* slots = std::getenv("KP_BUILD_SLOTS"); slots && *slots) {
    auto taken = BuildSlot::take(slots);
    if (!taken.ok()) return std::move(taken).error().wrap("KP_BUILD_SLOTS");
    slot.emplace(std::move(*taken));
  }
  auto run = sys::run(c);
  slot.reset();
  if (!run.ok()) return std::move(run).error().wrap("running nvcc");
  BuildResult r;
  r.key = key;
  r.command = full;
  r.tune = std::move(tune);
  r.log = run->stdout_text + run->stderr_text;
  r.diagnostics = parse_nvcc_diagnostics(r.log);
  if (run->timed_out) {
    r.log += fmt::format("\nkernelpro: nvcc {}\n", run->describe());
    r.diagnostics.push_back(Diagnostic{request.source.string(), 0, 0, Severity::kError,
                                       fmt::format("nvcc {}", run->describe()), {}, DiagnosticTool::kDriver, ""});
    return r;
  }
  if (!run->success() || !fs::exists(out)) {
    if (r.diagnostics.empty())
      r.diagnostics.push_back(Diagnostic{request.source.string(), 0, 0, Severity::kError,
                                         fmt::format("nvcc {}", run->describe()), {}, DiagnosticTool::kDriver, ""});
    return r;
  }
  auto res = parse_ptxas_report(r.log);
  if (res.ok()) r.resources = *res;
  r.ok = true;
  r.exports_kp_run = exports_kp_run(out);
  r.needed_libraries = needed_libraries(out);
  r.imported_symbols = object_imports(dir.path(), out);
  nlohmann::json meta = {{"source", request.source.string()}, {"command", full}, {"meta_version", kBuildMetaVersion}};
  if (r.exports_kp_run) meta["exports_kp_run"] = *r.exports_kp_run;
  if (r.needed_libraries) meta["needed_libraries"] = *r.needed_libraries;
  if (r.imported_symbols) meta["imported_symbols"] = *r.imported_symbols;
  if (options_.use_cache) {
    auto stored = cache_->store(key, out, r.log, meta);
    if (!stored.ok()) return std::move(stored).error().wrap("storing the build in the cache");
    r.artifact = stored->artifact_path;
  } else {
    // Keep the artifact beside the cache anyway: the temp dir disappears with this call.
    fs::path keep = options_.cache_dir / "uncached";
    fs::create_directories(keep);
    r.artifact = keep / (key + ".so");
    fs::copy_file(out, r.artifact, fs::copy_options::overwrite_existing);
  }
  return r;
}

std::vector<Result<BuildResult>> Builder::build_all(const std::vector<BuildRequest>& requests) {
  if (!pool_) pool_ = std::make_unique<ThreadPool>(static_cast<size_t>(options_.jobs));
  (void)toolchain();  // resolve once before the jobs race for it
  // Identical requests are built once and share the result.
  auto same = [](const BuildRequest& a, const BuildRequest& b) {
    return a.source == b.source && a.libraries == b.libraries && a.tune == b.tune;
  };
  std::vector<size_t> first(requests.size());
  std::vector<std::future<Result<BuildResult>>> futures(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    first[i] = i;
    for (size_t j = 0; j < i; ++j) {
      if (same(requests[i], requests[j])) {
        first[i] = first[j];
        break;
      }
    }
    if (first[i] == i) futures[i] = pool_->submit([this, r = requests[i]]() { return build(r); });
  }
  std::vector<std::optional<Result<BuildResult>>> done(requests.size());
  std::vector<Result<BuildResult>> out;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (first[i] == i) done[i] = futures[i].get();
    out.push_back(*done[first[i]]);
  }
  return out;
}

Result<BuildSlot> BuildSlot::take(const std::string& spec) {
  const auto colon = spec.rfind(':');
  int n = 0;
  if (colon != std::string::npos) {
    try {
      n = std::stoi(spec.substr(colon + 1));
    } catch (const std::exception&) {
      n = 0;
    }
  }
  if (colon == std::string::npos || colon == 0 || n <= 0)
    return make_error(ErrorCode::kInvalidInput, fmt::format("'{}' is not DIR:N with N > 0", spec));
  const fs::path dir = spec.substr(0, colon);
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::vector<int> fds;
  for (int i = 0; i < n; ++i) {
    const fs::path f = dir / fmt::format("slot-{}", i);
    int fd = ::open(f.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      for (int x : fds) ::close(x);
      return make_error(ErrorCode::kIo, fmt::format("cannot open {}: {}", f.string(), std::strerror(errno)));
    }
    fds.push_back(fd);
  }
  for (;;) {
    for (int i = 0; i < n; ++i) {
      if (::flock(fds[i], LOCK_EX | LOCK_NB) == 0) {
        for (int k = 0; k < n; ++k)
          if (k != i) ::close(fds[k]);
        return BuildSlot(fds[i], i);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

BuildSlot::~BuildSlot() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace kp::build
