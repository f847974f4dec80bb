// cellint_sph_cuda: the same program as sph_main.cpp, compiled by nvcc with the Cuda backend added.
#include "sph_main.cpp"
