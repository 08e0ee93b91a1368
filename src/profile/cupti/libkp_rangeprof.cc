// libkp_rangeprof.so: the C API of kp_rangeprof_api.h over CUPTI's Range Profiler and Profiler
// Host (CUDA 13.0). Sequence: profiler init (once) -> chip name -> counter availability -> host
// object -> metric validation -> config image -> range profiler object -> counter-data image;
// per collection: image reset -> SetConfig(auto range, kernel replay) -> Start ... Stop ->
// DecodeData -> EvaluateToGpuValues per range; kp_rp_collect instead SetConfig(auto range, user
// replay) -> (prepare, Start, run, Stop) per pass -> DecodeData -> EvaluateToGpuValues.
#include "profile/cupti/kp_rangeprof_api.h"

#include <cuda.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_runtime_cbid.h>
#include <cupti_target.h>
#include <cxxabi.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace {

constexpr const char* kPrivilegesFix =
    "GPU performance counters are restricted to administrators (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, "
    "what ncu reports as ERR_NVGPUCTRPERM): run as root (or with CAP_SYS_ADMIN), or load the nvidia "
    "module with NVreg_RestrictProfilingToAdminUsers=0 (a line 'options nvidia "
    "NVreg_RestrictProfilingToAdminUsers=0' in /etc/modprobe.d/, then rebuild the initramfs and "
    "reboot), or in a container start it with --cap-add=SYS_ADMIN on a host that allows profiling";

constexpr const char* kBroken =
    "this session's last kp_rp_collect stopped between passes; destroy it and create a new one";

// A failure on its way to the caller: the return code and the tagged message.
struct Failure {
  int code = KP_RP_OK;
  std::string message;
  bool failed() const { return code != KP_RP_OK; }
};

const char* tag_of(int code) {
  switch (code) {
    case KP_RP_ERR_INVALID_ARGUMENT: return "invalid-argument: ";
    case KP_RP_ERR_NO_CONTEXT: return "no-context: ";
    case KP_RP_ERR_PRIVILEGES: return "privileges: ";
    case KP_RP_ERR_UNSUPPORTED: return "unsupported: ";
    case KP_RP_ERR_UNKNOWN_METRIC: return "unknown-metric: ";
    case KP_RP_ERR_DROPPED: return "dropped: ";
    case KP_RP_ERR_REPLAY: return "replay: ";
    case KP_RP_ERR_PASS: return "pass: ";
    default: return "cupti: ";
  }
}

Failure fail(int code, std::string message) { return Failure{code, tag_of(code) + std::move(message)}; }

std::string cupti_words(CUptiResult r) {
  const char* s = nullptr;
  if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || s == nullptr) s = "unknown CUPTI error";
  return std::string(s) + " (CUptiResult " + std::to_string(static_cast<int>(r)) + ")";
}

std::string cu_words(CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  cuGetErrorName(r, &name);
  cuGetErrorString(r, &text);
  return std::string(name != nullptr ? name : "CUresult") + " (" + std::to_string(static_cast<int>(r)) +
         "): " + (text != nullptr ? text : "unknown driver error");
}

// Classifies a failed CUPTI call: privileges and unsupported configurations get their own codes.
Failure cupti_failure(const char* call, CUptiResult r) {
  switch (r) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      return fail(KP_RP_ERR_PRIVILEGES, std::string(call) + " failed: " + cupti_words(r) + ". " + kPrivilegesFix);
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
      return fail(KP_RP_ERR_UNSUPPORTED, std::string(call) + " failed: " + cupti_words(r) +
                                             "; this GPU cannot be profiled in-process: use --collector ncu");
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      return fail(KP_RP_ERR_CUPTI, std::string(call) + " failed: " + cupti_words(r) +
                                       "; another CUPTI client (ncu, nsys, torch.profiler, libkp_trace) holds "
                                       "this process: profile it without that tool");
    default: return fail(KP_RP_ERR_CUPTI, std::string(call) + " failed: " + cupti_words(r));
  }
}

