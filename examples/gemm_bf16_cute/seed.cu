// Seed candidate for the gemm_bf16_cute task: C = A @ B, row-major, bf16 in and out, fp32
// accumulation, written with CuTe (CUTLASS 4.x headers) for sm_90a: TMA loads into swizzled
// shared memory, a multi-stage mbarrier pipeline, and wgmma (GMMA) tensor-core instructions.
//
// Operands. A is [M, K] row-major, so K is its contiguous dim ("K-major"). B is [K, N]
// row-major; CuTe's GEMM convention views B as an (N, K) matrix, whose contiguous dim is N
// ("MN-major"). wgmma reads both operands from shared memory in either majorness, so neither
// is transposed: A is staged K-major and B MN-major, each in the 128-byte swizzled layout of
// the GMMA atoms (GMMA::Layout_K_SW128_Atom, GMMA::Layout_MN_SW128_Atom), which is also a
// layout TMA writes natively (CU_TENSOR_MAP_SWIZZLE_128B).
//
// Tiling. Each CTA computes one BLOCK_M x BLOCK_N tile of C (128 x BLOCK_N, BLOCK_N = 256 by
// default, 128 as the alternative) and walks K in steps of BLOCK_K = 64 (one 128-byte swizzle
// row of bf16). The grid is (N / BLOCK_N, M / BLOCK_M), one tile per CTA; shapes that are not
// multiples of the tile are rejected with KP_ERR_UNSUPPORTED_SHAPE rather than predicated.
//
// Threads. 384 threads, three warpgroups, warp-specialized:
//   warpgroup 0, the producer: one thread issues every TMA load; the other 127 threads exit.
//   warpgroups 1 and 2, the consumers: each owns 64 rows of the tile and issues
//     64 x BLOCK_N x 16 wgmma (SM90_64xBLOCK_Nx16_F32BF16BF16_SS), four per K tile, into fp32
//     register accumulators (BLOCK_N / 2 floats per thread).
//
// Pipeline. STAGES (4 by default, 3 as the alternative) shared-memory slots, each holding one
// A tile (128 x 64) and one B tile (BLOCK_N x 64): 48 KiB per slot at BLOCK_N = 256, 192 KiB
// in all. Each slot s has two mbarriers:
//   full[s]  (arrival count 1 + transaction bytes): the producer arrives on it with
//            expect_tx(bytes of one A tile + one B tile), then issues the TMA loads of both
//            tiles (one 64 x 128 box for A, one 64 x 64 box per 64 columns of B: four at
//            BLOCK_N = 256, two at 128), which signal it; its phase completes once both tiles
//            have landed in shared memory.
//   empty[s] (arrival count 256, one per consumer thread): each consumer thread arrives once it
//            knows the wgmmas that read slot s have finished.
// K tile t uses slot s = t % STAGES in round r = t / STAGES; waits are on the parity of r.
//   Producer, tile t: wait empty[s] with parity (r & 1) ^ 1, then load into slot s. In round 0
//     this returns at once (an mbarrier counts the phase before its first as complete); in
//     round r > 0 it waits for the 256 arrivals that released tile t - STAGES.
//   Consumers, tile t: wait full[s] with parity r & 1, issue the four wgmmas on slot s as one
//     commit group, then wgmma.wait_group 1, which guarantees that the group of tile t - 1 has
//     completed (its shared-memory reads included), and only then arrive on empty[(t-1) % S].
//     So one wgmma group stays in flight while the next one is issued, and no slot is released
//     while a wgmma may still read it.
// Why it is race-free: a slot is rewritten (TMA, tile t + STAGES) only after all 256 consumer
// threads released it, which each does after its reads of tile t completed; a slot is read
// (wgmma, tile t) only after full[s] completed for tile t, which implies the TMA bytes are
// visible. Parity waits cannot alias: the producer cannot complete full[s] twice before every
// consumer has waited on it (the second completion needs their empty[s] arrivals), and the
// consumers cannot complete empty[s] twice before the producer has waited on it (the second
// needs a full[s] completion the producer has not yet caused).
//
// Epilogue. After the last K tile (wgmma.wait_group 0), each consumer thread converts its fp32
// accumulators to bf16 with round-to-nearest-even (one rounding per output) and stores them
// straight to global memory through the accumulator partition of C, two adjacent columns
// (4 bytes) per store.
//
// Measured (bench/results/h100-2026-12-06-optimize, an H100 80GB HBM3): correct, every output
// equal to cuBLAS's; 0.217 ms per call against cuBLAS GemmEx's 0.192 ms (0.89x, 633 against 715
// TFLOP/s) at BLOCK_N=256, STAGES=4. It builds to HGMMA, UTMALDG and SYNCS with no spills
// (toolchain test CuteSeedBuildsToWgmmaAndTma), 154 registers per thread.
//
// Left on the table: the epilogue writes 4-byte pieces straight from registers (staging the
// tile through shared memory for a TMA store or 16-byte stores would coalesce better); no
// persistent tile scheduler or rasterization for L2 reuse; no cluster multicast of A/B tiles;
// no register reallocation (setmaxnreg) between producer and consumers; one tile per CTA, so
// the epilogue does not overlap the next tile's main loop.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

