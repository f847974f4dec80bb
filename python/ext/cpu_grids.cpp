// The CPU grids (Host backend) of the Python package.
#include "grid.hpp"

namespace cellint::py {
std::unique_ptr<GridBase> make_cpu_grid(const GridSpec& s) { return make_grid<Host>(s); }
}  // namespace cellint::py
