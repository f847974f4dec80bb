// cellint_particles2d_cuda: the same program as particles2d_main.cpp, compiled by nvcc with the Cuda backend added.
#include "particles2d_main.cpp"
