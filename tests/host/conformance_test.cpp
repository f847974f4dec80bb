// The conformance sweep (tests/device/conformance_test.hpp) on the Host backend: every registered
// CPU strategy through the same oracle sweep as on the GPU-like backends.
#include "cellint/backend/host.hpp"
#define CELLINT_TEST_BACKEND cellint::Host
#define CELLINT_TEST_TAG "[host]"
#include "device/conformance_test.hpp"
