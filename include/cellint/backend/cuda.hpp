#pragma once
/// @file
/// The CUDA backend: device memory from cudaMalloc, block kernels launched on CUDA streams, device-wide scan and radix
/// sort from CUB. Compile the including file with nvcc (a `.cu` file) and link `cellint::cuda`.

#if !defined(__CUDACC__)
#  error "cellint/backend/cuda.hpp needs nvcc: compile this file as CUDA (.cu) and link cellint::cuda"
#endif

#include "cellint/backend/detail/cuda/runtime.hpp"
#include "cellint/backend/detail/gpu/backend.hpp"
#include "cellint/backend/traits.hpp"

namespace cellint {

/// CUDA backend (NVIDIA GPUs). An empty tag type; every member is static and acts on the calling thread's current
/// device (cudaSetDevice). `Stream` is cudaStream_t, `warp_size` 32, `name()` "cuda". The members, shared with Hip, are
/// documented in detail::GpuBackend (cellint/backend/detail/gpu/backend.hpp); the runtime calls behind them are in
/// detail::CudaRuntime (cellint/backend/detail/cuda/runtime.hpp).
struct Cuda : detail::GpuBackend<detail::CudaRuntime> {};

CELLINT_REQUIRE_BACKEND(Cuda);

}  // namespace cellint
