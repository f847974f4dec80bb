// cellint_collisions_cuda: the same program as collisions_main.cpp, compiled by nvcc with the Cuda backend added.
#include "collisions_main.cpp"
