/*
 * kp_check.h: argument checks for kp_run (optional; candidates and references may use it).
 *
 * kp_abi.h defines what the worker passes; this header-only helper validates it. Every kp_run
 * starts the same way: check the tensor counts, dtypes, ranks and shapes, give up with a status
 * code and a message when they are not what the kernel handles, launch, then check the launch:
 *
 *     #include <kernelpro/kp_abi.h>
 *     #include <kernelpro/kp_check.h>
 *
 *     KP_EXPORT int kp_run(kp_args* args) {
 *       if (int rc = kp_expect_tensors(args, "gelu", {{"x", KP_FP32, 0, KP_MAX_RANK}},
 *                                      {{"y", KP_FP32, 0, KP_MAX_RANK}})) {
 *         return rc;
 *       }
 *       const kp_tensor& x = args->inputs[0];
 *       const kp_tensor& y = args->outputs[0];
 *       if (int rc = kp_expect_same_shape(args, "gelu", y, "y", x, "x")) return rc;
 *       my_kernel<<<grid, block, 0, (cudaStream_t)args->stream>>>(...);
 *       return kp_check_launch(args, "gelu");
 *     }
 *
 * kp_expect_tensors checks what each tensor must be on its own (count, dtype, rank, extents,
 * layout). The relations between tensors (y has the shape of x, B is [K, N]) and the limits of
 * the kernel (rows <= INT_MAX) stay in kp_run: kp_expect_same_shape, kp_expect_shape and
 * kp_expect_at_most, or kp_fail for anything else. The single-tensor checks kp_expect_tensors is
 * made of are usable on their own, by a candidate that accepts more (strided tensors, say).
 *
 * Contract shared by every kp_expect_* and kp_check_* function:
 *  - `who` names the task (or the candidate) and starts the message, as in "gelu: x must be
 *    fp32, got bf16"; `name` (or `what`) names the tensor (or the quantity) in the message.
 *  - The function returns KP_OK when the check holds. Otherwise it writes a message naming who,
 *    the tensor and what was expected into args->message and returns the status code given in
 *    its comment (the code kp_run should return), so `if (int rc = ...) return rc;` is the whole
 *    call site.
 *  - Codes follow kp_abi.h: a wrong count of tensors or scalars, or a wrong dtype, is
 *    KP_ERR_INVALID_ARGUMENT; a rank, shape or layout the candidate does not handle is
 *    KP_ERR_UNSUPPORTED_SHAPE; a CUDA error is KP_ERR_CUDA.
 *  - A function that reads t.shape or t.strides first checks 0 <= t.rank <= KP_MAX_RANK (and
 *    fails with KP_ERR_UNSUPPORTED_SHAPE otherwise), so it never reads past the arrays.
 *  - Host code only; nothing here touches the device except kp_check_launch, which reads (and
 *    clears) the calling thread's last CUDA error.
 *
 * The functions are `static inline`: each candidate gets its own copy, so the shared object
 * exports nothing but its kp_run (and kp_workspace_bytes), and two objects built against
 * different versions of this header never share one definition.
 *
 * C++ (nvcc or a host C++ compiler with the CUDA runtime headers on the include path).
 */
#ifndef KERNELPRO_KP_CHECK_H_
#define KERNELPRO_KP_CHECK_H_

#ifndef __cplusplus
#error "kp_check.h is C++; include it from a .cu or C++ source (kp_abi.h alone is plain C)"
#endif

#include <cuda_runtime_api.h>

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <initializer_list>

#include "kp_abi.h"

#if defined(__GNUC__)
#define KP_CHECK_PRINTF_(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define KP_CHECK_PRINTF_(fmt_index, first_arg)
#endif

/* Formats the message (printf-style, truncated to fit) into args->message and returns code.
 * For the checks this header does not cover: `return kp_fail(args, KP_ERR_..., "...", ...);` */
KP_CHECK_PRINTF_(3, 4)
static inline int kp_fail(kp_args* args, int code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args->message, sizeof(args->message), fmt, ap);
  va_end(ap);
  return code;
}
#undef KP_CHECK_PRINTF_

