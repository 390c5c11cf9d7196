// Microbenchmark: the cost of a dependent phase of a small matvec chain,
// as N PDL kernels in a CUDA graph against one cooperative kernel with N
// grid barriers. Each phase: y (R) = W (R x K, bf16) . x (K), x = the
// previous phase's y (R = K = 1024 by default).
#include <cstdio>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cooperative_groups.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

__device__ __forceinline__ float dotrow(const __nv_bfloat16* w, const float* x, int K, int lane) {
  float s = 0;
  for (int k = lane * 8; k < K; k += 256) {
    uint4 v = *reinterpret_cast<const uint4*>(w + k);
    const __nv_bfloat16* b = reinterpret_cast<const __nv_bfloat16*>(&v);
#pragma unroll
    for (int i = 0; i < 8; i++) s += __bfloat162float(b[i]) * x[k + i];
  }
#pragma unroll
  for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
  return s;
}

// one phase as its own kernel (PDL: wait for the previous phase's y)
__global__ void phase_k(const __nv_bfloat16* W, const float* x, float* y, int R, int K) {
  __shared__ float xs[4096];
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;");
  for (int i = threadIdx.x; i < K; i += blockDim.x) xs[i] = x[i];
  __syncthreads();
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nw = blockDim.x / 32;
  for (int r = blockIdx.x * nw + warp; r < R; r += gridDim.x * nw) {
    float s = dotrow(W + (long)r * K, xs, K, lane);
    if (lane == 0) y[r] = s * 1e-3f + 1.0f;
  }
}

__device__ __forceinline__ void grid_barrier(unsigned* count, unsigned target) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(count, 1);
    unsigned v;
    do {
      asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(v) : "l"(count));
    } while (v < target);
  }
  __syncthreads();
}

// N phases in one kernel, buffers alternating; count zeroed by the caller
__global__ void phases_coop(const __nv_bfloat16* W, float* a, float* b, int R, int K, int N, unsigned* count) {
  __shared__ float xs[4096];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nw = blockDim.x / 32;
  for (int p = 0; p < N; p++) {
    const float* x = (p & 1) ? b : a;
    float* y = (p & 1) ? a : b;
    for (int i = threadIdx.x; i < K; i += blockDim.x) xs[i] = __ldcg(x + i);
    __syncthreads();
    for (int r = blockIdx.x * nw + warp; r < R; r += gridDim.x * nw) {
      float s = dotrow(W + (long)r * K, xs, K, lane);
      if (lane == 0) __stcg(y + r, s * 1e-3f + 1.0f);
    }
    grid_barrier(count, (p + 1) * gridDim.x);
  }
}

__global__ void zero(unsigned* c) { *c = 0; }

int main(int argc, char** argv) {
  int R = 1024, K = 1024, N = 28;
  __nv_bfloat16* W;
  float *a, *b;
  unsigned* cnt;
  CK(cudaMalloc(&W, (size_t)R * K * 2));
  CK(cudaMemset(W, 0, (size_t)R * K * 2));
  CK(cudaMalloc(&a, 4 * 4096));
  CK(cudaMalloc(&b, 4 * 4096));
  CK(cudaMemset(a, 0, 4 * 4096));
  CK(cudaMalloc(&cnt, 4));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  int sms;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  for (int blocks : {sms, sms / 2, 32, 16}) {
    for (int threads : {256, 512}) {
      // graph of N PDL kernels
      cudaGraph_t g;
      cudaGraphExec_t ge;
      CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
      zero<<<1, 1, 0, s>>>(cnt);
      for (int p = 0; p < N; p++) {
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = blocks;
        cfg.blockDim = threads;
        cfg.stream = s;
        cudaLaunchAttribute at[1];
        at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        at[0].val.programmaticStreamSerializationAllowed = 1;
        cfg.attrs = at;
        cfg.numAttrs = 1;
        CK(cudaLaunchKernelEx(&cfg, phase_k, (const __nv_bfloat16*)W, (const float*)((p & 1) ? b : a), (p & 1) ? a : b, R, K));
      }
      CK(cudaStreamEndCapture(s, &g));
      CK(cudaGraphInstantiateWithFlags(&ge, g, 0));
      for (int i = 0; i < 20; i++) CK(cudaGraphLaunch(ge, s));
      cudaEventRecord(e0, s);
      for (int i = 0; i < 200; i++) cudaGraphLaunch(ge, s);
      cudaEventRecord(e1, s);
      CK(cudaStreamSynchronize(s));
      float ms;
      cudaEventElapsedTime(&ms, e0, e1);
      float pdl = ms * 1000 / 200 / N;
      // one cooperative kernel, N barriers (in a graph too)
      CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
      zero<<<1, 1, 0, s>>>(cnt);
      {
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = blocks;
        cfg.blockDim = threads;
        cfg.stream = s;
        cudaLaunchAttribute at[1];
        at[0].id = cudaLaunchAttributeCooperative;
        at[0].val.cooperative = 1;
        cfg.attrs = at;
        cfg.numAttrs = 1;
        CK(cudaLaunchKernelEx(&cfg, phases_coop, (const __nv_bfloat16*)W, a, b, R, K, N, cnt));
      }
      cudaGraph_t g2;
      cudaGraphExec_t ge2;
      CK(cudaStreamEndCapture(s, &g2));
      CK(cudaGraphInstantiateWithFlags(&ge2, g2, 0));
      for (int i = 0; i < 20; i++) CK(cudaGraphLaunch(ge2, s));
      cudaEventRecord(e0, s);
      for (int i = 0; i < 200; i++) cudaGraphLaunch(ge2, s);
      cudaEventRecord(e1, s);
      CK(cudaStreamSynchronize(s));
      cudaEventElapsedTime(&ms, e0, e1);
      float coop = ms * 1000 / 200 / N;
      printf("blocks %3d threads %3d: per phase  PDL kernels %.2f us   grid barrier %.2f us   (N=%d, %dx%d bf16)\n", blocks, threads, pdl,
             coop, N, R, K);
      cudaGraphExecDestroy(ge);
      cudaGraphExecDestroy(ge2);
    }
  }
  return 0;
}
