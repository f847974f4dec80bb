// The call-options test (tests/device/call_options_test.hpp) on the Host backend: its CPU strategies.
#include "cellint/backend/host.hpp"
#define CELLINT_TEST_BACKEND cellint::Host
#define CELLINT_TEST_TAG "[host]"
#include "device/call_options_test.hpp"
