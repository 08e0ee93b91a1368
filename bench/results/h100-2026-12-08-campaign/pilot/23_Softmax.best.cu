#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <stdint.h>
#include <math.h>

namespace cg = cooperative_groups;

#define CLUSTER 8
#define THREADS 1024
#define VPT 12                       // float4 per thread per row-chunk
#define GROUPS 3                     // cp.async commit groups
#define VPG (VPT / GROUPS)           // float4 per group per thread
#define CHUNK4 (THREADS * VPT)       // 12288 float4 per CTA (192 KB)
#define CHUNK (CHUNK4 * 4)           // 49152 floats per CTA
#define ROWLEN (CHUNK * CLUSTER)     // 393216 floats per row
#define FULL 0xffffffffu

__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
    float M = fmaxf(m, m2);
    float Ms = (M == -INFINITY) ? 0.f : M;
    s = s * __expf(m - Ms) + s2 * __expf(m2 - Ms);
    m = M;
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
    unsigned sa = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(sa), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory");
}

// Online (max, sum) update over one group of this thread's float4 slots.
__device__ __forceinline__ void accum_group(const float4* sm4, int g, int tid, float& m, float& s) {
    float4 v[VPG];
#pragma unroll
    for (int k = 0; k < VPG; ++k) v[k] = sm4[(g * VPG + k) * THREADS + tid];
    float lm = -INFINITY;
#pragma unroll
    for (int k = 0; k < VPG; ++k)
        lm = fmaxf(lm, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
    float M = fmaxf(m, lm);
    float Ms = (M == -INFINITY) ? 0.f : M;
    float acc = 0.f;
#pragma unroll
    for (int k = 0; k < VPG; ++k)
        acc += (__expf(v[k].x - Ms) + __expf(v[k].y - Ms)) + (__expf(v[k].z - Ms) + __expf(v[k].w - Ms));
    s = s * __expf(m - Ms) + acc;
    m = M;
}

// One 8-CTA cluster per row; each CTA owns a 192 KB chunk held in shared memory,
// so DRAM sees exactly one read and one write per element.
__global__ void __launch_bounds__(THREADS, 1)
softmax_cluster_kernel(const float* __restrict__ x, float* __restrict__ y, int rows) {
    extern __shared__ float4 sm4[];
    __shared__ float2 red[THREADS / 32];
    __shared__ float2 part[2];

    cg::cluster_group cluster = cg::this_cluster();
    const unsigned rank = cluster.block_rank();
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int cid = blockIdx.x / CLUSTER;
    const int ncl = gridDim.x / CLUSTER;

    int it = 0;
    for (int row = cid; row < rows; row += ncl, ++it) {
        const size_t off = (size_t)row * ROWLEN + (size_t)rank * CHUNK;
        const float4* src = reinterpret_cast<const float4*>(x + off);
        float4* dst = reinterpret_cast<float4*>(y + off);

        // Issue the whole chunk (192 KB per SM in flight), each thread owns its slots.
#pragma unroll
        for (int g = 0; g < GROUPS; ++g) {
#pragma unroll
            for (int k = 0; k < VPG; ++k) {
                int i = (g * VPG + k) * THREADS + tid;
                cp_async16(&sm4[i], &src[i]);
            }
            cp_async_commit();
        }

        float m = -INFINITY, s = 0.f;
        cp_async_wait<2>(); accum_group(sm4, 0, tid, m, s);
        cp_async_wait<1>(); accum_group(sm4, 1, tid, m, s);
        cp_async_wait<0>(); accum_group(sm4, 2, tid, m, s);

        // Block reduction.
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            float m2 = __shfl_xor_sync(FULL, m, o), s2 = __shfl_xor_sync(FULL, s, o);
            merge(m, s, m2, s2);
        }
        if (lane == 0) red[warp] = make_float2(m, s);
        __syncthreads();
        if (warp == 0) {
            float2 r = red[lane];
            m = r.x; s = r.y;
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) {
                float m2 = __shfl_xor_sync(FULL, m, o), s2 = __shfl_xor_sync(FULL, s, o);
                merge(m, s, m2, s2);
            }
            if (lane == 0) part[it & 1] = make_float2(m, s);
        }
        cluster.sync();

        // Cluster reduction through DSMEM: lanes 0..7 of every warp read one partial each.
        float2 p = make_float2(-INFINITY, 0.f);
        if (lane < CLUSTER) {
            float2* rp = cluster.map_shared_rank(&part[it & 1], (unsigned)lane);
            p = *rp;
        }
        m = p.x; s = p.y;
#pragma unroll
        for (int o = 4; o > 0; o >>= 1) {
            float m2 = __shfl_xor_sync(FULL, m, o), s2 = __shfl_xor_sync(FULL, s, o);
            merge(m, s, m2, s2);
        }
        m = __shfl_sync(FULL, m, 0);
        s = __shfl_sync(FULL, s, 0);
        const float inv = 1.f / s;

        // Write pass from shared memory, streaming stores.
#pragma unroll
        for (int j = 0; j < VPT; ++j) {
            int i = j * THREADS + tid;
            float4 v = sm4[i];
            float4 o;
            o.x = __expf(v.x - m) * inv;
            o.y = __expf(v.y - m) * inv;
            o.z = __expf(v.z - m) * inv;
            o.w = __expf(v.w - m) * inv;
            __stcs(&dst[i], o);
        }
    }
    cluster.sync();  // keep smem alive until all remote reads are done
}