/* The name kp_abi.h gives a kp_dtype ("fp32", "bf16", ...), or "unknown" for any other value. */
static inline const char* kp_dtype_name(int dtype) {
  switch (dtype) {
    case KP_FP32: return "fp32";
    case KP_FP16: return "fp16";
    case KP_BF16: return "bf16";
    case KP_INT32: return "int32";
    case KP_INT64: return "int64";
    case KP_BOOL: return "bool";
    case KP_FP64: return "fp64";
    default: return "unknown";
  }
}

/* True when t is row-major contiguous: the stride of every dim of extent other than 1 is the
 * product of the extents after it (the stride of an extent-1 dim is never used, so any is
 * accepted). False when the rank is outside 0..KP_MAX_RANK. */
static inline bool kp_is_contiguous(const kp_tensor& t) {
  if (t.rank < 0 || t.rank > KP_MAX_RANK) return false;
  int64_t expected = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

/* Number of elements: the product of all extents, 1 for rank 0. -1 when the rank is outside
 * 0..KP_MAX_RANK. No overflow check: call it once the extents are known to be sane. */
static inline int64_t kp_numel(const kp_tensor& t) {
  if (t.rank < 0 || t.rank > KP_MAX_RANK) return -1;
  int64_t n = 1;
  for (int d = 0; d < t.rank; ++d) n *= t.shape[d];
  return n;
}

/* Number of rows of a row-wise operation over the last dim: the product of every extent but
 * the last, 1 for rank 1. -1 when the rank is outside 1..KP_MAX_RANK. */
static inline int64_t kp_rows(const kp_tensor& t) {
  if (t.rank < 1 || t.rank > KP_MAX_RANK) return -1;
  int64_t rows = 1;
  for (int d = 0; d < t.rank - 1; ++d) rows *= t.shape[d];
  return rows;
}

namespace kp_check_detail_ {

/* "s" unless n is 1, for "1 input" / "2 inputs". */
static inline const char* plural(int n) { return n == 1 ? "" : "s"; }

/* Writes "[d0, d1, ...]" (at most KP_MAX_RANK extents; "[?]" for a rank outside 0..KP_MAX_RANK)
 * into buf, truncated to size bytes; returns buf. */
static inline const char* format_dims(const int64_t* dims, int rank, char* buf, size_t size) {
  if (rank < 0 || rank > KP_MAX_RANK) {
    snprintf(buf, size, "[?]");
    return buf;
  }
  size_t used = 0;
  used += (size_t)snprintf(buf, size, "[");
  for (int d = 0; d < rank && used < size; ++d) {
    used +=
        (size_t)snprintf(buf + used, size - used, d == 0 ? "%lld" : ", %lld", (long long)dims[d]);
  }
  if (used < size) snprintf(buf + used, size - used, "]");
  return buf;
}

/* Room for "[" + KP_MAX_RANK extents of up to 20 characters each, ", " separators and "]". */
constexpr size_t kDimsBuf = 2 + KP_MAX_RANK * 22;

}  // namespace kp_check_detail_

/* KP_ERR_INVALID_ARGUMENT unless args has exactly `inputs` input tensors and `outputs` output
 * tensors and, when scalars >= 0, exactly `scalars` scalars (scalars < 0: any number). Call it
 * before reading args->inputs, args->outputs or args->scalars. */
static inline int kp_expect_counts(kp_args* args, const char* who, int inputs, int outputs,
                                   int scalars) {
  using kp_check_detail_::plural;
  if (args->num_inputs != inputs || args->num_outputs != outputs) {
    return kp_fail(args, KP_ERR_INVALID_ARGUMENT,
                   "%s: expected %d input%s and %d output%s, got %d and %d", who, inputs,
                   plural(inputs), outputs, plural(outputs), args->num_inputs, args->num_outputs);
  }
  if (scalars >= 0 && args->num_scalars != scalars) {
    return kp_fail(args, KP_ERR_INVALID_ARGUMENT, "%s: expected %d scalar%s, got %d", who, scalars,
                   plural(scalars), args->num_scalars);
  }
  return KP_OK;
}

/* KP_ERR_INVALID_ARGUMENT unless t.dtype is dtype (a kp_dtype). */
static inline int kp_expect_dtype(kp_args* args, const char* who, const kp_tensor& t,
                                  const char* name, int dtype) {
  if (t.dtype != dtype) {
    return kp_fail(args, KP_ERR_INVALID_ARGUMENT, "%s: %s must be %s, got %s (%d)", who, name,
                   kp_dtype_name(dtype), kp_dtype_name(t.dtype), (int)t.dtype);
  }
  return KP_OK;
}

/* KP_ERR_UNSUPPORTED_SHAPE unless min_rank <= t.rank <= max_rank (the same value twice for an
 * exact rank; 0 and KP_MAX_RANK for any valid rank). The range is clamped to 0..KP_MAX_RANK. */
static inline int kp_expect_rank(kp_args* args, const char* who, const kp_tensor& t,
                                 const char* name, int min_rank, int max_rank) {
  if (min_rank < 0) min_rank = 0;
  if (max_rank > KP_MAX_RANK) max_rank = KP_MAX_RANK;
  if (t.rank < min_rank || t.rank > max_rank) {
    if (min_rank == max_rank) {
      return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE, "%s: %s must have rank %d, got %d", who, name,
                     min_rank, (int)t.rank);
    }
    return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE, "%s: %s must have rank %d to %d, got %d", who,
                   name, min_rank, max_rank, (int)t.rank);
  }
  return KP_OK;
}

