#pragma once
/// @file
/// The pair-functor contract: what a user's interaction must provide, checked at compile time.
///
/// A pair functor `F` is a small, trivially copyable struct that holds its parameters by value:
///
/// @code
/// struct MyForce {
///   using Accum = ...;                       // required: per-target accumulator, trivially copyable
///   using Payload = ...;                     // optional: what a particle carries besides its position
///                                            //   (staged in shared memory); default cellint::NoPayload
///   template <class View>                    // required when Payload is not NoPayload
///   CELLINT_HD Payload load(const View& v, Index i) const;   // read particle i (sorted slot)
///   using SourcePayload = ...;               // optional: a source's payload type (default Payload)
///   template <class View>                    // optional: a source's payload, when sources read other
///   CELLINT_HD SourcePayload load_source(const View& v, Index j) const;  // attributes than targets (two sets)
///   CELLINT_HD Accum init() const;           // optional: start value (default Accum{})
///   CELLINT_HD void operator()(Accum& acc, const Payload& target, const SourcePayload& source,
///                              const Vec<Real, Dim>& dr, Real r2) const;   // required
///   static constexpr bool cutoff_test = true;   // optional: false = call for every candidate pair
///   static constexpr bool branch_free = false;  // optional: true = a call with r2 = +infinity adds nothing to acc
///                                               //   (position-only functors; see below)
///   CELLINT_HD void symmetric(Accum& ai, Accum& aj, const Payload& pi, const Payload& pj,
///                             const Vec<Real, Dim>& dr, Real r2) const;  // optional: Newton's 3rd law
///   static constexpr int flops = 21;          // optional: flop per evaluated pair, for benchmarks
///   using AccumScalar = float;                // optional: Accum is an array of this scalar (half neighbour lists
///                                             //   add accumulators element by element; arithmetic Accums need not say)
/// };
/// @endcode
///
/// The pair call is made for every source particle `s != t` in the 3^Dim neighbour cells of the target `t` with
/// `r2 < cutoff^2` (or for every candidate when `cutoff_test` is false), where `dr = x_t - x_s` uses the periodic image
/// of the source and `r2 = |dr|^2`. After the last source the library writes the accumulator to `out[t]` (sorted slot
/// `t`; CellGrid::to_user_order brings results back to the user's order). `symmetric` adds the contribution of the pair
/// to both `ai` (target i, with dr = x_i - x_j) and `aj`; half-shell strategies need it.
///
/// `branch_free` lets a loop that finds most of its pairs within the cutoff (the rows of a neighbour list) call the
/// functor for every pair it holds, with r2 replaced by +infinity beyond the cutoff, instead of branching around the
/// call: declare it when such a call adds nothing (a force that vanishes as 1/r^n does; an energy with a shift does
/// not). It is used for functors whose Payload is NoPayload and which keep the cutoff test.
///
/// `load_source` is for two particle sets whose attributes differ (interact(targets, sources, f, out)): targets are
/// read with `load` from the target grid's view, sources with `load_source` from the source grid's view, and the
/// functor's Attribute handles may belong to either grid (each read only on its own side). It returns `SourcePayload`
/// when the functor declares one (then neither payload may be NoPayload), else `Payload`. A functor without it reads
/// both sides with `load`. Strategies that stage one record per particle for both sides (all-in-sm, x-pencil-reg,
/// x-pencil-tile, cell-loop-half, half lists) refuse such a functor and say so.

#include <type_traits>
#include <utility>

#include "cellint/core/vec.hpp"

