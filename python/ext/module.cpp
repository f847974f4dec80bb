// The extension module cellint._core: thin bindings over the GridBase interface. Every array is
// checked here (device, dtype, contiguity, shape) before a pointer reaches the library; the
// Python package (src/cellint) gives the friendly API on top.

#include <cstring>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <string>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "cellint/core/error.hpp"
#include "cellint/version.hpp"

#include "api.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using cellint::py::Device;
using cellint::py::GridBase;

namespace {

using Array = nb::ndarray<nb::ro>;

enum class Kind { Real, Int64, Int32 };

const char* kind_name(Kind k, int real_bytes) {
  if (k == Kind::Int64) return "int64";
  if (k == Kind::Int32) return "int32";
  return real_bytes == 4 ? "float32" : "float64";
}

/// The array's data pointer after checking it against the grid: same device, element type, C-contiguous, shape.
template <class A>
void* checked(const A& a, const GridBase& g, Kind k, std::vector<std::int64_t> shape, const char* name) {
  const bool gpu = g.device() == Device::Cuda;
  const int want_dev = gpu ? nb::device::cuda::value : nb::device::cpu::value;
  if (a.device_type() != want_dev)
    throw cellint::InvalidArgument(cellint::detail::cat(
        "cellint: ", name, " is on ", a.device_type() == nb::device::cpu::value ? "the CPU" : "another device",
        " but the grid computes on ", gpu ? "the GPU (CUDA)" : "the CPU", "; move it there"));
  const nb::dlpack::dtype dt = a.dtype();
  const bool ok =
      k == Kind::Real
          ? (dt.code == (std::uint8_t)nb::dlpack::dtype_code::Float && dt.bits == 8 * g.real_bytes())
          : (dt.code == (std::uint8_t)nb::dlpack::dtype_code::Int && dt.bits == (k == Kind::Int64 ? 64 : 32));
  if (!ok || dt.lanes != 1)
    throw cellint::InvalidArgument(cellint::detail::cat("cellint: ", name, " must be ", kind_name(k, g.real_bytes()),
                                                        " (code ", int(dt.code), ", ", int(dt.bits), " bits given)"));
  if (a.ndim() != shape.size())
    throw cellint::InvalidArgument(
        cellint::detail::cat("cellint: ", name, " has ", a.ndim(), " dimensions, ", shape.size(), " expected"));
  std::int64_t stride = 1, elements = 1;
  for (std::int64_t e : shape) elements *= e;
  for (std::size_t d = shape.size(); d-- > 0;) {
    if (static_cast<std::int64_t>(a.shape(d)) != shape[d])
      throw cellint::InvalidArgument(cellint::detail::cat("cellint: ", name, " has extent ", a.shape(d), " along axis ",
                                                          d, ", ", shape[d], " expected"));
    if (elements > 0 && shape[d] > 1 && a.stride(d) != stride)
      throw cellint::InvalidArgument(cellint::detail::cat("cellint: ", name, " must be C-contiguous"));
    stride *= shape[d];
  }
  if (gpu && static_cast<int>(a.device_id()) != g.device_index())
    throw cellint::InvalidArgument(
        cellint::detail::cat("cellint: ", name, " is on GPU ", a.device_id(), ", the grid on GPU ", g.device_index()));
  return const_cast<void*>(static_cast<const void*>(a.data()));
}

std::int64_t n_of(const GridBase& g) { return g.size(); }

cellint::py::Interaction interaction_named(const std::string& s) {
  using cellint::py::Interaction;
  if (s == "lennard_jones") return Interaction::LennardJones;
  if (s == "neighbor_count") return Interaction::NeighborCount;
  if (s == "density") return Interaction::Density;
  if (s == "soft_sphere") return Interaction::SoftSphere;
  throw cellint::InvalidArgument("cellint: unknown interaction " + s);
}

/// An array argument: an array (checked here), or, from the package's own code for GPU arrays, an integer address
/// whose array the package checked and made itself (a DLPack import costs more than a small GPU call's work).
void* pointer(const nb::handle& h, const GridBase& g, Kind k, std::vector<std::int64_t> shape, const char* name) {
  if (PyLong_Check(h.ptr())) return reinterpret_cast<void*>(nb::cast<std::uintptr_t>(h));
  return checked(nb::cast<Array>(h), g, k, std::move(shape), name);
}

/// An optional array argument: null for None.
void* maybe(const nb::handle& h, const GridBase& g, Kind k, std::vector<std::int64_t> shape, const char* name) {
  if (h.is_none()) return nullptr;
  return pointer(h, g, k, std::move(shape), name);
}

nb::dict report_dict(const cellint::py::CallReport& r) {
  nb::dict d;
  d["strategy"] = r.strategy;
  d["blocks"] = r.blocks;
  d["threads"] = r.threads;
  d["shared_bytes"] = r.shared_bytes;
  d["tuning_ms"] = r.tuning_ms;
  if (r.statistics) {
    d["pairs_examined"] = r.pairs_examined;
    d["pairs_within"] = r.pairs_within;
    d["each_pair_once"] = r.each_pair_once;
    d["ms"] = r.ms;
  }
  return d;
}

}  // namespace

