# What every example's CMakeLists.txt shares (included from examples/<name>/CMakeLists.txt after its project() call).
#
# Configured on its own against an installed cellint (no cellint::cellint target yet): the option
# CELLINT_ENABLE_CUDA, find_package(cellint) (with its CUDA component when asked) and CTest. Then
# cellint_example(<name>) makes the example's two programs.

if(NOT TARGET cellint::cellint)
  option(CELLINT_ENABLE_CUDA "Also build the example's _cuda program (needs nvcc)" OFF)
  if(CELLINT_ENABLE_CUDA)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    find_package(cellint CONFIG REQUIRED COMPONENTS CUDA)
  else()
    find_package(cellint CONFIG REQUIRED)
  endif()
  include(CTest)
endif()
find_package(OpenMP QUIET COMPONENTS CXX)

# cellint_example(<name>): cellint_<name> from <name>_main.cpp (the Host and Emulated backends, OpenMP loops when
# available) and, with CELLINT_ENABLE_CUDA, cellint_<name>_cuda from <name>_main.cu (the same main compiled by nvcc,
# with the Cuda backend added, and line information for the profilers).
function(cellint_example name)
  add_executable(cellint_${name} ${name}_main.cpp)
  target_link_libraries(cellint_${name} PRIVATE cellint::openmp)
  set_target_properties(cellint_${name} PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF)
  if(CELLINT_ENABLE_CUDA)
    add_executable(cellint_${name}_cuda ${name}_main.cu)
    target_link_libraries(cellint_${name}_cuda PRIVATE cellint::cuda CUDA::cudart_static)
    set_target_properties(cellint_${name}_cuda PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
    target_compile_options(cellint_${name}_cuda PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
    if(OpenMP_CXX_FOUND)
      target_compile_options(cellint_${name}_cuda PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-fopenmp>)
      target_link_libraries(cellint_${name}_cuda PRIVATE OpenMP::OpenMP_CXX)
    endif()
  endif()
endfunction()
