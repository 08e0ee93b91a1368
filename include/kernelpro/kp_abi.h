/*
 * kp_abi.h: the candidate ABI of kernelpro (version 1).
 *
 * Every native candidate and every task reference is a CUDA source file that includes this
 * header and exports one entry point:
 *
 *     KP_EXPORT int kp_run(kp_args* args);
 *
 * kernelpro builds the file into a shared object with nvcc and loads it with dlopen inside the
 * worker process. The worker owns every buffer: it allocates the inputs (filled with random
 * values drawn from the task's distributions), the outputs (poisoned with NaN or a sentinel
 * before each call, so an element the candidate does not write is caught), and the workspace.
 *
 * Contract of kp_run:
 *  - Launch all device work on args->stream, and nowhere else. Work on another stream or
 *    thread, or work left running after the call returns without being ordered on
 *    args->stream, is detected and the candidate is rejected.
 *  - Do not synchronize the device, allocate device memory or change device state (L2
 *    persistence, limits) inside kp_run: allocation belongs in the workspace
 *    (see kp_workspace_bytes below).
 *  - Do not write to inputs: they are checksummed before and after every call.
 *  - Write every element of every output on every call: results must not be cached between
 *    calls (inputs change in place between calls).
 *  - Return KP_OK on success, or one of the kp_status codes below; any non-zero status is an
 *    evaluation outcome (runtime_error) carrying the code and, if set, args->message.
 *
 * Plain C, so that a candidate written in C or C++ (CUDA, CuTe) can use it. Tensors are
 * described by a data pointer, a dtype, a rank, a shape and strides in elements (not bytes);
 * the worker passes contiguous row-major tensors, but a candidate that reads strides stays
 * correct if that changes.
 */
#ifndef KERNELPRO_KP_ABI_H_
#define KERNELPRO_KP_ABI_H_

#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
#include <initializer_list>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ABI version the worker passes in kp_args.abi_version; a candidate may check it. */
#define KP_ABI_VERSION 1

/* Largest tensor rank the ABI carries. */
#define KP_MAX_RANK 8

/* Marks the exported entry points with default visibility and C linkage. */
#if defined(__GNUC__)
#define KP_EXPORT extern "C" __attribute__((visibility("default")))
#else
#define KP_EXPORT extern "C"
#endif

/*
 * KP_TUNE(NAME, default, alternative...) declares a compile-time parameter that the search
 * may tune without an LLM. kernelpro reads these declarations from the source and compiles
 * with -DNAME=value (the first value unless a search chose another), so the source uses NAME
 * as an integer constant:
 *
 *     KP_TUNE(BLOCK, 256, 128, 512)
 *     __global__ void k(...) { __shared__ float tile[BLOCK]; ... }
 *
 * The declaration itself expands to a static_assert that the chosen value is one of the
 * listed ones, so a stray -D value is a compile error, not a silent change.
 */
#define KP_TUNE(name, ...)                                                                 \
  static_assert(kp_tune_detail_::contains((name), {__VA_ARGS__}),                           \
                "KP_TUNE: " #name " is not one of the declared values");

/* Element types. Stored and printed as their names: "fp32", "fp16", "bf16", "int32", "int64",
 * "bool", "fp64". bool occupies one byte holding 0 or 1. */
typedef enum kp_dtype {
  KP_FP32 = 0,
  KP_FP16 = 1,
  KP_BF16 = 2,
  KP_INT32 = 3,
  KP_INT64 = 4,
  KP_BOOL = 5,
  KP_FP64 = 6
} kp_dtype;

/* Status codes returned by kp_run. */
typedef enum kp_status {
  KP_OK = 0,
  KP_ERR_UNSUPPORTED_SHAPE = 1, /* the candidate does not handle these shapes or strides */
  KP_ERR_INVALID_ARGUMENT = 2,  /* a scalar or dtype the candidate does not accept */
  KP_ERR_CUDA = 3,              /* a CUDA call failed; put the error string in message */
  KP_ERR_WORKSPACE = 4,         /* the workspace given is smaller than kp_workspace_bytes asked */
  KP_ERR_OTHER = 5
} kp_status;

typedef struct kp_tensor {
  void* data;                      /* device pointer */
  int32_t dtype;                   /* a kp_dtype */
  int32_t rank;                    /* 0 .. KP_MAX_RANK */
  int64_t shape[KP_MAX_RANK];      /* elements per dimension */
  int64_t strides[KP_MAX_RANK];    /* in elements, row-major contiguous by default */
} kp_tensor;

/* A named scalar parameter from task.toml. kind is 0 for a real (use f) and 1 for an
 * integer (use i); both fields are filled either way. */
typedef struct kp_scalar {
  const char* name;
  int32_t kind;
  double f;
  int64_t i;
} kp_scalar;

/* Opaque CUDA stream; the same type as cudaStream_t, without including CUDA headers. */
typedef struct CUstream_st* kp_stream;

typedef struct kp_args {
  int32_t abi_version;             /* KP_ABI_VERSION */
  int32_t num_inputs;
  const kp_tensor* inputs;         /* in task.toml order */
  int32_t num_outputs;
  const kp_tensor* outputs;        /* in task.toml order; the data they point to is writable */
  int32_t num_scalars;
  const kp_scalar* scalars;        /* in task.toml order */
  void* workspace;                 /* device memory, kp_workspace_bytes(args) bytes, or NULL */
  size_t workspace_bytes;
  kp_stream stream;                /* launch everything here */
  char message[256];               /* optional: a reason when returning non-zero */
} kp_args;

/* The entry point every candidate and reference exports. */
typedef int (*kp_run_fn)(kp_args* args);

/* Optional export, kp_workspace_bytes: device workspace the candidate needs for these shapes, in bytes. Called
 * once per evaluation, before any timed call; workspace and workspace_bytes are 0 then. */
typedef size_t (*kp_workspace_bytes_fn)(const kp_args* args);

#ifdef __cplusplus
} /* extern "C" */

namespace kp_tune_detail_ {
constexpr bool contains(long long value, std::initializer_list<long long> list) {
  for (long long v : list) {
    if (v == value) return true;
  }
  return false;
}
}  // namespace kp_tune_detail_
#endif

#endif /* KERNELPRO_KP_ABI_H_ */