namespace cellint::py {
double& cpp_seconds() {
  static double s = 0;
  return s;
}
}  // namespace cellint::py

NB_MODULE(_core, m) {
  m.doc() = "cellint's compiled core; use the cellint package, not this module";
  m.attr("__version__") = CELLINT_VERSION_STRING;
#ifdef CELLINT_PY_CUDA
  m.attr("cuda_built") = true;
  m.def("cuda_device_name", &cellint::py::cuda_device_name, "device"_a);
#else
  m.attr("cuda_built") = false;
#endif
  static nb::exception<cellint::Unsupported> unsupported(m, "Unsupported", PyExc_RuntimeError);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const cellint::Unsupported& e) {
      PyErr_SetString(unsupported.ptr(), e.what());
    } catch (const cellint::InvalidArgument& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const cellint::OutOfMemory& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const cellint::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
  m.def(
      "set_num_threads",
      [](int n) {
#if defined(_OPENMP)
        omp_set_num_threads(n > 0 ? n : 1);
#else
        (void)n;
#endif
      },
      "n"_a, "threads the CPU backend uses (OpenMP)");
  m.def("get_num_threads", [] {
#if defined(_OPENMP)
    return omp_get_max_threads();
#else
    return 1;
#endif
  });
  m.def(
      "cpp_seconds", [] { return cellint::py::cpp_seconds(); },
      "seconds spent inside the library since the module was loaded");

  nb::class_<GridBase>(m, "_Grid")
      .def_prop_ro("size", &GridBase::size)
      .def_prop_ro("max_per_cell", &GridBase::max_per_cell)
      .def_prop_ro("cells", &GridBase::cells)
      .def_prop_ro("dim", &GridBase::dim)
      .def_prop_ro("on_gpu", [](const GridBase& g) { return g.device() == Device::Cuda; })
      .def(
          "build",
          [](GridBase& g, nb::handle x, std::int64_t n) {
            void* p = pointer(x, g, Kind::Real, {n, g.dim()}, "positions");
            nb::gil_scoped_release unlocked;  // (other Python threads run while the library works)
            g.build(p, n);
          },
          "positions"_a, "n"_a)
      .def("attach",
           [](GridBase& g, int which, nb::handle v) {
             g.attach(which, pointer(v, g, Kind::Real, {n_of(g)}, which == 0 ? "mass" : "radius"));
           })
      .def("attached", &GridBase::attached)
      .def(
          "sorted",
          [](const GridBase& g, nb::handle index, nb::handle positions) {
            g.sorted(static_cast<std::int64_t*>(maybe(index, g, Kind::Int64, {n_of(g)}, "index")),
                     maybe(positions, g, Kind::Real, {n_of(g), g.dim()}, "positions"));
          },
          "index"_a.none(), "positions"_a.none())
      .def(
          "interact",
          [](GridBase& g, const std::string& what, const std::string& strategy, nb::dict p, nb::handle force,
             nb::handle energy, nb::handle virial, nb::handle scalar) {
            cellint::py::Request r;
            r.kind = interaction_named(what);
            r.strategy = strategy;
            auto get = [&](const char* k, auto& v) {
              if (p.contains(k)) v = nb::cast<std::decay_t<decltype(v)>>(p[k]);
            };
            get("epsilon", r.epsilon);
            get("sigma", r.sigma);
            get("shifted", r.shifted);
            get("softening", r.softening);
            get("alpha", r.alpha);
            get("per_particle", r.per_particle);
            get("kernel", r.kernel);
            get("h", r.h);
            get("mass", r.mass);
            get("self_term", r.self_term);
            get("statistics", r.statistics);
            get("reproducible", r.reproducible);
            const std::int64_t n = n_of(g);
            r.force = maybe(force, g, Kind::Real, {n, g.dim()}, "force");
            r.energy = maybe(energy, g, Kind::Real, {n}, "energy");
            r.virial = maybe(virial, g, Kind::Real, {n}, "virial");
            r.scalar = maybe(scalar, g, r.kind == cellint::py::Interaction::NeighborCount ? Kind::Int32 : Kind::Real,
                             {n}, "result");
            cellint::py::CallReport rep;
            {
              nb::gil_scoped_release unlocked;
              rep = g.interact(r);
            }
            return report_dict(rep);
          },
          "what"_a, "strategy"_a, "params"_a, "force"_a.none(), "energy"_a.none(), "virial"_a.none(), "scalar"_a.none())
      .def("count_pairs", &GridBase::count_pairs, "cutoff"_a, "half"_a, nb::call_guard<nb::gil_scoped_release>())
      .def(
          "fill_pairs",
          [](GridBase& g, std::int64_t pairs, nb::handle i, nb::handle j, nb::handle distance, nb::handle vector,
             nb::handle shift) {
            cellint::py::PairsOut o;
            o.pairs = static_cast<std::uint64_t>(pairs);
            o.i = static_cast<std::int64_t*>(maybe(i, g, Kind::Int64, {pairs}, "i"));
            o.j = static_cast<std::int64_t*>(maybe(j, g, Kind::Int64, {pairs}, "j"));
            o.distance = maybe(distance, g, Kind::Real, {pairs}, "distances");
            o.vector = maybe(vector, g, Kind::Real, {pairs, g.dim()}, "vectors");
            o.shift = static_cast<std::int32_t*>(maybe(shift, g, Kind::Int32, {pairs, g.dim()}, "shifts"));
            if (!o.i || !o.j || !o.distance)
              throw cellint::InvalidArgument("cellint: fill_pairs needs i, j and distances");
            nb::gil_scoped_release unlocked;
            g.fill_pairs(o);
          },
          "pairs"_a, "i"_a, "j"_a, "distance"_a, "vector"_a.none(), "shift"_a.none());

  m.def(
      "make_grid",
      [](const std::string& device, int device_id, int dim, int real_bytes, std::array<double, 3> lo,
         std::array<double, 3> length, std::array<bool, 3> periodic, double cutoff, double min_cell_width,
         bool stable) -> std::unique_ptr<GridBase> {
        cellint::py::GridSpec s;
        s.dim = dim;
        s.real_bytes = real_bytes;
        s.lo = lo;
        s.length = length;
        s.periodic = periodic;
        s.cutoff = cutoff;
        s.min_cell_width = min_cell_width;
        s.stable = stable;
        s.device_id = device_id;
        if (device == "cpu") return cellint::py::make_cpu_grid(s);
#ifdef CELLINT_PY_CUDA
        if (device == "cuda") return cellint::py::make_cuda_grid(s);
#endif
        throw cellint::InvalidArgument("cellint: this build of the package computes on the CPU only (device '" +
                                       device + "'); install it with CUDA (see docs/python.md)");
      },
      "device"_a, "device_id"_a, "dim"_a, "real_bytes"_a, "lo"_a, "length"_a, "periodic"_a, "cutoff"_a,
      "min_cell_width"_a, "stable"_a);
}