/* KP_ERR_UNSUPPORTED_SHAPE unless every extent of t is > 0 (t has at least one element) and
 * its rank is valid. A rank-0 tensor passes. */
static inline int kp_expect_positive_dims(kp_args* args, const char* who, const kp_tensor& t,
                                          const char* name) {
  if (int rc = kp_expect_rank(args, who, t, name, 0, KP_MAX_RANK)) return rc;
  for (int d = 0; d < t.rank; ++d) {
    if (t.shape[d] <= 0) {
      char dims[kp_check_detail_::kDimsBuf];
      return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE, "%s: %s must have every extent > 0, got %s",
                     who, name, kp_check_detail_::format_dims(t.shape, t.rank, dims, sizeof(dims)));
    }
  }
  return KP_OK;
}

/* KP_ERR_UNSUPPORTED_SHAPE unless t has exactly the extents `dims` (its rank is dims.size()).
 * Only shapes are compared; strides are kp_expect_contiguous's business. */
static inline int kp_expect_shape(kp_args* args, const char* who, const kp_tensor& t,
                                  const char* name, std::initializer_list<int64_t> dims) {
  bool same = t.rank >= 0 && t.rank <= KP_MAX_RANK && (size_t)t.rank == dims.size();
  for (int d = 0; same && d < t.rank; ++d) same = t.shape[d] == dims.begin()[d];
  if (!same) {
    char want[kp_check_detail_::kDimsBuf], got[kp_check_detail_::kDimsBuf];
    const int want_rank = dims.size() <= (size_t)KP_MAX_RANK ? (int)dims.size() : -1;
    return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE, "%s: %s must be %s, got %s", who, name,
                   kp_check_detail_::format_dims(dims.begin(), want_rank, want, sizeof(want)),
                   kp_check_detail_::format_dims(t.shape, t.rank, got, sizeof(got)));
  }
  return KP_OK;
}

/* KP_ERR_UNSUPPORTED_SHAPE unless t has the rank and extents of `like` (same rank, same
 * extent in every dim), and that rank is valid. */
static inline int kp_expect_same_shape(kp_args* args, const char* who, const kp_tensor& t,
                                       const char* name, const kp_tensor& like,
                                       const char* like_name) {
  bool same = like.rank >= 0 && like.rank <= KP_MAX_RANK && t.rank == like.rank;
  for (int d = 0; same && d < t.rank; ++d) same = t.shape[d] == like.shape[d];
  if (!same) {
    char want[kp_check_detail_::kDimsBuf], got[kp_check_detail_::kDimsBuf];
    return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE, "%s: %s must have the shape of %s %s, got %s",
                   who, name, like_name,
                   kp_check_detail_::format_dims(like.shape, like.rank, want, sizeof(want)),
                   kp_check_detail_::format_dims(t.shape, t.rank, got, sizeof(got)));
  }
  return KP_OK;
}

