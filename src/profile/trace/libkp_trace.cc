// libkp_trace.so: CUPTI Activity API tracing injected into a CUDA process with
// CUDA_INJECTION64_PATH. The contract and the file format are in kp_trace_api.h.
//
// Records reach us in CUPTI buffers, on the thread that flushes or on CUPTI's own thread when a
// buffer fills. A record's call is decided by time, not by when it arrives: API records by their
// start against the begin/end intervals, GPU records through the API record with the same
// correlation id (held back until a flush has delivered it). The mutex is never held across
// cuptiActivityFlushAll, which calls back into buffer_completed on the same thread.
#include <cupti.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "profile/trace/kp_trace_api.h"

#define KP_TRACE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr size_t kBufferBytes = 8u << 20;  // CUPTI's recommendation: 1 to 10 MB
constexpr int kOutside = -1;
constexpr size_t kMaxCorrelations = 1u << 20;
constexpr uint64_t kOpen = std::numeric_limits<uint64_t>::max();

struct Interval {
  int call;
  uint64_t begin_ns;
  uint64_t end_ns;  // kOpen while the call is open
};

// A GPU record whose API record has not been seen yet: the JSON after the "call" field.
struct PendingRecord {
  uint32_t correlation;
  uint64_t start_ns;
  std::string type;
  std::string body;
};

struct ApiTotal {
  uint64_t count = 0;
  uint64_t total_ns = 0;
};

struct Tracer {
  std::mutex mu;
  FILE* out = nullptr;
  bool active = false;
  int open_call = kOutside;
  std::vector<Interval> intervals;  // ordered by begin_ns
  std::unordered_map<uint32_t, int> call_of_correlation;
  std::vector<PendingRecord> pending;
  // (call, domain, cbid) -> totals
  std::map<std::tuple<int, int, uint32_t>, ApiTotal> api;
  uint64_t dropped = 0;
  uint64_t records = 0;
};

Tracer& tracer() {
  static Tracer* t = new Tracer();  // never destroyed: atexit handlers may run after statics die
  return *t;
}

void append_json_string(std::string& s, const char* text) {
  s += '"';
  for (const char* p = text ? text : ""; *p; ++p) {
    unsigned char c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\') {
      s += '\\';
      s += static_cast<char>(c);
    } else if (c < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", c);
      s += esc;
    } else {
      s += static_cast<char>(c);
    }
  }
  s += '"';
}

void append_kv(std::string& s, const char* key, uint64_t v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, ",\"%s\":%" PRIu64, key, v);
  s += buf;
}

void append_kv_signed(std::string& s, const char* key, int64_t v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, ",\"%s\":%" PRId64, key, v);
  s += buf;
}

void append_triple(std::string& s, const char* key, int64_t x, int64_t y, int64_t z) {
  char buf[96];
  std::snprintf(buf, sizeof buf, ",\"%s\":[%" PRId64 ",%" PRId64 ",%" PRId64 "]", key, x, y, z);
  s += buf;
}

// Writes one line. Caller holds mu (or is single-threaded setup).
void write_line(Tracer& t, const std::string& line) {
  if (!t.out) return;
  std::fwrite(line.data(), 1, line.size(), t.out);
  std::fputc('\n', t.out);
}

void write_error(Tracer& t, const std::string& message) {
  std::string line = "{\"type\":\"error\",\"error\":";
  append_json_string(line, message.c_str());
  line += '}';
  write_line(t, line);
  std::fflush(t.out);
  std::fprintf(stderr, "libkp_trace: %s\n", message.c_str());
}

std::string cupti_message(CUptiResult r) {
  const char* s = nullptr;
  if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s) return "CUPTI error " + std::to_string(r);
  return s;
}

uint64_t now_ns() {
  uint64_t t = 0;
  cuptiGetTimestamp(&t);
  return t;
}

// The call open at time ts, or kOutside. Caller holds mu.
int call_at(const Tracer& t, uint64_t ts) {
  auto it = std::upper_bound(t.intervals.begin(), t.intervals.end(), ts,
                             [](uint64_t v, const Interval& iv) { return v < iv.begin_ns; });
  if (it == t.intervals.begin()) return kOutside;
  --it;
  return ts <= it->end_ns ? it->call : kOutside;
}

void write_gpu_record(Tracer& t, const std::string& type, int call, const std::string& body) {
  std::string line = "{\"type\":\"" + type + "\"";
  append_kv_signed(line, "call", call);
  line += body;
  line += '}';
  write_line(t, line);
  ++t.records;
}

// Places a GPU record by correlation when its API record was seen; else holds it back.
void emit_gpu_record(Tracer& t, PendingRecord rec) {
  auto it = t.call_of_correlation.find(rec.correlation);
  if (it != t.call_of_correlation.end()) {
    write_gpu_record(t, rec.type, it->second, rec.body);
  } else {
    t.pending.push_back(std::move(rec));
  }
}

