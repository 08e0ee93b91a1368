// libkp_judge.so: the C API of include/kernelpro/kp_judge.h over judge::Session, loaded by the
// KernelBench worker (python/kernelpro_torch/judge.py) through ctypes. Only the kpj_* functions
// are exported (libkp_judge.map); the static C++ and CUDA runtimes stay private.
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "judge/device_compare.h"
#include "judge/session.h"
#include "verdict/protocol.h"
#include "kernelpro/kp_judge.h"

struct kpj_session {
  std::unique_ptr<kp::judge::Session> session;
  std::string last;  // the string the last kpj_result_json or kpj_finish returned
};

namespace {
// The one live session of this process (kpj_open refuses a second one).
kpj_session* live = nullptr;
}  // namespace

extern "C" {

kpj_session* kpj_open(const kpj_config* config, char* err, size_t err_len) {
  auto write_err = [&](const std::string& m) {
    if (err && err_len) {
      std::strncpy(err, m.c_str(), err_len - 1);
      err[err_len - 1] = '\0';
    }
  };
  if (!config) {
    write_err("kpj_open: no config");
    return nullptr;
  }
  if (live) {
    write_err("kpj_open: a session is already open in this process; close it after its verdict first");
    return nullptr;
  }
  auto* s = new (std::nothrow) kpj_session;
  if (!s) return nullptr;
  s->session = std::make_unique<kp::judge::Session>(*config);
  if (!s->session->error().empty()) {
    write_err(s->session->error());
    delete s;
    return nullptr;
  }
  live = s;
  return s;
}

void kpj_note_stop(kpj_session* s, const char* outcome, const char* reason, const char* cheat) {
  if (!s || s != live) return;
  s->session->note_stop(outcome ? outcome : "", reason ? reason : "", cheat ? cheat : "");
}

int kpj_trials(kpj_session* s, const kpj_trials_config* config, kpj_refresh_fn refresh, kpj_call_fn call,
               kpj_outputs_fn outputs, kpj_trial_fn look, void* ctx) {
  if (!s || s != live || !config || !refresh || !call || !outputs) return 2;
  return s->session->trials(*config, {refresh, call, outputs, ctx, look});
}

int kpj_time(kpj_session* s, int32_t role, kpj_refresh_fn refresh, kpj_call_fn call, kpj_outputs_fn outputs,
             void* ctx) {
  if (!s || s != live || !refresh || !call || !outputs) return 2;
  return s->session->time(role, {refresh, call, outputs, ctx});
}

int kpj_energy(kpj_session* s, const kpj_energy_config* config, kpj_refresh_fn refresh, kpj_call_fn call,
               kpj_outputs_fn outputs, void* ctx) {
  if (!s || s != live || !config || !refresh || !call || !outputs) return 2;
  return s->session->energy(*config, {refresh, call, outputs, ctx});
}

const char* kpj_result_json(kpj_session* s) {
  if (!s || s != live) return nullptr;
  s->last = s->session->result_json();
  return s->last.c_str();
}

const char* kpj_finish(kpj_session* s, const char* report_json) {
  if (!s || s != live || !report_json) return nullptr;
  try {  // no exception crosses into the adapter
    auto r = s->session->finish(report_json);
    if (!r) return nullptr;
    s->last = std::move(*r);
    return s->last.c_str();
  } catch (...) {
    return nullptr;
  }
}

int kpj_compare(const kpj_tensor* out, const kpj_tensor* want, const double tolerance[3], uint64_t stream,
                char* json, size_t json_len) {
  auto write = [&](const std::string& m) {
    if (json && json_len) {
      std::strncpy(json, m.c_str(), json_len - 1);
      json[json_len - 1] = '\0';
    }
  };
  auto bad = [](const kpj_tensor* t) {
    if (!t || t->dtype < 0 || t->dtype > 6 || t->rank < 0 || t->rank > KPJ_MAX_RANK) return true;
    int64_t n = 1;
    for (int d = 0; d < t->rank; ++d) {
      if (t->shape[d] < 0) return true;
      n *= t->shape[d];
    }
    return n > 0 && !t->data;
  };
  if (!tolerance || bad(out) || bad(want)) {
    write("kpj_compare: a tensor with no data or a bad dtype, rank or shape");
    return -1;
  }
  static kp::judge::CompareScratch scratch;  // one per process, as the worker's
  kp::eval::OutputCheck check;
  const kp::task::Tolerance tol{tolerance[0], tolerance[1], tolerance[2]};
  if (cudaError_t e = kp::judge::compare_tensor(*out, *want, tol, scratch, reinterpret_cast<cudaStream_t>(stream),
                                                &check);
      e != cudaSuccess) {
    cudaGetLastError();
    write(std::string("kpj_compare: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
    return -1;
  }
  try {
    write(kp::eval::to_json(check).dump());
  } catch (...) {
    write("kpj_compare: the check could not be written");
    return -1;
  }
  return check.passed ? 1 : 0;
}

void kpj_close(kpj_session* s) {
  if (!s || s != live) return;
  if (!s->session->finished() || s->session->in_callback()) {
    s->session->taint("the judge core's session was closed before its verdict");
    return;
  }
  live = nullptr;
  delete s;
}

}  // extern "C"
