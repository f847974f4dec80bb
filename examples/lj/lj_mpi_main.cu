// cellint_lj_mpi_cuda: the same program as lj_mpi_main.cpp, compiled by nvcc with the Cuda backend added (one GPU per
// rank).
#include "lj_mpi_main.cpp"