#define KP_RP_CALL(fn, params)                                          \
  do {                                                                  \
    CUptiResult kp_rp_r_ = fn(&(params));                               \
    if (kp_rp_r_ != CUPTI_SUCCESS) return cupti_failure(#fn, kp_rp_r_); \
  } while (0)

void write_err(char* err, size_t err_len, const std::string& message) {
  if (err == nullptr || err_len == 0) return;
  size_t n = message.size() < err_len - 1 ? message.size() : err_len - 1;
  std::memcpy(err, message.data(), n);
  err[n] = '\0';
}

int report(const Failure& f, char* err, size_t err_len) {
  if (f.failed()) write_err(err, err_len, f.message);
  return f.code;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string demangle(const std::string& mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (status != 0 || d == nullptr) return mangled;
  std::string out(d);
  std::free(d);
  return out;
}

void append_json_string(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void append_json_number(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  out += buf;
}

// cuptiProfilerInitialize once per process; its result is remembered for later sessions.
CUptiResult profiler_initialize_once() {
  static std::once_flag once;
  static CUptiResult result = CUPTI_SUCCESS;
  std::call_once(once, [] {
    CUpti_Profiler_Initialize_Params p{};
    p.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE;
    result = cuptiProfilerInitialize(&p);
  });
  return result;
}

const char* support_level_name(CUpti_Profiler_Support_Level l) {
  switch (l) {
    case CUPTI_PROFILER_CONFIGURATION_SUPPORTED: return "supported";
    case CUPTI_PROFILER_CONFIGURATION_DISABLED: return "disabled";
    case CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED: return "unsupported";
    default: return "unknown";
  }
}

}  // namespace

struct kp_rp_session {
  CUcontext ctx = nullptr;
  CUdevice device = 0;
  std::string chip;
  std::vector<std::string> metrics;
  std::vector<const char*> metric_ptrs;  // into `metrics`, for CUPTI's const char** parameters
  std::vector<std::string> units;        // CUPTI's dimension unit per metric
  size_t max_kernels = 0;

  std::vector<uint8_t> availability;
  std::vector<uint8_t> config;
  std::vector<uint8_t> counter_data;
  // counter_data as cuptiRangeProfilerCounterDataImageInitialize left it, before any
  // collection: later collections copy it back instead of initialising again (on the H200 the
  // initialisation of an image for 256 ranges cost 0.11 s per collection, the copy ~0.1 ms).
  std::vector<uint8_t> counter_data_pristine;
  size_t passes = 0;
  CUpti_Profiler_Host_Object* host = nullptr;
  CUpti_RangeProfiler_Object* profiler = nullptr;
  bool collecting = false;
  int collections = 0;  // completed begin calls, to know when SetConfig runs again

  // Kernel names seen by the launch callback between begin and end, in launch order.
  CUpti_SubscriberHandle subscriber = nullptr;
  bool names_by_callback = false;  // the last begin subscribed
  std::mutex names_mutex;
  std::vector<std::string> launch_names;

  std::string json = "{}";
  double create_s = 0, begin_s = 0, end_s = 0;
  double decode_s = 0, evaluate_s = 0;  // parts of end_s
  int enables = 0;                      // range profiler objects created (1 unless SetConfig was refused)
  std::string replay = "kernel";        // the last collection's replay mode
  int user_passes = 0;                  // passes the last kp_rp_collect ran
  double prepare_s = 0, run_s = 0;      // the last kp_rp_collect's prepare calls and passes
  // The last kp_rp_collect in detail: configure (cuptiRangeProfilerSetConfig), and per pass the
  // start (subscribe, cuptiRangeProfilerStart), the run function, the stop: where a fixed cost
  // per collection hides.
  double configure_s = 0;
  std::vector<double> pass_start_s, pass_run_s, pass_stop_s;
  // The steps of the last set-up (create or rebuild), the last configure, and the first pass's
  // start, by name ("host_initialize", "set_config", "subscribe", "start", ...): where the
  // cost of a new session goes.
  std::vector<std::pair<std::string, double>> steps_s;
  // A kp_rp_collect stopped between passes: CUPTI's replay state is half-way, and on the H200
  // the next SetConfig on it crashed. The session refuses further collections; destroy it.
  bool broken = false;
  // The replay mode of the last SetConfig ("" before the first). On the H200 a SetConfig of the
  // other mode on the same objects crashed inside CUPTI, so a change of mode rebuilds them.
  std::string configured;
};

namespace {

// The depth of launch API calls on this thread: CUPTI's kernel replay and the runtime's own
// driver calls nest inside the user's launch, and only the outermost one is a new kernel.
thread_local int launch_depth = 0;

void CUPTIAPI on_launch(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  (void)domain;
  (void)cbid;
  auto* s = static_cast<kp_rp_session*>(userdata);
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (cb->callbackSite == CUPTI_API_ENTER) {
    if (launch_depth == 0) {
      std::lock_guard<std::mutex> lock(s->names_mutex);
      s->launch_names.emplace_back(cb->symbolName != nullptr ? cb->symbolName : "");
    }
    ++launch_depth;
  } else if (launch_depth > 0) {
    --launch_depth;
  }
}

// Subscribes to the kernel-launch callbacks of the runtime and the driver. Best effort: when
// another subscriber holds CUPTI the session goes on without names.
void subscribe_launches(kp_rp_session* s) {
  if (cuptiSubscribe(&s->subscriber, on_launch, s) != CUPTI_SUCCESS) {
    s->subscriber = nullptr;
    return;
  }
  const CUpti_CallbackId runtime_ids[] = {
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_v3020,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_ptsz_v7000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
  };
  const CUpti_CallbackId driver_ids[] = {
      CUPTI_DRIVER_TRACE_CBID_cuLaunch,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
  };
  for (CUpti_CallbackId id : runtime_ids) cuptiEnableCallback(1, s->subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id);
  for (CUpti_CallbackId id : driver_ids) cuptiEnableCallback(1, s->subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
}

void unsubscribe_launches(kp_rp_session* s) {
  if (s->subscriber == nullptr) return;
  cuptiUnsubscribe(s->subscriber);
  s->subscriber = nullptr;
}

Failure host_initialize(const kp_rp_session* s, CUpti_Profiler_Host_Object** host) {
  CUpti_Profiler_Host_Initialize_Params p{};
  p.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE;
  p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  p.pChipName = s->chip.c_str();
  p.pCounterAvailabilityImage = s->availability.data();
  KP_RP_CALL(cuptiProfilerHostInitialize, p);
  *host = p.pHostObject;
  return {};
}

void host_deinitialize(CUpti_Profiler_Host_Object* host) {
  if (host == nullptr) return;
  CUpti_Profiler_Host_Deinitialize_Params p{};
  p.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE;
  p.pHostObject = host;
  cuptiProfilerHostDeinitialize(&p);
}

// Adds `names` to `host`'s configuration.
CUptiResult config_add(CUpti_Profiler_Host_Object* host, std::vector<const char*>& names) {
  CUpti_Profiler_Host_ConfigAddMetrics_Params p{};
  p.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
  p.pHostObject = host;
  p.ppMetricNames = names.data();
  p.numMetrics = names.size();
  return cuptiProfilerHostConfigAddMetrics(&p);
}

// What cuptiProfilerDeviceSupported says against profiling this device, or "" when it is
// supported or cannot tell. Advisory: it explains a later failure, it does not cause one.
std::string device_support_problem(const kp_rp_session* s) {
  CUpti_Profiler_DeviceSupported_Params p{};
  p.structSize = CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE;
  p.cuDevice = s->device;
  p.api = CUPTI_PROFILER_RANGE_PROFILING;
  if (cuptiProfilerDeviceSupported(&p) != CUPTI_SUCCESS) return "";
  if (p.isSupported == CUPTI_PROFILER_CONFIGURATION_SUPPORTED) return "";
  return std::string("device ") + std::to_string(s->device) + ": architecture " + support_level_name(p.architecture) +
         ", SLI " + support_level_name(p.sli) + ", vGPU " + support_level_name(p.vGpu) + ", confidential compute " +
         support_level_name(p.confidentialCompute) + ", CMP " + support_level_name(p.cmp) + ", WSL " +
         support_level_name(p.wsl);
}

// The whole list must be accepted by ConfigAddMetrics; when it is not, each metric is tried
// alone on a fresh host object to name the ones at fault. Units come from GetMetricProperties.
Failure validate_and_configure(kp_rp_session* s) {
  std::vector<bool> described(s->metrics.size(), false);
  s->units.clear();
  for (size_t i = 0; i < s->metrics.size(); ++i) {
    CUpti_Profiler_Host_GetMetricProperties_Params p{};
    p.structSize = CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE;
    p.pHostObject = s->host;
    p.pMetricName = s->metric_ptrs[i];
    described[i] = cuptiProfilerHostGetMetricProperties(&p) == CUPTI_SUCCESS;
    s->units.emplace_back(described[i] && p.pDimUnit != nullptr ? p.pDimUnit : "");
  }
  CUptiResult r = config_add(s->host, s->metric_ptrs);
  if (r == CUPTI_SUCCESS) return {};
  std::string rejected;
  for (size_t i = 0; i < s->metrics.size(); ++i) {
    CUpti_Profiler_Host_Object* probe = nullptr;
    Failure f = host_initialize(s, &probe);
    if (f.failed()) return f;
    std::vector<const char*> one{s->metric_ptrs[i]};
    CUptiResult ri = config_add(probe, one);
    host_deinitialize(probe);
    if (ri == CUPTI_SUCCESS) continue;
    rejected += (rejected.empty() ? "" : ", ") + s->metrics[i] + " (" +
                (described[i] ? "known, but not collectable by the range profiler: " : "unknown name: ") +
                cupti_words(ri) + ")";
  }
  if (rejected.empty()) {
    return fail(KP_RP_ERR_CUPTI, "cuptiProfilerHostConfigAddMetrics refused the list of " +
                                     std::to_string(s->metrics.size()) + " metrics although it accepts each alone: " +
                                     cupti_words(r) + "; split the list into several sessions");
  }
  return fail(KP_RP_ERR_UNKNOWN_METRIC, "chip " + s->chip + " rejects " + rejected +
                                            "; drop them from the list (ncu --query-metrics --chip " + s->chip +
                                            " lists the chip's metrics) or use --collector ncu");
}

Failure build_config_image(kp_rp_session* s) {
  CUpti_Profiler_Host_GetConfigImageSize_Params sz{};
  sz.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE;
  sz.pHostObject = s->host;
  KP_RP_CALL(cuptiProfilerHostGetConfigImageSize, sz);
  s->config.assign(sz.configImageSize, 0);
  CUpti_Profiler_Host_GetConfigImage_Params img{};
  img.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE;
  img.pHostObject = s->host;
  img.configImageSize = s->config.size();
  img.pConfigImage = s->config.data();
  KP_RP_CALL(cuptiProfilerHostGetConfigImage, img);
  CUpti_Profiler_Host_GetNumOfPasses_Params np{};
  np.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE;
  np.configImageSize = s->config.size();
  np.pConfigImage = s->config.data();
  KP_RP_CALL(cuptiProfilerHostGetNumOfPasses, np);
  s->passes = np.numOfPasses;
  return {};
}

Failure enable_profiler(kp_rp_session* s) {
  CUpti_RangeProfiler_Enable_Params en{};
  en.structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE;
  en.ctx = s->ctx;
  KP_RP_CALL(cuptiRangeProfilerEnable, en);
  s->profiler = en.pRangeProfilerObject;
  s->counter_data_pristine.clear();  // initialised through the object it was made for
  ++s->enables;
  return {};
}

void disable_profiler(kp_rp_session* s) {
  if (s->profiler == nullptr) return;
  CUpti_RangeProfiler_Disable_Params p{};
  p.structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE;
  p.pRangeProfilerObject = s->profiler;
  cuptiRangeProfilerDisable(&p);
  s->profiler = nullptr;
}

Failure size_counter_data(kp_rp_session* s) {
  CUpti_RangeProfiler_GetCounterDataSize_Params p{};
  p.structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE;
  p.pRangeProfilerObject = s->profiler;
  p.pMetricNames = s->metric_ptrs.data();
  p.numMetrics = s->metric_ptrs.size();
  p.maxNumOfRanges = s->max_kernels;
  p.maxNumRangeTreeNodes = static_cast<uint32_t>(s->max_kernels);
  KP_RP_CALL(cuptiRangeProfilerGetCounterDataSize, p);
  s->counter_data.assign(p.counterDataSize, 0);
  s->counter_data_pristine.clear();
  return {};
}

Failure create_on_device(kp_rp_session* s);

// Runs `step` and records its wall time in s->steps_s under `name`.
template <typename F>
Failure timed_step(kp_rp_session* s, const char* name, F&& step) {
  auto t0 = std::chrono::steady_clock::now();
  Failure f = step();
  s->steps_s.emplace_back(name, seconds_since(t0));
  return f;
}

Failure create_session(kp_rp_session* s) {
  CUresult cr = cuCtxGetCurrent(&s->ctx);
  if (cr != CUDA_SUCCESS) return fail(KP_RP_ERR_CUPTI, "cuCtxGetCurrent failed: " + cu_words(cr));
  if (s->ctx == nullptr) {
    return fail(KP_RP_ERR_NO_CONTEXT,
                "no CUDA context is current on this thread: create one before kp_rp_create on the thread that "
                "profiles (runtime API: cudaFree(0); torch: torch.zeros(1, device='cuda'))");
  }
  cr = cuCtxGetDevice(&s->device);
  if (cr != CUDA_SUCCESS) return fail(KP_RP_ERR_CUPTI, "cuCtxGetDevice failed: " + cu_words(cr));
  CUptiResult ir = profiler_initialize_once();
  if (ir != CUPTI_SUCCESS) return cupti_failure("cuptiProfilerInitialize", ir);
  Failure f = create_on_device(s);
  if (f.failed()) {
    std::string problem = device_support_problem(s);
    if (!problem.empty()) {
      if (f.code == KP_RP_ERR_CUPTI) f = fail(KP_RP_ERR_UNSUPPORTED, f.message.substr(std::strlen(tag_of(f.code))));
      f.message += " (cuptiProfilerDeviceSupported: " + problem + "; use --collector ncu or another GPU)";
    }
  }
  return f;
}

// create_session past the context and profiler initialisation.
Failure create_on_device(kp_rp_session* s) {
  s->steps_s.clear();
  Failure f = timed_step(s, "chip_and_availability", [&]() -> Failure {
    CUpti_Device_GetChipName_Params chip{};
    chip.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE;
    chip.deviceIndex = static_cast<size_t>(s->device);
    KP_RP_CALL(cuptiDeviceGetChipName, chip);
    s->chip = chip.pChipName != nullptr ? chip.pChipName : "";

    CUpti_Profiler_GetCounterAvailability_Params av{};
    av.structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE;
    av.ctx = s->ctx;
    KP_RP_CALL(cuptiProfilerGetCounterAvailability, av);
    s->availability.assign(av.counterAvailabilityImageSize, 0);
    av.pCounterAvailabilityImage = s->availability.data();
    KP_RP_CALL(cuptiProfilerGetCounterAvailability, av);
    return {};
  });
  if (f.failed()) return f;
  f = timed_step(s, "host_initialize", [&] { return host_initialize(s, &s->host); });
  if (f.failed()) return f;
  f = timed_step(s, "add_metrics", [&] { return validate_and_configure(s); });
  if (f.failed()) return f;
  f = timed_step(s, "config_image", [&] { return build_config_image(s); });
  if (f.failed()) return f;
  f = timed_step(s, "enable", [&] { return enable_profiler(s); });
  if (f.failed()) return f;
  return timed_step(s, "counter_data_size", [&] { return size_counter_data(s); });
}

Failure set_config(kp_rp_session* s, CUpti_ProfilerReplayMode replay) {
  auto t0 = std::chrono::steady_clock::now();
  if (s->counter_data_pristine.size() == s->counter_data.size()) {
    s->counter_data = s->counter_data_pristine;
    s->steps_s.emplace_back("counter_data_copy", seconds_since(t0));
  } else {
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params init{};
    init.structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE;
    init.pRangeProfilerObject = s->profiler;
    init.counterDataSize = s->counter_data.size();
    init.pCounterData = s->counter_data.data();
    KP_RP_CALL(cuptiRangeProfilerCounterDataImageInitialize, init);
    s->counter_data_pristine = s->counter_data;
    s->steps_s.emplace_back("counter_data_initialize", seconds_since(t0));
  }

  t0 = std::chrono::steady_clock::now();
  CUpti_RangeProfiler_SetConfig_Params p{};
  p.structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE;
  p.pRangeProfilerObject = s->profiler;
  p.configSize = s->config.size();
  p.pConfig = s->config.data();
  p.counterDataImageSize = s->counter_data.size();
  p.pCounterDataImage = s->counter_data.data();
  p.range = CUPTI_AutoRange;
  p.replayMode = replay;
  p.maxRangesPerPass = s->max_kernels;
  p.numNestingLevels = 1;
  p.minNestingLevel = 1;
  p.passIndex = 0;
  p.targetNestingLevel = 1;
  KP_RP_CALL(cuptiRangeProfilerSetConfig, p);
  s->steps_s.emplace_back("set_config", seconds_since(t0));
  return {};
}

// SetConfig for a new collection; a second SetConfig refused on the same object starts over
// with a fresh object.
Failure rebuild(kp_rp_session* s) {
  disable_profiler(s);
  host_deinitialize(s->host);
  s->host = nullptr;
  return create_on_device(s);
}

Failure configure(kp_rp_session* s, CUpti_ProfilerReplayMode replay) {
  const char* mode = replay == CUPTI_UserReplay ? "user" : "kernel";
  if (!s->configured.empty() && s->configured != mode) {
    Failure r = rebuild(s);
    if (r.failed()) return r;
  }
  s->configured = mode;
  Failure f = set_config(s, replay);
  if (f.failed() && s->collections > 0) {
    disable_profiler(s);
    f = enable_profiler(s);
    if (!f.failed()) f = set_config(s, replay);
  }
  return f;
}

// Subscribes for names (with the name list cleared) and starts the range profiler.
Failure start_pass(kp_rp_session* s, bool record_steps) {
  {
    std::lock_guard<std::mutex> lock(s->names_mutex);
    s->launch_names.clear();
  }
  auto t0 = std::chrono::steady_clock::now();
  subscribe_launches(s);
  if (record_steps) s->steps_s.emplace_back("subscribe", seconds_since(t0));
  s->names_by_callback = s->subscriber != nullptr;
  CUpti_RangeProfiler_Start_Params p{};
  p.structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE;
  p.pRangeProfilerObject = s->profiler;
  t0 = std::chrono::steady_clock::now();
  CUptiResult r = cuptiRangeProfilerStart(&p);
  if (record_steps) s->steps_s.emplace_back("start", seconds_since(t0));
  if (r != CUPTI_SUCCESS) {
    unsubscribe_launches(s);
    return cupti_failure("cuptiRangeProfilerStart", r);
  }
  s->collecting = true;
  return {};
}

Failure begin_collection(kp_rp_session* s) {
  if (s->collecting) return fail(KP_RP_ERR_INVALID_ARGUMENT, "kp_rp_begin called twice without kp_rp_end");
  Failure f = configure(s, CUPTI_KernelReplay);
  if (f.failed()) return f;
  f = start_pass(s, true);
  if (f.failed()) return f;
  ++s->collections;
  return {};
}

// Stops the range profiler; *all_submitted says whether every pass has run.
Failure stop_pass(kp_rp_session* s, bool* all_submitted) {
  s->collecting = false;
  CUpti_RangeProfiler_Stop_Params p{};
  p.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE;
  p.pRangeProfilerObject = s->profiler;
  CUptiResult r = cuptiRangeProfilerStop(&p);
  unsubscribe_launches(s);
  if (r != CUPTI_SUCCESS) return cupti_failure("cuptiRangeProfilerStop", r);
  *all_submitted = p.isAllPassSubmitted != 0;
  return {};
}

Failure stop_collection(kp_rp_session* s) {
  bool all = false;
  Failure f = stop_pass(s, &all);
  if (f.failed()) return f;
  if (!all) return fail(KP_RP_ERR_CUPTI, "cuptiRangeProfilerStop reports passes still to submit, which kernel replay should never do");
  return {};
}

// User replay (kp_rp_collect): prepare, start, run, stop, once per pass, until CUPTI has every
// pass. Every pass must launch the kernels of the first, in the same order.
Failure collect_user_replay(kp_rp_session* s, kp_rp_pass_fn prepare, kp_rp_pass_fn run, void* user) {
  auto tc = std::chrono::steady_clock::now();
  Failure f = configure(s, CUPTI_UserReplay);
  s->configure_s = seconds_since(tc);
  if (f.failed()) return f;
  ++s->collections;
  std::vector<std::string> first;
  Failure mismatch;  // the first pass that launched other kernels than pass 0
  const size_t limit = s->passes + 1;  // CUPTI's own count, and one more before calling it a loop
  for (size_t pass = 0;; ++pass) {
    if (pass >= limit) {
      return fail(KP_RP_ERR_CUPTI, "CUPTI still wants passes after " + std::to_string(pass) + " (it counted " +
                                       std::to_string(s->passes) + "); use kp_rp_begin/kp_rp_end (kernel replay)");
    }
    auto t0 = std::chrono::steady_clock::now();
    if (prepare != nullptr && prepare(user, static_cast<int>(pass)) != 0) {
      return fail(KP_RP_ERR_PASS, "the prepare function failed before pass " + std::to_string(pass));
    }
    s->prepare_s += seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    f = start_pass(s, pass == 0);
    if (f.failed()) return f;
    s->pass_start_s.push_back(seconds_since(t0));
    auto tr = std::chrono::steady_clock::now();
    int rc = run(user, static_cast<int>(pass));
    s->pass_run_s.push_back(seconds_since(tr));
    bool all = false;
    auto ts = std::chrono::steady_clock::now();
    Failure stopped = stop_pass(s, &all);
    s->pass_stop_s.push_back(seconds_since(ts));
    s->run_s += seconds_since(t0);
    if (rc != 0) return fail(KP_RP_ERR_PASS, "the run function failed in pass " + std::to_string(pass));
    if (stopped.failed()) return stopped;
    std::vector<std::string> seen;
    {
      std::lock_guard<std::mutex> lock(s->names_mutex);
      seen = s->launch_names;
    }
    if (pass == 0) {
      first = seen;
    } else if (s->names_by_callback && seen != first && !mismatch.failed()) {
      size_t k = 0;
      while (k < seen.size() && k < first.size() && seen[k] == first[k]) ++k;
      std::string at = k < seen.size() ? demangle(seen[k]) : std::string("nothing");
      std::string was = k < first.size() ? demangle(first[k]) : std::string("nothing");
      mismatch = fail(KP_RP_ERR_REPLAY, "pass " + std::to_string(pass) + " launched " + std::to_string(seen.size()) +
                                            " kernels where pass 0 launched " + std::to_string(first.size()) +
                                            " (launch " + std::to_string(k) + ": " + at + " instead of " + was +
                                            "): the work is not the same on every call, so user replay cannot "
                                            "profile it; use kp_rp_begin/kp_rp_end (kernel replay)");
    }
    ++s->user_passes;
    if (all) break;
  }
  if (mismatch.failed()) {
    // Every pass has run, so CUPTI's state is whole again; its data is consumed and dropped.
    CUpti_RangeProfiler_DecodeData_Params dec{};
    dec.structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE;
    dec.pRangeProfilerObject = s->profiler;
    cuptiRangeProfilerDecodeData(&dec);
    return mismatch;
  }
  std::lock_guard<std::mutex> lock(s->names_mutex);
  s->launch_names = first;
  return {};
}

// Decodes, evaluates every range, and writes s->json. Returns KP_RP_ERR_DROPPED after writing
// the JSON when ranges were dropped.
Failure decode_and_evaluate(kp_rp_session* s) {
  auto t0 = std::chrono::steady_clock::now();
  CUpti_RangeProfiler_DecodeData_Params dec{};
  dec.structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE;
  dec.pRangeProfilerObject = s->profiler;
  KP_RP_CALL(cuptiRangeProfilerDecodeData, dec);

  CUpti_RangeProfiler_GetCounterDataInfo_Params info{};
  info.structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE;
  info.pCounterDataImage = s->counter_data.data();
  info.counterDataImageSize = s->counter_data.size();
  KP_RP_CALL(cuptiRangeProfilerGetCounterDataInfo, info);
  s->decode_s = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();

  std::vector<std::string> names;
  {
    std::lock_guard<std::mutex> lock(s->names_mutex);
    names = s->launch_names;
  }
  const bool have_names = s->names_by_callback;
  std::string out = "{\"chip\":";
  append_json_string(out, s->chip);
  out += ",\"passes\":" + std::to_string(s->passes) + ",\"metrics\":[";
  for (size_t m = 0; m < s->metrics.size(); ++m) {
    if (m > 0) out += ',';
    append_json_string(out, s->metrics[m]);
  }
  out += "],\"units\":{";
  for (size_t m = 0; m < s->metrics.size(); ++m) {
    if (m > 0) out += ',';
    append_json_string(out, s->metrics[m]);
    out += ':';
    append_json_string(out, s->units[m]);
  }
  out += "},\"ranges\":[";
  std::vector<double> values(s->metrics.size());
  unsigned long first_number = 0;  // the auto-range number of range 0
  for (size_t i = 0; i < info.numTotalRanges; ++i) {
    CUpti_RangeProfiler_CounterData_GetRangeInfo_Params ri{};
    ri.structSize = CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE;
    ri.pCounterDataImage = s->counter_data.data();
    ri.counterDataImageSize = s->counter_data.size();
    ri.rangeIndex = i;
    ri.rangeDelimiter = "/";
    KP_RP_CALL(cuptiRangeProfilerCounterDataGetRangeInfo, ri);
    std::string range = ri.rangeName != nullptr ? ri.rangeName : std::to_string(i);

    CUpti_Profiler_Host_EvaluateToGpuValues_Params ev{};
    ev.structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE;
    ev.pHostObject = s->host;
    ev.pCounterDataImage = s->counter_data.data();
    ev.counterDataImageSize = s->counter_data.size();
    ev.rangeIndex = i;
    ev.ppMetricNames = s->metric_ptrs.data();
    ev.numMetrics = s->metric_ptrs.size();
    ev.pMetricValues = values.data();
    KP_RP_CALL(cuptiProfilerHostEvaluateToGpuValues, ev);

    // Ranges come in launch order, as the callback saw the launches. Where some were dropped,
    // the auto range's number says which launch it was: kernel replay numbers them from 0; user
    // replay on the H200 numbered a session's second collection from 1, so the numbers count
    // from the first range's.
    std::string mangled;
    if (names.size() == info.numTotalRanges) {
      mangled = names[i];
    } else {
      char* end = nullptr;
      unsigned long number = std::strtoul(range.c_str(), &end, 10);
      if (i == 0 && end != range.c_str() && *end == '\0') first_number = number;
      unsigned long launch = number - first_number;
      if (end != range.c_str() && *end == '\0' && number >= first_number && launch < names.size()) mangled = names[launch];
    }
    if (i > 0) out += ',';
    out += "{\"index\":" + std::to_string(i) + ",\"range\":";
    append_json_string(out, range);
    out += ",\"name\":";
    append_json_string(out, mangled.empty() ? range : demangle(mangled));
    out += ",\"mangled\":";
    append_json_string(out, mangled);
    out += ",\"values\":{";
    for (size_t m = 0; m < s->metrics.size(); ++m) {
      if (m > 0) out += ',';
      append_json_string(out, s->metrics[m]);
      out += ':';
      append_json_number(out, values[m]);
    }
    out += "}}";
  }
  // CUPTI's count of dropped ranges, or the launches the callback saw beyond the ranges kept.
  size_t dropped = dec.numOfRangeDropped;
  if (have_names && names.size() > info.numTotalRanges && names.size() - info.numTotalRanges > dropped) {
    dropped = names.size() - info.numTotalRanges;
  }
  out += "],\"launches\":" + std::to_string(have_names ? static_cast<long>(names.size()) : -1L);
  out += ",\"dropped\":" + std::to_string(dropped);
  out += ",\"names_from\":";
  out += have_names ? "\"callback\"" : "\"range\"";
  out += ",\"enables\":" + std::to_string(s->enables);
  out += ",\"replay\":";
  append_json_string(out, s->replay);
  if (s->replay == "user") out += ",\"passes_run\":" + std::to_string(s->user_passes);
  s->evaluate_s = seconds_since(t0);
  s->json = std::move(out);  // timing_s is appended by kp_rp_end
  if (dropped > 0) {
    return fail(KP_RP_ERR_DROPPED, std::to_string(dropped) +
                                       " kernel launches beyond max_kernels=" + std::to_string(s->max_kernels) +
                                       " were not profiled; create the session with a larger max_kernels");
  }
  return {};
}

void finish_json(kp_rp_session* s) {
  std::string& out = s->json;
  if (out == "{}") return;
  out += ",\"timing_s\":{\"create\":";
  append_json_number(out, s->create_s);
  out += ",\"begin\":";
  append_json_number(out, s->begin_s);
  out += ",\"end\":";
  append_json_number(out, s->end_s);
  out += ",\"decode\":";
  append_json_number(out, s->decode_s);
  out += ",\"evaluate\":";
  append_json_number(out, s->evaluate_s);
  if (s->replay == "user") {
    out += ",\"prepare\":";
    append_json_number(out, s->prepare_s);
    out += ",\"passes\":";
    append_json_number(out, s->run_s);
    out += ",\"configure\":";
    append_json_number(out, s->configure_s);
  }
  out += "}";
  // The session's capacity and the counter data image it sizes: the image is copied afresh
  // for every collection, so its size is part of each collection's cost.
  out += ",\"max_kernels\":" + std::to_string(s->max_kernels);
  out += ",\"counter_data_bytes\":" + std::to_string(s->counter_data.size());
  if (s->replay == "user") {
    auto list = [&](const char* key, const std::vector<double>& v, bool last) {
      out += std::string("\"") + key + "\":[";
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ",";
        append_json_number(out, v[i]);
      }
      out += last ? "]" : "],";
    };
    out += ",\"pass_timing_s\":{";
    list("start", s->pass_start_s, false);
    list("run", s->pass_run_s, false);
    list("stop", s->pass_stop_s, true);
    out += "}";
  }
  out += ",\"steps_s\":[";
  for (size_t i = 0; i < s->steps_s.size(); ++i) {
    if (i) out += ",";
    out += "[";
    append_json_string(out, s->steps_s[i].first);
    out += ",";
    append_json_number(out, s->steps_s[i].second);
    out += "]";
  }
  out += "]}";
}

}  // namespace

extern "C" {

KP_RP_EXPORT kp_rp_session* kp_rp_create(const char* const* metric_names, int num_metrics, int max_kernels, char* err,
                                         size_t err_len) {
  auto t0 = std::chrono::steady_clock::now();
  if (metric_names == nullptr || num_metrics <= 0 || max_kernels <= 0) {
    report(fail(KP_RP_ERR_INVALID_ARGUMENT, "kp_rp_create needs at least one metric name and max_kernels >= 1 (got " +
                                                std::to_string(num_metrics) + " metrics, max_kernels " +
                                                std::to_string(max_kernels) + ")"),
           err, err_len);
    return nullptr;
  }
  auto* s = new kp_rp_session;
  for (int i = 0; i < num_metrics; ++i) {
    if (metric_names[i] == nullptr || metric_names[i][0] == '\0') {
      report(fail(KP_RP_ERR_INVALID_ARGUMENT, "metric name " + std::to_string(i) + " is empty"), err, err_len);
      delete s;
      return nullptr;
    }
    s->metrics.emplace_back(metric_names[i]);
  }
  for (const std::string& m : s->metrics) s->metric_ptrs.push_back(m.c_str());
  s->max_kernels = static_cast<size_t>(max_kernels);
  Failure f = create_session(s);
  if (f.failed()) {
    report(f, err, err_len);
    kp_rp_destroy(s);
    return nullptr;
  }
  s->create_s = seconds_since(t0);
  return s;
}

KP_RP_EXPORT int kp_rp_num_passes(const kp_rp_session* s) { return s == nullptr ? 0 : static_cast<int>(s->passes); }

KP_RP_EXPORT int kp_rp_begin(kp_rp_session* s, char* err, size_t err_len) {
  if (s == nullptr) return report(fail(KP_RP_ERR_INVALID_ARGUMENT, "kp_rp_begin on a NULL session"), err, err_len);
  auto t0 = std::chrono::steady_clock::now();
  if (s->broken) return report(fail(KP_RP_ERR_INVALID_ARGUMENT, kBroken), err, err_len);
  s->json = "{}";
  s->replay = "kernel";
  if (s->collections > 0) s->steps_s.clear();  // the first collection keeps create's steps
  Failure f = begin_collection(s);
  s->begin_s = seconds_since(t0);
  return report(f, err, err_len);
}

KP_RP_EXPORT int kp_rp_end(kp_rp_session* s, char* err, size_t err_len) {
  if (s == nullptr) return report(fail(KP_RP_ERR_INVALID_ARGUMENT, "kp_rp_end on a NULL session"), err, err_len);
  if (!s->collecting) return report(fail(KP_RP_ERR_INVALID_ARGUMENT, "kp_rp_end without kp_rp_begin"), err, err_len);
  auto t0 = std::chrono::steady_clock::now();
  Failure f = stop_collection(s);
  if (!f.failed()) f = decode_and_evaluate(s);
  s->end_s = seconds_since(t0);
  size_t launches = 0;
  {
    std::lock_guard<std::mutex> lock(s->names_mutex);
    launches = s->launch_names.size();
  }
  if (f.code == KP_RP_ERR_CUPTI && s->names_by_callback && launches > s->max_kernels) {
    // CUPTI may fail outright instead of dropping: say why.
    f = fail(KP_RP_ERR_DROPPED,
             std::to_string(launches) + " kernel launches, more than max_kernels=" + std::to_string(s->max_kernels) +
                 ", and no result (" + f.message + "); create the session with a larger max_kernels");
    s->json = "{}";
  }
  if (f.failed() && f.code != KP_RP_ERR_DROPPED) s->json = "{}";
  finish_json(s);
  return report(f, err, err_len);
}

KP_RP_EXPORT int kp_rp_collect(kp_rp_session* s, kp_rp_pass_fn prepare, kp_rp_pass_fn run, void* user, char* err,
                               size_t err_len) {
  if (s == nullptr || run == nullptr) {
    return report(fail(KP_RP_ERR_INVALID_ARGUMENT, "kp_rp_collect needs a session and a run function"), err, err_len);
  }
  if (s->collecting) return report(fail(KP_RP_ERR_INVALID_ARGUMENT, "kp_rp_collect inside kp_rp_begin/kp_rp_end"), err, err_len);
  if (s->broken) return report(fail(KP_RP_ERR_INVALID_ARGUMENT, kBroken), err, err_len);
  s->json = "{}";
  s->replay = "user";
  s->user_passes = 0;
  s->prepare_s = s->run_s = s->configure_s = 0;
  s->pass_start_s.clear();
  s->pass_run_s.clear();
  s->pass_stop_s.clear();
  if (s->collections > 0) s->steps_s.clear();  // the first collection keeps create's steps
  Failure f = collect_user_replay(s, prepare, run, user);
  if (s->collecting) {  // a failure between start and stop
    bool all = false;
    stop_pass(s, &all);
  }
  if (f.failed() && f.code != KP_RP_ERR_REPLAY) s->broken = true;  // passes abandoned halfway
  s->begin_s = 0;
  auto t1 = std::chrono::steady_clock::now();
  if (!f.failed()) f = decode_and_evaluate(s);
  s->end_s = seconds_since(t1);
  if (f.failed() && f.code != KP_RP_ERR_DROPPED) s->json = "{}";
  finish_json(s);
  return report(f, err, err_len);
}

KP_RP_EXPORT const char* kp_rp_result_json(const kp_rp_session* s) { return s == nullptr ? "{}" : s->json.c_str(); }

KP_RP_EXPORT void kp_rp_destroy(kp_rp_session* s) {
  if (s == nullptr) return;
  if (s->collecting) stop_collection(s);
  unsubscribe_launches(s);
  disable_profiler(s);
  host_deinitialize(s->host);
  delete s;
}

}  // extern "C"
