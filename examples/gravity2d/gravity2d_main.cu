// cellint_gravity2d_cuda: gravity2d_main.cpp compiled by nvcc, with the Cuda backend added.
#include "gravity2d_main.cpp"
