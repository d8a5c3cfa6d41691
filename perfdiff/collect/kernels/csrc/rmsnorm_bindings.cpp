// Python bindings of the RMSNorm CUDA kernels (rmsnorm_kernels.cu): checks, allocation, streams.
//
// Why the checks live here: a kernel given a non-contiguous tensor or a mismatched dtype would
// read garbage silently; TORCH_CHECK turns that into a Python RuntimeError with the reason.
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>

#include <vector>

int perfdiff_rmsnorm_fwd(int dtype, const void* x, const void* w, void* y, void* rstd, int64_t rows,
                         int64_t cols, double eps, cudaStream_t stream);
int perfdiff_rmsnorm_bwd(int dtype, const void* dy, const void* x, const void* w, const void* rstd, void* dx,
                         void* dw, void* partial, int64_t parts, int64_t rows, int64_t cols,
                         cudaStream_t stream);

namespace {

int dtype_code(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kDouble: return 0;
    case at::kFloat: return 1;
    case at::kHalf: return 2;
    case at::kBFloat16: return 3;
    default: TORCH_CHECK(false, "rmsnorm: unsupported dtype ", t.scalar_type());
  }
  return -1;
}

at::ScalarType acc_type(const at::Tensor& t) {
  return t.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
}

void check_input(const at::Tensor& t, const at::Tensor& like, const char* name) {
  TORCH_CHECK(t.is_cuda(), "rmsnorm: ", name, " must be a CUDA tensor");
  TORCH_CHECK(t.is_contiguous(), "rmsnorm: ", name, " must be contiguous");
  TORCH_CHECK(t.scalar_type() == like.scalar_type(), "rmsnorm: ", name, " has dtype ",
              t.scalar_type(), ", expected ", like.scalar_type());
}

}  // namespace

// Returns (y, rstd); rstd is kept for the backward pass.
std::vector<at::Tensor> rmsnorm_forward(const at::Tensor& x, const at::Tensor& w, double eps) {
  check_input(x, x, "x");
  check_input(w, x, "w");
  const int64_t cols = x.size(-1);
  TORCH_CHECK(w.dim() == 1 && w.size(0) == cols, "rmsnorm: w must have shape [", cols, "]");
  const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  const c10::cuda::CUDAGuard guard(x.device());
  auto y = at::empty_like(x);
  auto rstd = at::empty({rows}, x.options().dtype(acc_type(x)));
  const int err = perfdiff_rmsnorm_fwd(dtype_code(x), x.data_ptr(), w.data_ptr(), y.data_ptr(), rstd.data_ptr(),
                                       rows, cols, eps, c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == 0, "rmsnorm forward launch failed: ", cudaGetErrorString(static_cast<cudaError_t>(err)));
  return {y, rstd};
}

// Returns (dx, dw).
std::vector<at::Tensor> rmsnorm_backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& w,
                                         const at::Tensor& rstd) {
  check_input(x, x, "x");
  check_input(dy, x, "dy");
  check_input(w, x, "w");
  TORCH_CHECK(rstd.is_contiguous() && rstd.scalar_type() == acc_type(x), "rmsnorm: bad rstd");
  const int64_t cols = x.size(-1);
  const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  const c10::cuda::CUDAGuard guard(x.device());
  // partial sums of dw: enough row chunks to fill the GPU, each chunk >= 16 rows
  int64_t parts = rows / 16;
  if (parts > 256) parts = 256;
  if (parts < 1) parts = 1;
  auto dx = at::empty_like(x);
  auto dw = at::empty_like(w);
  auto partial = at::empty({parts, cols}, x.options().dtype(acc_type(x)));
  const int err = perfdiff_rmsnorm_bwd(dtype_code(x), dy.data_ptr(), x.data_ptr(), w.data_ptr(), rstd.data_ptr(),
                                       dx.data_ptr(), dw.data_ptr(), partial.data_ptr(), parts, rows, cols,
                                       c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == 0, "rmsnorm backward launch failed: ", cudaGetErrorString(static_cast<cudaError_t>(err)));
  return {dx, dw};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &rmsnorm_forward, "RMSNorm forward (y, rstd)");
  m.def("backward", &rmsnorm_backward, "RMSNorm backward (dx, dw)");
}
