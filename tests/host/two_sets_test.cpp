// The two-set test (tests/device/two_sets_test.hpp) on the Host backend: its CPU strategies.
#include "cellint/backend/host.hpp"
#define CELLINT_TEST_BACKEND cellint::Host
#define CELLINT_TEST_TAG "[host]"
#include "device/two_sets_test.hpp"
