// RMSNorm forward and backward kernels for the perfdiff `rmsnorm` workload.
//
// Why no torch headers here: nvcc compiles this file in a few seconds without them, while
// torch/extension.h costs ~20 s per translation unit. The bindings (rmsnorm_bindings.cpp) take
// tensors apart and call the launchers below with raw pointers and the current stream.
//
// Layout: x, dy, y, dx are [rows, cols] row-major; w and dw are [cols]; rstd is [rows] in the
// accumulation type (float for float/half/bfloat16, double for double).
//   forward:  rstd = 1 / sqrt(mean(x^2) + eps);  y = x * rstd * w
//   backward: g = dy * w;  dx = rstd * (g - x * rstd^2 * mean(g * x));  dw = sum_rows(dy * x * rstd)
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cstdint>

namespace {

template <typename T> struct Acc { using type = float; };
template <> struct Acc<double> { using type = double; };

template <typename T> __device__ __forceinline__ float to_acc(T v) { return static_cast<float>(v); }
template <> __device__ __forceinline__ float to_acc<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_acc<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
__device__ __forceinline__ double to_acc(double v) { return v; }

template <typename T, typename A> __device__ __forceinline__ T from_acc(A v) { return static_cast<T>(v); }
template <> __device__ __forceinline__ __half from_acc<__half, float>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_acc<__nv_bfloat16, float>(float v) {
  return __float2bfloat16_rn(v);
}

// Sum over the block; every thread gets the result. blockDim.x is a multiple of 32, <= 1024.
template <typename A> __device__ A block_sum(A v) {
  __shared__ A partial[32];
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = blockDim.x >> 5;
  A total = lane < warps ? partial[lane] : A(0);
  if (warp == 0) {
    for (int off = 16; off > 0; off >>= 1) total += __shfl_xor_sync(0xffffffffu, total, off);
    if (lane == 0) partial[0] = total;
  }
  __syncthreads();
  total = partial[0];
  __syncthreads();  // partial[] may be reused by the next call
  return total;
}

// One block per row: the row is read twice (sum of squares, then scale), from L1/L2.
template <typename T> __global__ void rmsnorm_fwd(const T* __restrict__ x, const T* __restrict__ w,
                                                   T* __restrict__ y, typename Acc<T>::type* __restrict__ rstd,
                                                   int64_t cols, double eps) {
  using A = typename Acc<T>::type;
  const int64_t row = blockIdx.x;
  const T* xr = x + row * cols;
  T* yr = y + row * cols;
  A ss = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const A v = to_acc(xr[c]);
    ss += v * v;
  }
  ss = block_sum(ss);
  const A r = A(1) / sqrt(ss / A(cols) + A(eps));
  if (threadIdx.x == 0) rstd[row] = r;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    yr[c] = from_acc<T, A>(to_acc(xr[c]) * r * to_acc(w[c]));
  }
}

// dx: one block per row.
template <typename T> __global__ void rmsnorm_bwd_dx(const T* __restrict__ dy, const T* __restrict__ x,
                                                     const T* __restrict__ w,
                                                     const typename Acc<T>::type* __restrict__ rstd,
                                                     T* __restrict__ dx, int64_t cols) {
  using A = typename Acc<T>::type;
  const int64_t row = blockIdx.x;
  const T* dyr = dy + row * cols;
  const T* xr = x + row * cols;
  T* dxr = dx + row * cols;
  const A r = rstd[row];
  A dot = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    dot += to_acc(dyr[c]) * to_acc(w[c]) * to_acc(xr[c]);
  }
  dot = block_sum(dot);
  const A coef = r * r * r * dot / A(cols);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    dxr[c] = from_acc<T, A>(r * to_acc(dyr[c]) * to_acc(w[c]) - coef * to_acc(xr[c]));
  }
}

// dw, stage 1: block (bx, by) sums rows [by*chunk, (by+1)*chunk) of columns bx*32..bx*32+31;
// threads are 32 columns x 8 row lanes, so each warp reads 32 consecutive columns (coalesced).
constexpr int kDwCols = 32;
constexpr int kDwLanes = 8;
template <typename T> __global__ void rmsnorm_bwd_dw_partial(const T* __restrict__ dy, const T* __restrict__ x,
                                                             const typename Acc<T>::type* __restrict__ rstd,
                                                             typename Acc<T>::type* __restrict__ partial,
                                                             int64_t rows, int64_t cols, int64_t chunk) {
  using A = typename Acc<T>::type;
  __shared__ A tile[kDwLanes][kDwCols + 1];
  const int64_t col = int64_t(blockIdx.x) * kDwCols + threadIdx.x;
  const int64_t row0 = int64_t(blockIdx.y) * chunk;
  const int64_t row1 = row0 + chunk < rows ? row0 + chunk : rows;
  A acc = 0;
  if (col < cols) {
    for (int64_t r = row0 + threadIdx.y; r < row1; r += kDwLanes) {
      acc += to_acc(dy[r * cols + col]) * to_acc(x[r * cols + col]) * rstd[r];
    }
  }
  tile[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    A s = 0;
    for (int i = 0; i < kDwLanes; ++i) s += tile[i][threadIdx.x];
    partial[int64_t(blockIdx.y) * cols + col] = s;
  }
}