/* KP_ERR_UNSUPPORTED_SHAPE unless kp_is_contiguous(t). */
static inline int kp_expect_contiguous(kp_args* args, const char* who, const kp_tensor& t,
                                       const char* name) {
  if (!kp_is_contiguous(t)) {
    char shape[kp_check_detail_::kDimsBuf], strides[kp_check_detail_::kDimsBuf];
    return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE,
                   "%s: %s must be row-major contiguous, got shape %s strides %s", who, name,
                   kp_check_detail_::format_dims(t.shape, t.rank, shape, sizeof(shape)),
                   kp_check_detail_::format_dims(t.strides, t.rank, strides, sizeof(strides)));
  }
  return KP_OK;
}

/* KP_ERR_UNSUPPORTED_SHAPE unless value <= limit: for the limits of the kernel rather than of
 * the tensors (a grid dimension, a count the kernel indexes with int). `what` names the
 * quantity in the message, as in "softmax: rows is 3000000000, above the limit 2147483647". */
static inline int kp_expect_at_most(kp_args* args, const char* who, const char* what,
                                    int64_t value, int64_t limit) {
  if (value > limit) {
    return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE, "%s: %s is %lld, above the limit %lld", who,
                   what, (long long)value, (long long)limit);
  }
  return KP_OK;
}

/* What kp_expect_tensors requires of one tensor, in task.toml order. */
struct kp_tensor_spec {
  const char* name; /* for messages, as in task.toml */
  int dtype;        /* a kp_dtype */
  int min_rank;     /* accepted ranks: min_rank..max_rank (clamped to 0..KP_MAX_RANK) */
  int max_rank;
};

/* The common preamble of kp_run: checks, in this order, returning at the first failure,
 *  1. counts: args has exactly inputs.size() inputs and outputs.size() outputs
 *     (kp_expect_counts; scalars are not checked), KP_ERR_INVALID_ARGUMENT;
 *  2. dtypes: every input, then every output, has its spec's dtype (kp_expect_dtype),
 *     KP_ERR_INVALID_ARGUMENT;
 *  3. layout: every input, then every output, has a rank in its spec's range
 *     (kp_expect_rank), every extent > 0 (kp_expect_positive_dims) and is row-major contiguous
 *     (kp_expect_contiguous), KP_ERR_UNSUPPORTED_SHAPE.
 * So every argument error is reported before any shape error. On KP_OK, args->inputs[i] and
 * args->outputs[i] may be read, and their shape[0..rank-1] are positive. */
static inline int kp_expect_tensors(kp_args* args, const char* who,
                                    std::initializer_list<kp_tensor_spec> inputs,
                                    std::initializer_list<kp_tensor_spec> outputs) {
  if (int rc = kp_expect_counts(args, who, (int)inputs.size(), (int)outputs.size(), -1)) return rc;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const kp_tensor_spec& s = inputs.begin()[i];
    if (int rc = kp_expect_dtype(args, who, args->inputs[i], s.name, s.dtype)) return rc;
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const kp_tensor_spec& s = outputs.begin()[i];
    if (int rc = kp_expect_dtype(args, who, args->outputs[i], s.name, s.dtype)) return rc;
  }
  for (size_t i = 0; i < inputs.size() + outputs.size(); ++i) {
    const bool in = i < inputs.size();
    const kp_tensor_spec& s = in ? inputs.begin()[i] : outputs.begin()[i - inputs.size()];
    const kp_tensor& t = in ? args->inputs[i] : args->outputs[i - inputs.size()];
    if (int rc = kp_expect_rank(args, who, t, s.name, s.min_rank, s.max_rank)) return rc;
    if (int rc = kp_expect_positive_dims(args, who, t, s.name)) return rc;
    if (int rc = kp_expect_contiguous(args, who, t, s.name)) return rc;
  }
  return KP_OK;
}

/* Call right after the launches (kernels or library calls) on args->stream: KP_ERR_CUDA, with
 * the error's name and string, when cudaGetLastError reports an error (a bad launch
 * configuration, or an earlier asynchronous error); KP_OK otherwise. It does not synchronize,
 * so an error inside a kernel still running is not seen here. */
static inline int kp_check_launch(kp_args* args, const char* who) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return kp_fail(args, KP_ERR_CUDA, "%s: launch failed: %s (%s)", who, cudaGetErrorString(err),
                   cudaGetErrorName(err));
  }
  return KP_OK;
}

#endif /* KERNELPRO_KP_CHECK_H_ */
