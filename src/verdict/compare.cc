#include "verdict/compare.h"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

namespace kp::eval {

using task::DType;

uint64_t poison_bits(DType d) {
  switch (d) {
    case DType::kFp32: return 0x7FC0DEADull;
    case DType::kFp16: return 0x7E5Bull;
    case DType::kBf16: return 0x7FDBull;
    case DType::kFp64: return 0x7FF8DEADBEEFDEADull;
    case DType::kInt32: return 0x7EADBEEFull;
    case DType::kInt64: return 0x7EADBEEFDEADBEEFull;
    case DType::kBool: return 0xA5ull;
  }
  return 0;
}

float half_to_float(uint16_t h) {
  uint32_t sign = (h >> 15) & 1u, exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  float v;
  if (exp == 0) v = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31) v = mant ? std::nanf("") : INFINITY;
  else v = std::ldexp(static_cast<float>(mant | 0x400u), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

float bf16_to_float(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

double element_as_double(const void* data, DType d, int64_t i) {
  const char* p = static_cast<const char*>(data);
  switch (d) {
    case DType::kFp32: { float v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case DType::kFp64: { double v; std::memcpy(&v, p + 8 * i, 8); return v; }
    case DType::kFp16: { uint16_t v; std::memcpy(&v, p + 2 * i, 2); return half_to_float(v); }
    case DType::kBf16: { uint16_t v; std::memcpy(&v, p + 2 * i, 2); return bf16_to_float(v); }
    case DType::kInt32: { int32_t v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case DType::kInt64: { int64_t v; std::memcpy(&v, p + 8 * i, 8); return static_cast<double>(v); }
    case DType::kBool: return static_cast<unsigned char>(p[i]);
  }
  return 0;
}

std::string format_index(int64_t flat, const std::vector<int64_t>& shape) {
  if (shape.empty()) return "[]";
  std::vector<int64_t> idx(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    idx[k] = flat % shape[k];
    flat /= shape[k];
  }
  std::string out = "[";
  for (size_t k = 0; k < idx.size(); ++k) out += (k ? ", " : "") + std::to_string(idx[k]);
  return out + "]";
}

namespace {

// Reads element i as double; specialized per storage type so the hot loop has no switch.
template <typename T> double load(const T* p, int64_t i) { return static_cast<double>(p[i]); }
struct Half { uint16_t bits; };
struct Bf16 { uint16_t bits; };
double load(const Half* p, int64_t i) { return half_to_float(p[i].bits); }
double load(const Bf16* p, int64_t i) { return bf16_to_float(p[i].bits); }
double load(const uint8_t* p, int64_t i) { return p[i]; }

template <typename T>
uint64_t bits_of(const T* p, int64_t i) {
  uint64_t v = 0;
  std::memcpy(&v, p + i, sizeof(T));
  return v;
}

template <typename T>
OutputTally tally_typed(const T* out, const T* ref, DType d, int64_t n, const task::Tolerance& tol) {
  OutputTally c;
  c.elements = n;
  const uint64_t poison = poison_bits(d);
  const bool floating = task::is_floating(d);
  const uint64_t first_out_bits = n > 0 ? bits_of(out, 0) : 0;
  if (n > 0) c.first_out = load(out, 0);
  // Only the first failing element is described, so a wholly wrong output costs no formatting.
  auto first_bad = [&](int64_t i) { return c.first_bad_index < 0 ? (c.first_bad_index = i, true) : false; };
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t ob = bits_of(out, i);
    if (ob != first_out_bits) c.out_constant = false;
    const double r = load(ref, i);
    if (!std::isfinite(r)) {
      ++c.reference_nonfinite;
      continue;
    }
    c.ref_min = std::min(c.ref_min, r);
    c.ref_max = std::max(c.ref_max, r);
    if (ob == poison && bits_of(ref, i) != poison) {
      ++c.unwritten;
      if (first_bad(i)) c.first_detail = "never written (still holds the poison pattern)";
      continue;
    }
    const double o = load(out, i);
    if (!std::isfinite(o)) {
      ++c.nonfinite;
      if (first_bad(i)) c.first_detail = fmt::format("got {} where the reference is {:.6g}", o, r);
      continue;
    }
    const double diff = std::fabs(o - r);
    c.max_abs_error = std::max(c.max_abs_error, diff);
    if (r != 0) c.max_rel_error = std::max(c.max_rel_error, diff / std::fabs(r));
    c.err_sq += diff * diff;
    c.ref_sq += r * r;
    const double bound = floating ? tol.atol + tol.rtol * std::fabs(r) : 0.0;
    if (diff > bound) {
      ++c.mismatches;
      if (first_bad(i)) c.first_detail = fmt::format("got {:.6g}, expected {:.6g} (|diff| {:.3g} > {:.3g})", o, r, diff, bound);
    }
  }
  return c;
}

}  // namespace

OutputTally tally_output(const void* out, const void* ref, DType d, int64_t n, const task::Tolerance& tol) {
  switch (d) {
    case DType::kFp32: return tally_typed(static_cast<const float*>(out), static_cast<const float*>(ref), d, n, tol);
    case DType::kFp64: return tally_typed(static_cast<const double*>(out), static_cast<const double*>(ref), d, n, tol);
    case DType::kFp16: return tally_typed(static_cast<const Half*>(out), static_cast<const Half*>(ref), d, n, tol);
    case DType::kBf16: return tally_typed(static_cast<const Bf16*>(out), static_cast<const Bf16*>(ref), d, n, tol);
    case DType::kInt32: return tally_typed(static_cast<const int32_t*>(out), static_cast<const int32_t*>(ref), d, n, tol);
    case DType::kInt64: return tally_typed(static_cast<const int64_t*>(out), static_cast<const int64_t*>(ref), d, n, tol);
    case DType::kBool: return tally_typed(static_cast<const uint8_t*>(out), static_cast<const uint8_t*>(ref), d, n, tol);
  }
  return OutputTally{};
}

OutputCheck conclude_check(const OutputTally& t, DType d, const task::Tolerance& tol, const std::vector<int64_t>& shape) {
  OutputCheck c;
  const int64_t n = t.elements;
  c.elements = n;
  c.mismatches = t.mismatches;
  c.unwritten = t.unwritten;
  c.nonfinite = t.nonfinite;
  c.reference_nonfinite = t.reference_nonfinite;
  c.first_bad_index = t.first_bad_index;
  c.max_abs_error = t.max_abs_error;
  c.max_rel_error = t.max_rel_error;
  c.rel_norm_error = t.ref_sq > 0 ? std::sqrt(t.err_sq) / std::sqrt(t.ref_sq) : std::sqrt(t.err_sq);
  c.constant_output = n > 1 && t.out_constant && t.ref_min < t.ref_max;
  const bool floating = task::is_floating(d);
  auto where = [&]() { return fmt::format("element {}", format_index(c.first_bad_index, shape)); };
  if (c.reference_nonfinite > 0) {
    c.reason = fmt::format("the reference produced {} NaN/Inf values: the task's inputs are outside the function's domain; fix the task, not the candidate",
                           c.reference_nonfinite);
  } else if (c.unwritten > 0) {
    c.reason = fmt::format("{} of {} elements never written; first at {}", c.unwritten, n, where());
  } else if (c.nonfinite > 0) {
    c.reason = fmt::format("{} NaN/Inf values; first at {}: {}", c.nonfinite, where(), t.first_detail);
  } else if (c.constant_output) {
    c.reason = fmt::format("constant output ({}) while the reference varies from {:.6g} to {:.6g}", t.first_out, t.ref_min,
                           t.ref_max);
  } else if (c.mismatches > 0) {
    c.reason = fmt::format("{} of {} elements out of tolerance; first at {}: {}", c.mismatches, n, where(), t.first_detail);
  } else if (floating && c.rel_norm_error > tol.rel_norm) {
    c.reason = fmt::format("relative error norm {:.3g} exceeds {:.3g}", c.rel_norm_error, tol.rel_norm);
  }
  c.passed = c.reason.empty();
  return c;
}

OutputCheck check_output(const void* out, const void* ref, DType d, int64_t n, const task::Tolerance& tol,
                         const std::vector<int64_t>& shape) {
  return conclude_check(tally_output(out, ref, d, n, tol), d, tol, shape);
}

FailureKind failure_kind(const OutputCheck& c, DType d) {
  if (c.passed || c.reference_nonfinite > 0) return {};
  if (c.constant_output) return {"constant_output", ""};
  const bool wide = d == DType::kFp32 || d == DType::kFp64;
  if (wide && c.unwritten == 0 && c.nonfinite == 0 && c.rel_norm_error >= 1e-5 && c.rel_norm_error <= 5e-2)
    return {"precision_downgrade",
            "an error of this size is what fp16, bf16 or TF32 arithmetic gives: compute in the output's precision"};
  return {};
}

}  // namespace kp::eval
