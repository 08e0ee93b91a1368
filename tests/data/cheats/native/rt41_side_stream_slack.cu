// Red-team cheat (rt41) for examples/gemm_fp32 (event-timed, milliseconds a call): a quarter of
// the rows of C is computed on a low-priority stream of its own that is never joined to
// args->stream, so the end event is recorded once the other three quarters are done: the call is
// timed at about 0.75 of its work (a 1.33x "speedup"), and the rest runs on after the end event.
// Sized to the wall-clock rule: the call's wall time (to the device-wide sync) is about the whole
// work, under wall_ratio (1.5) x 0.75 + wall_slack_us (100 us).
// It stays on args->stream whenever the side stream would be seen: while the stream is being
// captured (the replay check and graph replay, where work left outside the graph is missing from
// its outputs), and whenever args->stream is not idle as the call starts (an event recorded on it
// does not complete within 10 us). An event-timed call, a correctness trial and a result-cache call
// each start on an idle stream; an energy call whose output is checked starts behind its own
// output's poisoning (queued without a sync), and an energy call inside a chunk behind the
// previous call, so those compare against work that is all on args->stream. Each call first makes
// args->stream wait for the previous call's side work, so no later call races with it.
// Weakness: eval::wall_says_work_escaped (verdict/worker_plan.cc), applied in
// NativeEvaluator::Impl::time_library (worker/evaluation_timing.cc) with the defaults of
// eval::EvalOptions (verdict/eval_options.h: wall_ratio 1.5, wall_slack_us 100): any escaped work
// under half the timed work passes. replay_check catches escaped work only when it is escaped
// during the capture.
// A correct judge: rejected (side_stream). The current worker: ok, with the call timed at 3/4 of
// its work.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>

namespace {

constexpr int kBM = 64, kBN = 64, kBK = 16, kThreads = 256;
constexpr int kSideQuarter = 4;  // the side stream gets 1/kSideQuarter of the row tiles

// 64 x 64 tiles, 4 x 4 per thread (as honest/gemm_fp32/register_tiles.cu), over the row tiles
// [tile0, tile0 + gridDim.y).
__global__ void __launch_bounds__(kThreads)
gemm_rows(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int m, int n, int k, int tile0) {
  __shared__ float as[kBK][kBM];
  __shared__ float bs[kBK][kBN];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int row0 = (tile0 + blockIdx.y) * kBM, col0 = blockIdx.x * kBN;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < k; k0 += kBK) {
    for (int i = 0; i < 4; ++i) {
      const int e = tid + i * kThreads;
      const int ar = e / kBK, ak = e % kBK;
      as[ak][ar] = (row0 + ar < m && k0 + ak < k) ? A[(int64_t)(row0 + ar) * k + k0 + ak] : 0.0f;
      const int bk = e / kBN, bc = e % kBN;
      bs[bk][bc] = (k0 + bk < k && col0 + bc < n) ? B[(int64_t)(k0 + bk) * n + col0 + bc] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      float a[4], b[4];
      for (int i = 0; i < 4; ++i) a[i] = as[kk][ty * 4 + i];
      for (int j = 0; j < 4; ++j) b[j] = bs[kk][tx * 4 + j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i) {
    const int r = row0 + ty * 4 + i;
    if (r >= m) continue;
    for (int j = 0; j < 4; ++j) {
      const int c = col0 + tx * 4 + j;
      if (c < n) C[(int64_t)r * n + c] = acc[i][j];
    }
  }
}

cudaStream_t side = nullptr;
cudaEvent_t side_done = nullptr, probe = nullptr;
bool side_pending = false;

// Whether everything queued on `s` so far completes within `us` microseconds.
bool idle(cudaStream_t s, double us) {
  if (cudaEventRecord(probe, s) != cudaSuccess) return false;
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t e = cudaEventQuery(probe);
    if (e == cudaSuccess) return true;
    if (e != cudaErrorNotReady) {
      cudaGetLastError();
      return false;
    }
    if (std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() > us) return false;
  }
}

}  // namespace

KP_EXPORT int kp_run(kp_args* a) {
  if (a->num_inputs != 2 || a->num_outputs != 1) return KP_ERR_INVALID_ARGUMENT;
  const float* A = (const float*)a->inputs[0].data;
  const float* B = (const float*)a->inputs[1].data;
  float* C = (float*)a->outputs[0].data;
  const int m = (int)a->inputs[0].shape[0], k = (int)a->inputs[0].shape[1], n = (int)a->inputs[1].shape[1];
  cudaStream_t s = (cudaStream_t)a->stream;
  const int tiles = (m + kBM - 1) / kBM, cols = (n + kBN - 1) / kBN;

  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  cudaStreamIsCapturing(s, &capturing);
  if (capturing == cudaStreamCaptureStatusNone && !side) {
    int least = 0, greatest = 0;
    cudaDeviceGetStreamPriorityRange(&least, &greatest);
    if (cudaStreamCreateWithPriority(&side, cudaStreamNonBlocking, least) != cudaSuccess ||
        cudaEventCreateWithFlags(&side_done, cudaEventDisableTiming) != cudaSuccess ||
        cudaEventCreateWithFlags(&probe, cudaEventDisableTiming) != cudaSuccess) {
      side = nullptr;
      cudaGetLastError();
    }
  }
  if (capturing == cudaStreamCaptureStatusNone && side_pending) {
    cudaStreamWaitEvent(s, side_done, 0);  // the previous call's side work, before anything else
    side_pending = false;
  }
  const int side_tiles = tiles / kSideQuarter;
  if (capturing != cudaStreamCaptureStatusNone || !side || side_tiles == 0 || !idle(s, 10.0)) {
    gemm_rows<<<dim3((unsigned)cols, (unsigned)tiles), kThreads, 0, s>>>(A, B, C, m, n, k, 0);
    return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
  }
  // Timed rows first, on the stream the events are on; the side stream's blocks (low priority)
  // fill in only as the timed kernel's blocks run out, and finish after its end event.
  gemm_rows<<<dim3((unsigned)cols, (unsigned)(tiles - side_tiles)), kThreads, 0, s>>>(A, B, C, m, n, k, side_tiles);
  gemm_rows<<<dim3((unsigned)cols, (unsigned)side_tiles), kThreads, 0, side>>>(A, B, C, m, n, k, 0);
  cudaEventRecord(side_done, side);
  side_pending = true;
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