// After a flush every API record of a finished API call has arrived: write what was held back,
// by correlation when possible, else by the record's own start time. Caller holds mu.
void resolve_pending(Tracer& t) {
  for (auto& rec : t.pending) {
    auto it = t.call_of_correlation.find(rec.correlation);
    int call = it != t.call_of_correlation.end() ? it->second : rec.start_ns != 0 ? call_at(t, rec.start_ns) : kOutside;
    write_gpu_record(t, rec.type, call, rec.body);
  }
  t.pending.clear();
}

bool is_launch_name(const char* name) {
  if (!name) return false;
  if (std::strstr(name, "HostFunc")) return false;
  return std::strncmp(name, "cudaLaunch", 10) == 0 || std::strncmp(name, "cuLaunch", 8) == 0 ||
         std::strstr(name, "GraphLaunch") != nullptr;
}

// Writes the API totals gathered so far and forgets them. Caller holds mu.
void write_api_totals(Tracer& t) {
  for (const auto& [key, total] : t.api) {
    const auto& [call, domain, cbid] = key;
    const char* name = nullptr;
    if (cuptiGetCallbackName(static_cast<CUpti_CallbackDomain>(domain), cbid, &name) != CUPTI_SUCCESS) {
      name = nullptr;
    }
    std::string line = "{\"type\":\"api\"";
    append_kv_signed(line, "call", call);
    line += domain == CUPTI_CB_DOMAIN_RUNTIME_API ? ",\"domain\":\"runtime\"" : ",\"domain\":\"driver\"";
    append_kv(line, "cbid", cbid);
    line += ",\"name\":";
    append_json_string(line, name ? name : "");
    append_kv(line, "count", total.count);
    append_kv(line, "total_ns", total.total_ns);
    line += is_launch_name(name) ? ",\"launch\":true}" : ",\"launch\":false}";
    write_line(t, line);
  }
  t.api.clear();
}

const char* direction_name(uint8_t copy_kind) {
  switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "Unknown";
  }
}

void append_times(std::string& s, uint64_t start, uint64_t end) {
  append_kv(s, "start", start);
  append_kv(s, "end", end);
  if (start == 0 || end == 0 || end < start) s += ",\"incomplete\":true";
}

// Caller holds mu.
void handle_record(Tracer& t, const CUpti_Activity* record) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      PendingRecord r{k->correlationId, k->start, "kernel", {}};
      r.body = ",\"name\":";
      append_json_string(r.body, k->name);
      append_kv(r.body, "stream", k->streamId);
      append_triple(r.body, "grid", k->gridX, k->gridY, k->gridZ);
      append_triple(r.body, "block", k->blockX, k->blockY, k->blockZ);
      append_kv(r.body, "registers", k->registersPerThread);
      append_kv_signed(r.body, "static_smem", k->staticSharedMemory);
      append_kv_signed(r.body, "dynamic_smem", k->dynamicSharedMemory);
      append_times(r.body, k->start, k->end);
      append_kv(r.body, "correlation", k->correlationId);
      append_kv(r.body, "device", k->deviceId);
      emit_gpu_record(t, std::move(r));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      PendingRecord r{m->correlationId, m->start, "memcpy", {}};
      r.body = std::string(",\"direction\":\"") + direction_name(m->copyKind) + "\"";
      append_kv(r.body, "bytes", m->bytes);
      append_kv(r.body, "stream", m->streamId);
      append_times(r.body, m->start, m->end);
      append_kv(r.body, "correlation", m->correlationId);
      emit_gpu_record(t, std::move(r));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      PendingRecord r{m->correlationId, m->start, "memset", {}};
      append_kv(r.body, "bytes", m->bytes);
      append_kv(r.body, "stream", m->streamId);
      append_times(r.body, m->start, m->end);
      append_kv(r.body, "correlation", m->correlationId);
      emit_gpu_record(t, std::move(r));
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
      int call = call_at(t, a->start);
      t.call_of_correlation[a->correlationId] = call;
      int domain =
          record->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
      ApiTotal& total = t.api[{call, domain, a->cbid}];
      ++total.count;
      if (a->end > a->start) total.total_ns += a->end - a->start;
      ++t.records;
      break;
    }
    default: break;
  }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t /*size*/, size_t valid_size) {
  Tracer& t = tracer();
  {
    std::lock_guard<std::mutex> lock(t.mu);
    CUpti_Activity* record = nullptr;
    while (valid_size > 0 && cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
      handle_record(t, record);
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS) t.dropped += dropped;
  }
  std::free(buffer);
}

void flush_all() { cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); }

void write_marker(Tracer& t, const char* type, int call, uint64_t ts) {
  std::string line = std::string("{\"type\":\"") + type + "\"";
  append_kv_signed(line, "call", call);
  append_kv(line, "t", ts);
  line += '}';
  write_line(t, line);
}

void at_exit() {
  Tracer& t = tracer();
  {
    std::lock_guard<std::mutex> lock(t.mu);
    if (!t.active) return;
  }
  flush_all();
  std::lock_guard<std::mutex> lock(t.mu);
  resolve_pending(t);
  write_api_totals(t);
  std::string line = "{\"type\":\"footer\"";
  append_kv(line, "dropped", t.dropped);
  append_kv(line, "records", t.records);
  line += '}';
  write_line(t, line);
  std::fflush(t.out);
  t.active = false;
}

