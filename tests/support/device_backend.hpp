#pragma once
// Includes the backend a generated device-test translation unit is compiled for.
#if defined(CELLINT_TEST_GPU)
#  if defined(__CUDACC__)
#    include "cellint/backend/cuda.hpp"
#  elif defined(__HIPCC__) || defined(__HIP__)
#    include "cellint/backend/hip.hpp"
#  endif
#else
#  include "cellint/backend/emulated.hpp"
#endif
#if !defined(CELLINT_TEST_BACKEND)
#  define CELLINT_TEST_BACKEND cellint::Emulated
#  define CELLINT_TEST_TAG "[emulated]"
#endif
