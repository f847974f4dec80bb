#pragma once
/// @file
/// Umbrella header: the core, the CPU backends and every strategy. Include a GPU backend header
/// (cellint/backend/cuda.hpp or hip.hpp) yourself in a file compiled by nvcc or hipcc.

#include "cellint/version.hpp"
#include "cellint/backend/host.hpp"
#include "cellint/backend/emulated.hpp"
#include "cellint/backend/graph.hpp"
#include "cellint/core/box.hpp"
#include "cellint/core/error.hpp"
#include "cellint/core/pair_functor.hpp"
#include "cellint/core/vec.hpp"
#include "cellint/grid/cell_grid.hpp"
#include "cellint/interact.hpp"
#include "cellint/lists/neighbor_list.hpp"
#include "cellint/potentials/counting.hpp"
#include "cellint/potentials/gravity.hpp"
#include "cellint/potentials/lennard_jones.hpp"