void CUPTIAPI ignore_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

// Subscribes (claims CUPTI for this process), enables the activity kinds and the buffer
// callbacks. Returns false after writing an error record.
bool start_cupti(Tracer& t) {
  CUpti_SubscriberHandle subscriber = nullptr;
  CUptiResult r = cuptiSubscribe(&subscriber, ignore_callback, nullptr);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    write_error(t,
                "CUPTI already has a subscriber in this process (ncu, nsys, torch.profiler or the CUPTI "
                "range profiler): nothing is traced; run the trace in a process without another CUPTI tool");
    return false;
  }
  if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) {
    write_error(t, "not permitted to use CUPTI (" + cupti_message(r) +
                       "): nothing is traced; run as root or allow profiling for all users "
                       "(nvidia driver option NVreg_RestrictProfilingToAdminUsers=0)");
    return false;
  }
  if (r != CUPTI_SUCCESS) {
    write_error(t, "cuptiSubscribe failed: " + cupti_message(r) +
                       ": nothing is traced; check that a CUDA driver is installed and that "
                       "libcupti.so.13 matches it");
    return false;
  }
  r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) {
    write_error(t, "cuptiActivityRegisterCallbacks failed: " + cupti_message(r) + ": nothing is traced");
    cuptiUnsubscribe(subscriber);
    return false;
  }
  struct KindName {
    CUpti_ActivityKind kind;
    const char* name;
  };
  const KindName kinds[] = {
      {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL"},
      {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY"},
      {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET"},
      {CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME"},
      {CUPTI_ACTIVITY_KIND_DRIVER, "DRIVER"},
  };
  bool kernels_on = false;
  for (const auto& k : kinds) {
    r = cuptiActivityEnable(k.kind);
    if (r == CUPTI_SUCCESS) {
      if (k.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) kernels_on = true;
      continue;
    }
    std::string advice = r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES
                             ? "run as root or set NVreg_RestrictProfilingToAdminUsers=0"
                         : r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                             ? "another CUPTI tool is attached; trace in a process without it"
                             : "records of this kind are missing from the trace";
    write_error(t, std::string("cuptiActivityEnable(") + k.name + ") failed: " + cupti_message(r) + ": " + advice);
  }
  if (!kernels_on) {
    cuptiActivityFlushAll(0);
    cuptiUnsubscribe(subscriber);
    return false;
  }
  return true;
}

}  // namespace

KP_TRACE_EXPORT int InitializeInjection(void) {
  static bool initialized = false;
  if (initialized) return 1;
  initialized = true;
  Tracer& t = tracer();
  const char* path = std::getenv("KP_TRACE_OUT");
  if (!path || !*path) {
    std::fprintf(stderr,
                 "libkp_trace: KP_TRACE_OUT is not set: not tracing (set it to the file the trace "
                 "should go to, next to CUDA_INJECTION64_PATH)\n");
    return 1;
  }
  t.out = std::fopen(path, "w");
  if (!t.out) {
    std::fprintf(stderr, "libkp_trace: cannot write KP_TRACE_OUT=%s: %s: not tracing\n", path, std::strerror(errno));
    return 1;
  }
  uint32_t version = 0;
  cuptiGetVersion(&version);
  std::string header = "{\"type\":\"header\",\"version\":1";
  append_kv(header, "pid", static_cast<uint64_t>(getpid()));
  append_kv(header, "cupti_api_version", version);
  header += '}';
  write_line(t, header);
  std::fflush(t.out);
  if (!start_cupti(t)) return 1;
  {
    std::lock_guard<std::mutex> lock(t.mu);
    t.active = true;
  }
  std::atexit(at_exit);
  return 1;
}

KP_TRACE_EXPORT int kp_trace_begin(int call_index) {
  Tracer& t = tracer();
  {
    std::lock_guard<std::mutex> lock(t.mu);
    if (!t.active || t.open_call != kOutside) return -1;
  }
  flush_all();
  std::lock_guard<std::mutex> lock(t.mu);
  resolve_pending(t);
  // Keeps the map bounded in a long-running process; a GPU record that loses its entry is
  // placed by its start time instead.
  if (t.call_of_correlation.size() > kMaxCorrelations) t.call_of_correlation.clear();
  uint64_t ts = now_ns();
  t.intervals.push_back({call_index, ts, kOpen});
  t.open_call = call_index;
  write_marker(t, "begin", call_index, ts);
  std::fflush(t.out);
  return 0;
}

KP_TRACE_EXPORT int kp_trace_end(int call_index) {
  Tracer& t = tracer();
  uint64_t ts = now_ns();
  {
    std::lock_guard<std::mutex> lock(t.mu);
    if (!t.active || t.open_call != call_index || t.intervals.empty()) return -1;
    t.intervals.back().end_ns = ts;
    t.open_call = kOutside;
  }
  flush_all();
  std::lock_guard<std::mutex> lock(t.mu);
  resolve_pending(t);
  write_api_totals(t);
  write_marker(t, "end", call_index, ts);
  std::fflush(t.out);
  return 0;
}