// Generic fallback: one block per row, any column count.
__global__ void __launch_bounds__(256)
softmax_generic_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t cols) {
    __shared__ float2 red[32];
    __shared__ float2 fin;
    const float* xr = x + (size_t)blockIdx.x * cols;
    float* yr = y + (size_t)blockIdx.x * cols;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nw = blockDim.x >> 5;
    float m = -INFINITY, s = 0.f;
    for (int64_t c = tid; c < cols; c += blockDim.x) merge(m, s, xr[c], 1.f);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float m2 = __shfl_xor_sync(FULL, m, o), s2 = __shfl_xor_sync(FULL, s, o);
        merge(m, s, m2, s2);
    }
    if (lane == 0) red[warp] = make_float2(m, s);
    __syncthreads();
    if (warp == 0) {
        float2 r = lane < nw ? red[lane] : make_float2(-INFINITY, 0.f);
        m = r.x; s = r.y;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            float m2 = __shfl_xor_sync(FULL, m, o), s2 = __shfl_xor_sync(FULL, s, o);
            merge(m, s, m2, s2);
        }
        if (lane == 0) fin = make_float2(m, s);
    }
    __syncthreads();
    m = fin.x;
    const float inv = 1.f / fin.y;
    for (int64_t c = tid; c < cols; c += blockDim.x) yr[c] = __expf(xr[c] - m) * inv;
}

extern "C" int softmax_rows(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t stream) {
    if (rows <= 0 || cols <= 0) return 0;
    const bool aligned = ((((uintptr_t)x) | ((uintptr_t)y)) & 15) == 0;
    if (cols == ROWLEN && aligned && rows <= 0x7fffffff) {
        static int ncl = -1;
        const size_t smem = (size_t)CHUNK4 * sizeof(float4);
        cudaLaunchConfig_t cfg = {};
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = CLUSTER;
        attr[0].val.clusterDim.y = 1;
        attr[0].val.clusterDim.z = 1;
        cfg.blockDim = dim3(THREADS, 1, 1);
        cfg.dynamicSmemBytes = smem;
        cfg.stream = stream;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
        if (ncl < 0) {
            ncl = 0;
            if (cudaFuncSetAttribute(softmax_cluster_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)smem) == cudaSuccess) {
                cfg.gridDim = dim3(CLUSTER * 16, 1, 1);
                int n = 0;
                if (cudaOccupancyMaxActiveClusters(&n, softmax_cluster_kernel, &cfg) == cudaSuccess && n > 0)
                    ncl = n;
            }
            cudaGetLastError();
        }
        if (ncl > 0) {
            int clusters = (int)(rows < (int64_t)ncl ? rows : (int64_t)ncl);
            cfg.gridDim = dim3(CLUSTER * clusters, 1, 1);
            cudaError_t e = cudaLaunchKernelEx(&cfg, softmax_cluster_kernel, x, y, (int)rows);
            if (e == cudaSuccess) return 0;
            cudaGetLastError();
        }
    }
    if (rows > 0x7fffffff) return (int)cudaErrorInvalidValue;
    softmax_generic_kernel<<<(unsigned)rows, 256, 0, stream>>>(x, y, cols);
    return (int)cudaGetLastError();
}
