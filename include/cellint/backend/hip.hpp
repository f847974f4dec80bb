#pragma once
/// @file
/// The HIP backend: device memory from hipMalloc, block kernels launched on HIP streams, device-wide scan and radix
/// sort from rocPRIM. Compile the including file with hipcc (`-std=c++17 --offload-arch=...`) or as the CMake HIP
/// language, and link `cellint::hip`.

#if !defined(__HIPCC__) && !defined(__HIP__)
#  error "cellint/backend/hip.hpp needs hipcc: compile this file as HIP and link cellint::hip"
#endif

#include "cellint/backend/detail/gpu/backend.hpp"
#include "cellint/backend/detail/hip/runtime.hpp"
#include "cellint/backend/traits.hpp"

namespace cellint {

/// HIP backend (AMD GPUs through ROCm). An empty tag type; every member is static and acts on the calling thread's
/// current device (hipSetDevice). `Stream` is hipStream_t, `warp_size` 64 (a wavefront on AMD CDNA GPUs: MI100, MI200,
/// MI300), `name()` "hip". The members and their code are those of Cuda: detail::GpuBackend
/// (cellint/backend/detail/gpu/backend.hpp), over the runtime calls of detail::HipRuntime
/// (cellint/backend/detail/hip/runtime.hpp). AMD GPUs give every kernel their whole LDS (64 KiB on gfx90a) without
/// opting in: there a shared-memory request above 48 KiB is only validated.
struct Hip : detail::GpuBackend<detail::HipRuntime> {};

CELLINT_REQUIRE_BACKEND(Hip);

}  // namespace cellint