// dw, stage 2: sum the partial rows of each column, in a fixed order (deterministic).
template <typename T> __global__ void rmsnorm_bwd_dw_reduce(const typename Acc<T>::type* __restrict__ partial,
                                                            T* __restrict__ dw, int64_t parts, int64_t cols) {
  using A = typename Acc<T>::type;
  const int64_t col = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= cols) return;
  A s = 0;
  for (int64_t p = 0; p < parts; ++p) s += partial[p * cols + col];
  dw[col] = from_acc<T, A>(s);
}

int threads_for(int64_t cols) {
  // enough threads to cover the row in a few passes, a multiple of 32, at most 1024
  int64_t t = 32;
  while (t < 1024 && t * 4 < cols) t <<= 1;
  return static_cast<int>(t);
}

template <typename T> int fwd(const void* x, const void* w, void* y, void* rstd, int64_t rows, int64_t cols,
                              double eps, cudaStream_t stream) {
  using A = typename Acc<T>::type;
  if (rows == 0) return 0;
  rmsnorm_fwd<T><<<static_cast<unsigned>(rows), threads_for(cols), 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(w), static_cast<T*>(y), static_cast<A*>(rstd), cols, eps);
  return static_cast<int>(cudaGetLastError());
}

template <typename T> int bwd(const void* dy, const void* x, const void* w, const void* rstd, void* dx,
                              void* dw, void* partial, int64_t parts, int64_t rows, int64_t cols,
                              cudaStream_t stream) {
  using A = typename Acc<T>::type;
  if (rows == 0) return 0;
  rmsnorm_bwd_dx<T><<<static_cast<unsigned>(rows), threads_for(cols), 0, stream>>>(
      static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<const T*>(w),
      static_cast<const A*>(rstd), static_cast<T*>(dx), cols);
  const int64_t chunk = (rows + parts - 1) / parts;
  dim3 grid(static_cast<unsigned>((cols + kDwCols - 1) / kDwCols), static_cast<unsigned>(parts));
  rmsnorm_bwd_dw_partial<T><<<grid, dim3(kDwCols, kDwLanes), 0, stream>>>(
      static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<const A*>(rstd),
      static_cast<A*>(partial), rows, cols, chunk);
  rmsnorm_bwd_dw_reduce<T><<<static_cast<unsigned>((cols + 255) / 256), 256, 0, stream>>>(
      static_cast<const A*>(partial), static_cast<T*>(dw), parts, cols);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

// dtype codes shared with the bindings: 0 float64, 1 float32, 2 float16, 3 bfloat16
int perfdiff_rmsnorm_fwd(int dtype, const void* x, const void* w, void* y, void* rstd, int64_t rows,
                         int64_t cols, double eps, cudaStream_t stream) {
  switch (dtype) {
    case 0: return fwd<double>(x, w, y, rstd, rows, cols, eps, stream);
    case 1: return fwd<float>(x, w, y, rstd, rows, cols, eps, stream);
    case 2: return fwd<__half>(x, w, y, rstd, rows, cols, eps, stream);
    case 3: return fwd<__nv_bfloat16>(x, w, y, rstd, rows, cols, eps, stream);
    default: return -1;
  }
}

int perfdiff_rmsnorm_bwd(int dtype, const void* dy, const void* x, const void* w, const void* rstd, void* dx,
                         void* dw, void* partial, int64_t parts, int64_t rows, int64_t cols,
                         cudaStream_t stream) {
  switch (dtype) {
    case 0: return bwd<double>(dy, x, w, rstd, dx, dw, partial, parts, rows, cols, stream);
    case 1: return bwd<float>(dy, x, w, rstd, dx, dw, partial, parts, rows, cols, stream);
    case 2: return bwd<__half>(dy, x, w, rstd, dx, dw, partial, parts, rows, cols, stream);
    case 3: return bwd<__nv_bfloat16>(dy, x, w, rstd, dx, dw, partial, parts, rows, cols, stream);
    default: return -1;
  }
}