namespace cellint {

/// The payload of functors that need nothing but positions.
struct NoPayload {};

namespace detail {
template <class...> using void_t = void;

template <class F, class = void> struct has_accum : std::false_type {};
template <class F> struct has_accum<F, void_t<typename F::Accum>> : std::true_type {};

template <class F, class = void> struct payload_of { using type = NoPayload; };
template <class F> struct payload_of<F, void_t<typename F::Payload>> { using type = typename F::Payload; };

template <class F, class = void> struct source_payload_of { using type = typename payload_of<F>::type; };
template <class F> struct source_payload_of<F, void_t<typename F::SourcePayload>> {
  using type = typename F::SourcePayload;
};

template <class F, class = void> struct has_init : std::false_type {};
template <class F> struct has_init<F, void_t<decltype(std::declval<const F&>().init())>> : std::true_type {};

template <class F, class View, class = void> struct has_load_source : std::false_type {};
template <class F, class View>
struct has_load_source<F, View, void_t<decltype(std::declval<const F&>().load_source(std::declval<const View&>(),
                                                                                         Index{}))>> : std::true_type {};

template <class F, class = void> struct cutoff_test_of : std::true_type {};
template <class F> struct cutoff_test_of<F, void_t<decltype(F::cutoff_test)>>
    : std::integral_constant<bool, F::cutoff_test> {};

template <class F, class = void> struct branch_free_of : std::false_type {};
template <class F> struct branch_free_of<F, void_t<decltype(F::branch_free)>>
    : std::integral_constant<bool, F::branch_free> {};

template <class F, class = void> struct flops_of : std::integral_constant<int, 0> {};
template <class F> struct flops_of<F, void_t<decltype(F::flops)>> : std::integral_constant<int, F::flops> {};

template <class F, class = void> struct accum_scalar_of {
  using type = std::conditional_t<std::is_arithmetic<typename F::Accum>::value, typename F::Accum, void>;
};
template <class F> struct accum_scalar_of<F, void_t<typename F::AccumScalar>> { using type = typename F::AccumScalar; };

template <class F, class Real, int Dim, class = void> struct has_pair : std::false_type {};
template <class F, class Real, int Dim>
struct has_pair<F, Real, Dim,
                void_t<decltype(std::declval<const F&>()(
                    std::declval<typename F::Accum&>(), std::declval<const typename payload_of<F>::type&>(),
                    std::declval<const typename source_payload_of<F>::type&>(), std::declval<const Vec<Real, Dim>&>(),
                    std::declval<Real>()))>> : std::true_type {};

template <class F, class Real, int Dim, class = void> struct has_symmetric : std::false_type {};
template <class F, class Real, int Dim>
struct has_symmetric<F, Real, Dim,
                     void_t<decltype(std::declval<const F&>().symmetric(
                         std::declval<typename F::Accum&>(), std::declval<typename F::Accum&>(),
                         std::declval<const typename payload_of<F>::type&>(),
                         std::declval<const typename payload_of<F>::type&>(),
                         std::declval<const Vec<Real, Dim>&>(), std::declval<Real>()))>> : std::true_type {};
}  // namespace detail

/// Compile-time description of a pair functor `F` used with positions of type `Real` in `Dim` dimensions. Instantiating
/// it checks the contract and explains what is missing.
template <class F, class Real, int Dim>
struct FunctorTraits {
  static_assert(std::is_trivially_copyable<F>::value,
                "cellint: the pair functor must be trivially copyable (hold parameters and raw pointers "
                "by value; no std::vector, no virtual functions)");
  static_assert(detail::has_accum<F>::value,
                "cellint: the pair functor must declare `using Accum = ...;` (the per-target accumulator)");
  using Accum = typename F::Accum;                        ///< the functor's accumulator, F::Accum
  using Payload = typename detail::payload_of<F>::type;  ///< F::Payload, or NoPayload if F declares none
  /// F::SourcePayload (what load_source() returns), or Payload if F declares none.
  using SourcePayload = typename detail::source_payload_of<F>::type;
  static_assert(std::is_trivially_copyable<Accum>::value, "cellint: F::Accum must be trivially copyable");
  static_assert(std::is_trivially_copyable<Payload>::value, "cellint: F::Payload must be trivially copyable");
  static_assert(std::is_trivially_copyable<SourcePayload>::value,
                "cellint: F::SourcePayload must be trivially copyable");
  static_assert(std::is_same<Payload, SourcePayload>::value ||
                    (!std::is_same<Payload, NoPayload>::value && !std::is_same<SourcePayload, NoPayload>::value),
                "cellint: a functor with its own SourcePayload needs a Payload for both sides (not NoPayload): give "
                "the side without one a payload of one field, or drop SourcePayload");
  static_assert(detail::has_pair<F, Real, Dim>::value,
                "cellint: the pair functor needs `void operator()(Accum&, const Payload& target, const "
                "SourcePayload& source, const cellint::Vec<Real, Dim>& dr, Real r2) const` for this Real and Dim "
                "(SourcePayload is Payload unless the functor declares it)");
  /// True when the functor carries nothing but positions (on both sides).
  static constexpr bool position_only = std::is_same<Payload, NoPayload>::value;
  /// Whether the library applies r2 < cutoff^2 before calling the functor.
  static constexpr bool cutoff_test = detail::cutoff_test_of<F>::value;
  /// Whether a loop may call the functor with r2 = +infinity beyond the cutoff instead of branching (F::branch_free;
  /// position-only functors with the cutoff test).
  static constexpr bool branch_free = position_only && cutoff_test && detail::branch_free_of<F>::value;
  /// Whether a Newton's-third-law form exists (needed by half-shell strategies).
  static constexpr bool symmetric = detail::has_symmetric<F, Real, Dim>::value;
  /// Flop per evaluated pair (0 when the functor does not say).
  static constexpr int flops = detail::flops_of<F>::value;
  /// The scalar an Accum is an array of (F::AccumScalar, or Accum itself when arithmetic; void when unknown).
  using AccumScalar = typename detail::accum_scalar_of<F>::type;
  /// Whether accumulators can be added element by element (what half neighbour lists need to merge both sides).
  static constexpr bool addable = !std::is_void<AccumScalar>::value;

  /// The accumulator's start value.
  CELLINT_HD static Accum init(const F& f) {
    if constexpr (detail::has_init<F>::value) return f.init(); else return Accum{};
  }
  /// Particle i's payload (as a target; as a source too unless the functor has load_source()).
  template <class View>
  CELLINT_HD static Payload load(const F& f, const View& v, Index i) {
    if constexpr (position_only) { (void)f; (void)v; (void)i; return Payload{}; }
    else return f.load(v, i);
  }
  /// Whether sources are read by their own load_source() (then targets and sources need separate records).
  template <class View>
  static constexpr bool split_load = !position_only && detail::has_load_source<F, View>::value;
  /// Source j's payload: F::load_source() when the functor has one, else load().
  template <class View>
  CELLINT_HD static SourcePayload load_source(const F& f, const View& v, Index j) {
    if constexpr (split_load<View>) {
      static_assert(std::is_same<decltype(f.load_source(v, j)), SourcePayload>::value,
                    "cellint: F::load_source() must return F::SourcePayload (F::Payload when it declares none)");
      return f.load_source(v, j);
    } else {
      static_assert(std::is_same<Payload, SourcePayload>::value,
                    "cellint: a functor that declares SourcePayload needs load_source()");
      return load(f, v, j);
    }
  }
};

}  // namespace cellint
