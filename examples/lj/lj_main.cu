// cellint_lj_cuda: the same program as lj_main.cpp, compiled by nvcc with the Cuda backend added.
#include "lj_main.cpp"
