// cellint_probes_cuda: probes_main.cpp compiled by nvcc, with the Cuda backend added.
#include "probes_main.cpp"
