// The neighbour-list test (tests/device/neighbor_list_test.hpp) on the Host backend: row-major rows, host loops.
#include "cellint/backend/host.hpp"
#define CELLINT_TEST_BACKEND cellint::Host
#define CELLINT_TEST_TAG "[host]"
#define CELLINT_TEST_HOST_LOOPS 1  // (no block kernels to test on their own)
#include "device/neighbor_list_test.hpp"