// cute/tensor.hpp first: the atom headers below expect what it declares.
#include <cute/tensor.hpp>

#include <cute/atom/copy_traits_sm90_tma.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/bfloat16.h>

// Defaults for building by hand; kernelpro passes -DNAME=value for each KP_TUNE name.
#ifndef BLOCK_N
#define BLOCK_N 256
#endif
#ifndef STAGES
#define STAGES 4
#endif
KP_TUNE(BLOCK_N, 256, 128)
KP_TUNE(STAGES, 4, 3)

namespace {

// No namespace-wide `using namespace cute`: CuTe has anonymous namespaces of its own, and
// the kernel's host stub must name this file's unambiguously.
using bf16 = cutlass::bfloat16_t;
using cute::_1;
using cute::_2;
using cute::_3;
using cute::_64;
using cute::Int;
using cute::Layout;
using cute::Shape;
using cute::Step;
namespace GMMA = cute::GMMA;

constexpr int kBlockM = 128;
constexpr int kBlockN = BLOCK_N;
constexpr int kBlockK = 64;
constexpr int kStages = STAGES;
constexpr int kConsumerWarpgroups = kBlockM / 64;  // each consumer warpgroup owns 64 rows
constexpr int kConsumerThreads = 128 * kConsumerWarpgroups;
constexpr int kThreads = 128 + kConsumerThreads;  // producer warpgroup + consumers

using TileM = Int<kBlockM>;
using TileN = Int<kBlockN>;
using TileK = Int<kBlockK>;
using StageCount = Int<kStages>;

// Shared-memory layouts, (rows, k, stage). A: K-major 128B-swizzle atoms (8 rows x 64 k) tiled
// down M first, so one stage is 128 rows x 64 k = 16 KiB, contiguous. B: MN-major atoms
// (64 n x 8 k) tiled along K first (Step<_2,_1,_3>), so each 64-column panel of B is 64 x 64 =
// 8 KiB contiguous and one TMA box covers it.
using SmemLayoutA = decltype(cute::tile_to_shape(GMMA::Layout_K_SW128_Atom<bf16>{},
                                           cute::make_shape(TileM{}, TileK{}, StageCount{})));
using SmemLayoutB = decltype(cute::tile_to_shape(GMMA::Layout_MN_SW128_Atom<bf16>{},
                                           cute::make_shape(TileN{}, TileK{}, StageCount{}),
                                           Step<_2, _1, _3>{}));

// 64 x BLOCK_N x 16 wgmma, A K-major, B MN-major, fp32 accumulators; kConsumerWarpgroups
// copies stacked along M give the 128 x BLOCK_N CTA tile.
using MmaOp = decltype(GMMA::ss_op_selector<bf16, bf16, float, Shape<_64, TileN, TileK>,
                                            GMMA::Major::K, GMMA::Major::MN>());
using TiledMma = decltype(cute::make_tiled_mma(MmaOp{}, Layout<Shape<Int<kConsumerWarpgroups>, _1, _1>>{}));

struct SharedStorage {
  alignas(1024) bf16 a[cute::cosize_v<SmemLayoutA>];
  alignas(1024) bf16 b[cute::cosize_v<SmemLayoutB>];
  alignas(8) uint64_t full[kStages];
  alignas(8) uint64_t empty[kStages];
};

// TMA writes, and wgmma reads, the 128-byte swizzle relative to 1024-byte-aligned addresses;
// the dynamic shared memory base is aligned up to that by hand, so ask for this much slack.
constexpr size_t kSmemAlign = 1024;
constexpr size_t kSmemBytes = sizeof(SharedStorage) + kSmemAlign;
static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA exceeds the sm_90 limit");

// Bytes one stage receives from TMA: one A tile and one B tile.
constexpr uint32_t kStageBytes =
    uint32_t(sizeof(bf16)) * uint32_t(kBlockM * kBlockK + kBlockN * kBlockK);

static_assert(cute::size(TiledMma{}) == kConsumerThreads, "one MMA thread per consumer thread");
static_assert(kBlockK % 16 == 0 && kBlockK * sizeof(bf16) == 128,
              "BLOCK_K must span exactly one 128-byte swizzle row");

template <class TmaA, class TmaB>
__global__ void __launch_bounds__(kThreads, 1)
gemm_cute_kernel(CUTE_GRID_CONSTANT TmaA const tma_a, CUTE_GRID_CONSTANT TmaB const tma_b,
                 bf16* __restrict__ c_ptr, int m, int n, int k) {
  using namespace cute;
  extern __shared__ uint8_t smem_raw[];
  SharedStorage& smem = *reinterpret_cast<SharedStorage*>(
      (reinterpret_cast<uintptr_t>(smem_raw) + (kSmemAlign - 1)) & ~uintptr_t(kSmemAlign - 1));

  const int warpgroup = threadIdx.x / 128;
  const int m_blk = blockIdx.y;
  const int n_blk = blockIdx.x;
  const int k_tiles = k / kBlockK;

  if (threadIdx.x == 0) {
    prefetch_tma_descriptor(tma_a.get_tma_descriptor());
    prefetch_tma_descriptor(tma_b.get_tma_descriptor());
    for (int s = 0; s < kStages; ++s) {
      cutlass::arch::ClusterBarrier::init(&smem.full[s], 1);
      cutlass::arch::ClusterBarrier::init(&smem.empty[s], kConsumerThreads);
    }
    cutlass::arch::fence_barrier_init();
  }
  __syncthreads();

  // Shared-memory tensors (rows, k, stage).
  Tensor sA = make_tensor(make_smem_ptr(smem.a), SmemLayoutA{});
  Tensor sB = make_tensor(make_smem_ptr(smem.b), SmemLayoutB{});

  if (warpgroup == 0) {
    // Producer. Only one thread issues TMA; the rest of the warpgroup has nothing to do.
    if (threadIdx.x == 0) {
      // TMA coordinate tensors of the whole problem, tiled: (BLOCK_M, BLOCK_K, k_tiles) for
      // this CTA's rows of A and (BLOCK_N, BLOCK_K, k_tiles) for its columns of B.
      Tensor mA = tma_a.get_tma_tensor(make_shape(m, k));
      Tensor mB = tma_b.get_tma_tensor(make_shape(n, k));
      Tensor gA = local_tile(mA, make_shape(TileM{}, TileK{}), make_coord(m_blk, _));
      Tensor gB = local_tile(mB, make_shape(TileN{}, TileK{}), make_coord(n_blk, _));
      // (TMA, k_tiles) sources and (TMA, stage) destinations; no multicast (cluster of one).
      auto [tAgA, tAsA] = tma_partition(tma_a, Int<0>{}, Layout<_1>{}, group_modes<0, 2>(sA),
                                        group_modes<0, 2>(gA));
      auto [tBgB, tBsB] = tma_partition(tma_b, Int<0>{}, Layout<_1>{}, group_modes<0, 2>(sB),
                                        group_modes<0, 2>(gB));
      for (int t = 0; t < k_tiles; ++t) {
        const int s = t % kStages;
        const uint32_t round_parity = uint32_t(t / kStages) & 1u;
        cutlass::arch::ClusterBarrier::wait(&smem.empty[s], round_parity ^ 1u);
        cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(&smem.full[s], kStageBytes);
        copy(tma_a.with(smem.full[s]), tAgA(_, t), tAsA(_, s));
        copy(tma_b.with(smem.full[s]), tBgB(_, t), tBsB(_, s));
      }
    }
    return;
  }

  // Consumers: threads 128 .. 128 + kConsumerThreads - 1, MMA thread index 0 .. 255.
  TiledMma tiled_mma;
  ThrMMA thr_mma = tiled_mma.get_thread_slice(threadIdx.x - 128);

  Tensor mC = make_tensor(make_gmem_ptr(c_ptr), make_shape(m, n),
                          make_stride(int64_t(n), Int<1>{}));
  Tensor gC = local_tile(mC, make_shape(TileM{}, TileN{}), make_coord(m_blk, n_blk));

  Tensor tCsA = thr_mma.partition_A(sA);         // (MMA, MMA_M, MMA_K, stage)
  Tensor tCsB = thr_mma.partition_B(sB);         // (MMA, MMA_N, MMA_K, stage)
  Tensor tCrA = thr_mma.make_fragment_A(tCsA);   // wgmma shared-memory descriptors
  Tensor tCrB = thr_mma.make_fragment_B(tCsB);
  Tensor tCgC = thr_mma.partition_C(gC);         // (MMA, MMA_M, MMA_N)
  Tensor acc = thr_mma.make_fragment_C(tCgC);    // fp32 registers, same shape

  // The first wgmma of the first K tile overwrites the (uninitialized) accumulators; every
  // later one adds to them.
  tiled_mma.accumulate_ = GMMA::ScaleOut::Zero;

  warpgroup_fence_operand(acc);
  for (int t = 0; t < k_tiles; ++t) {
    const int s = t % kStages;
    const uint32_t round_parity = uint32_t(t / kStages) & 1u;
    cutlass::arch::ClusterBarrier::wait(&smem.full[s], round_parity);

    warpgroup_fence_operand(acc);
    warpgroup_arrive();
    CUTE_UNROLL
    for (int kb = 0; kb < size<2>(tCrA); ++kb) {
      gemm(tiled_mma, tCrA(_, _, kb, s), tCrB(_, _, kb, s), acc);
      tiled_mma.accumulate_ = GMMA::ScaleOut::One;
    }
    warpgroup_commit_batch();
    // At most one group (this tile's) still in flight: tile t - 1's wgmmas are done reading
    // their slot, so it can be handed back to the producer.
    warpgroup_wait<1>();
    warpgroup_fence_operand(acc);
    if (t > 0) cutlass::arch::ClusterBarrier::arrive(&smem.empty[(t - 1) % kStages]);
  }
  warpgroup_wait<0>();
  warpgroup_fence_operand(acc);
  // The last slot is not released: the producer has no more tiles to load.

  // Epilogue: round each fp32 sum once to bf16 (round to nearest even) and store it. In the
  // wgmma accumulator layout, values 2j and 2j+1 of a thread are adjacent columns of one row
  // (asserted below), at an even column, so each pair is one aligned 4-byte store. (Storing
  // the elements one by one through cute's bf16 conversion made ptxas serialize the wgmmas of
  // the main loop, warning C7514.)
  static_assert(decltype(size<0, 0>(tCgC))::value == 2 && decltype(stride<0, 0>(tCgC))::value == 1,
                "expected pairs of adjacent columns in the accumulator layout");
  CUTE_UNROLL
  for (int i = 0; i < size(acc); i += 2) {
    *reinterpret_cast<__nv_bfloat162*>(&tCgC(i)) = __floats2bfloat162_rn(acc(i), acc(i + 1));
  }
}

// True when the driver exposes cuTensorMapEncodeTiled, which make_tma_copy calls through the
// runtime's driver entry point (a failure there would abort inside CuTe instead of returning).
bool tensor_map_encoder_available() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult query = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t err = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
                                                           cudaEnableDefault, &query);
  return err == cudaSuccess && query == cudaDriverEntryPointSuccess && fn != nullptr;
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  const char* who = "gemm_bf16_cute";
  if (int rc = kp_expect_tensors(args, who, {{"A", KP_BF16, 2, 2}, {"B", KP_BF16, 2, 2}},
                                 {{"C", KP_BF16, 2, 2}})) {
    return rc;
  }
  const kp_tensor& a = args->inputs[0];
  const kp_tensor& b = args->inputs[1];
  const kp_tensor& c = args->outputs[0];
  const int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  if (int rc = kp_expect_shape(args, who, b, "B", {k, n})) return rc;
  if (int rc = kp_expect_shape(args, who, c, "C", {m, n})) return rc;
  // Sizes are passed to the kernel (and to TMA coordinates) as int.
  if (int rc = kp_expect_at_most(args, who, "M", m, INT_MAX)) return rc;
  if (int rc = kp_expect_at_most(args, who, "N", n, INT_MAX)) return rc;
  if (int rc = kp_expect_at_most(args, who, "K", k, INT_MAX)) return rc;
  // No predication: every tile is full. (These also make the row strides of A and B multiples
  // of 16 bytes, as TMA requires.)
  if (m % kBlockM != 0 || n % kBlockN != 0 || k % kBlockK != 0) {
    return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE,
                   "%s: M=%lld N=%lld K=%lld must be multiples of %d, %d and %d (the CTA tile)",
                   who, (long long)m, (long long)n, (long long)k, kBlockM, kBlockN, kBlockK);
  }
  if (int rc = kp_expect_at_most(args, who, "M / 128 (grid y)", m / kBlockM, 65535)) return rc;
  // TMA needs 16-byte-aligned global base addresses; the epilogue stores bf16 pairs (4 bytes).
  if ((reinterpret_cast<uintptr_t>(a.data) | reinterpret_cast<uintptr_t>(b.data)) % 16 != 0 ||
      reinterpret_cast<uintptr_t>(c.data) % 4 != 0) {
    return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE,
                   "%s: A and B must be 16-byte aligned and C 4-byte aligned", who);
  }
  if (!tensor_map_encoder_available()) {
    return kp_fail(args, KP_ERR_CUDA, "%s: cuTensorMapEncodeTiled is not available", who);
  }

  using namespace cute;
  const int mi = (int)m, ni = (int)n, ki = (int)k;
  const bf16* a_ptr = static_cast<const bf16*>(a.data);
  const bf16* b_ptr = static_cast<const bf16*>(b.data);
  bf16* c_ptr = static_cast<bf16*>(c.data);

  // Global views for the TMA descriptors: A as (M, K) with K contiguous, B as (N, K) with N
  // contiguous (B is [K, N] row-major).
  Tensor gA = make_tensor(make_gmem_ptr(a_ptr), make_shape(mi, ki), make_stride(int64_t(ki), Int<1>{}));
  Tensor gB = make_tensor(make_gmem_ptr(b_ptr), make_shape(ni, ki), make_stride(Int<1>{}, int64_t(ni)));
  auto tma_a = make_tma_copy(SM90_TMA_LOAD{}, gA, SmemLayoutA{}(_, _, 0));
  auto tma_b = make_tma_copy(SM90_TMA_LOAD{}, gB, SmemLayoutB{}(_, _, 0));

  auto kernel = &gemm_cute_kernel<decltype(tma_a), decltype(tma_b)>;
  cudaError_t err =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)kSmemBytes);
  if (err != cudaSuccess) {
    return kp_fail(args, KP_ERR_CUDA, "%s: cudaFuncSetAttribute failed: %s (%s)", who,
                   cudaGetErrorString(err), cudaGetErrorName(err));
  }

  const dim3 grid((unsigned)(n / kBlockN), (unsigned)(m / kBlockM));
  const dim3 block(kThreads);
  kernel<<<grid, block, kSmemBytes, (cudaStream_t)args->stream>>>(tma_a, tma_b, c_ptr, mi, ni, ki);
  return kp_check_launch(args, who);
}
