// Reading an attribute as another type must not compile (tests/CMakeLists.txt compiles this file
// twice: as written, which must succeed, and with CELLINT_READ_AS_WRONG_TYPE, which must fail).
#include "cellint/grid/grid_view.hpp"

struct ReadsMass {
  cellint::Attribute<double> mass;
  template <class View>
  double load(const View& v, cellint::Index i) const {
#if defined(CELLINT_READ_AS_WRONG_TYPE)
    return v.template attribute<float>(mass)[i];  // a double attribute read as float
#else
    return v.attribute(mass)[i];
#endif
  }
};

int main() {
  cellint::GridView<float, 3> v{};
  ReadsMass f{};
  return f.mass.is_set() ? static_cast<int>(f.load(v, 0)) : 0;
}
