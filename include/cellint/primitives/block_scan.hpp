#pragma once
/// @file
/// Block-wide, in-place prefix sum (scan) of an array in shared memory, after Section 6 and
/// Appendix (Code 1, Algorithm 6) of the paper: no extra shared memory, about N/2 threads busy
/// in the widest step, and 2h-3 barriers for the inclusive form, h = ceil(log2(N + 1)).
///
/// Written only against the block API (backend/traits.hpp: thread_rank, block_size, sync), so
/// the same code runs on Cuda, Hip and Emulated. Any block size works (1, 33, 97, 1000, ...),
/// and any length N >= 0: when N exceeds what one pass of the block covers, threads loop.
///
/// Usage inside a block kernel:
/// @code
///   unsigned* counts = b.template shared<unsigned>();   // n values, filled by the block
///   ... fill counts ...
///   b.sync();                                           // the scan reads every thread's stores
///   cellint::block_exclusive_scan_inplace(b, counts, n);
///   ... every thread reads counts[0..n) ...
/// @endcode
///
/// How it works
/// ------------
/// The array is read as the in-order layout of a binary tree of sums: element i = 2^k*m - 1
/// (m odd) is a node of height k, whose subtree covers the 2^k elements (i - 2^k, i].
///
/// * Upward pass, js = 2, 4, ..., P (P = largest power of two <= N), one barrier per level:
///   data[i] = data[i - js/2] + data[i] for i = js*m - 1. Afterwards every i = 2^k*m - 1
///   (m odd, 2^k <= P) holds the sum of its subtree, the elements (i - 2^k, i]. The nodes
///   i = 2^k - 1 cover a whole prefix [0, i], so they already hold their final value; the root
///   P - 1 is one of them.
/// * Downward pass, js = P/2, ..., 4, 2, one barrier per level: for i = js*m + js/2 - 1 (m >= 1),
///   data[i] = data[js*m - 1] + data[i]. The left operand is a node of a higher level whose
///   prefix is already final (by induction from the top), the right operand is the subtree sum
///   of the elements after it, so data[i] becomes the full prefix [0, i]. After the level with
///   stride js, every index congruent to js/2 - 1 modulo js/2 is final; after js = 2, all are.
/// * Within one level, the indices written (js*m - 1, resp. js*m + js/2 - 1) and the indices
///   read by other updates of that level never coincide, so a level needs no barrier inside it,
///   and threads may split it any way (here: thread t takes m = t, t + B, t + 2B, ...).
///
/// Barrier count, and Code 1 versus Algorithm 6
/// --------------------------------------------
/// The upward pass has log2(P) = h - 1 levels (for P <= N < 2P, h = ceil(log2(N + 1)) =
/// log2(P) + 1). The first downward level that can be non-empty has stride js = P: it adds the
/// root P - 1 into its right child 3P/2 - 1, which exists exactly when N >= 3P/2.
/// * Code 1 starts the downward pass at js = max(4, js_end/2) = P (js_end = 2P is the value the
///   upward loop leaves). It is correct for every N, but spends 2h - 2 barriers for N >= 4
///   (2 for N = 1, 3 for N = 2, 3): for P <= N < 3P/2 its first downward level is empty, a
///   barrier for nothing.
/// * Algorithm 6 starts at js = max(4, js_end/4) = P/2. It gives the 2h - 3 barriers of the text
///   (for N >= 8), but skips the root's right child: wrong whenever N >= 3P/2 and P >= 8, e.g.
///   N = 12..15, 24..31, ..., 1000 (for N = 12, element 11 never receives element 7); for P <= 4
///   the max(4, .) saves it.
/// So Code 1 is the correct one, and the 2h - 3 of the text holds only for N < 3 * 2^(h-2)
/// (the text's example, N = 8, is such a case).
/// This implementation gets 2h - 3 for every N >= 2: the single thread that computes the root
/// in the last upward level also adds it into the root's right child (3P/2 - 1, if < N) in the
/// same step. No other thread touches either element in that level (the root it has just
/// written itself; the child's subtree sum is complete since the previous barrier), so no
/// barrier is added, and the downward pass starts at js = P/2 as in Algorithm 6, with no empty
/// level (the level js always updates index 3js/2 - 1 < N). Every level then has work, and
/// each barrier separates a level's writes from the next level's reads of them.
///
/// Exact counts (see block_inclusive_scan_barriers() / block_exclusive_scan_barriers()):
/// inclusive 0 for N <= 1, 2h - 3 for N >= 2; exclusive 2 for N <= 1, 3 for N = 2, 3 and
/// 2h - 2 for N >= 4, whatever the block size. The counts depend on N only, so they are the
/// same in every thread, as barriers require.

#include "cellint/core/macros.hpp"

namespace cellint {

namespace detail {

/// Sum, the operator of the *_sum forms.
struct ScanPlus {
  template <class T>
  CELLINT_HD T operator()(const T& a, const T& b) const {
    return a + b;
  }
};

/// floor(log2(n)) for n >= 1.
CELLINT_HD constexpr int scan_floor_log2(int n) {
  int k = 0;
  while (n >>= 1) ++k;
  return k;
}

/// Upward pass for n >= 2: levels js = 2^1 .. 2^top (top = floor(log2 n)), one barrier each.
/// The last level (the root, one node) is done by thread 0, which also completes the root's
/// right child 3P/2 - 1 when `fuse_right_child` is set and that element exists.
/// Returns top.
template <class T, class Block, class Op>
CELLINT_HD int scan_upward(Block& b, T* d, int n, Op op, bool fuse_right_child) {
  const int t = static_cast<int>(b.thread_rank());
  const int bs = static_cast<int>(b.block_size());
  const int top = scan_floor_log2(n);
  for (int k = 1; k < top; ++k) {
    const int half = 1 << (k - 1);
    const int count = n >> k;  // nodes (m + 1) * 2^k - 1 < n
    for (int m = t; m < count; m += bs) {
      const int i = ((m + 1) << k) - 1;
      d[i] = op(d[i - half], d[i]);
    }
    b.sync();
  }
  if (t == 0) {
    const int half = 1 << (top - 1);  // P / 2
    const T root = op(d[half - 1], d[2 * half - 1]);
    d[2 * half - 1] = root;
    const int right = 3 * half - 1;  // the root's right child
    if (fuse_right_child && right < n) d[right] = op(root, d[right]);
  }
  b.sync();
  return top;
}

/// Downward pass: levels js = 2^(top-1) down to 2^k_min, one barrier each.
template <class T, class Block, class Op>
CELLINT_HD void scan_downward(Block& b, T* d, int n, Op op, int top, int k_min) {
  const int t = static_cast<int>(b.thread_rank());
  const int bs = static_cast<int>(b.block_size());
  for (int k = top - 1; k >= k_min; --k) {
    const int half = 1 << (k - 1);
    const int count = (n - half) >> k;  // nodes m * 2^k + half - 1 < n, m >= 1
    for (int m = t + 1; m <= count; m += bs) {
      const int left = (m << k) - 1;
      d[left + half] = op(d[left], d[left + half]);
    }
    b.sync();
  }
}

}  // namespace detail

/// Number of barriers block_inclusive_scan_inplace() issues for `n` elements: 0 for n <= 1,
/// else 2h - 3 with h = ceil(log2(n + 1)) (= 2 floor(log2 n) - 1). Independent of block size.
CELLINT_HD constexpr int block_inclusive_scan_barriers(int n) {
  return n < 2 ? 0 : 2 * detail::scan_floor_log2(n) - 1;
}

/// Number of barriers block_exclusive_scan_inplace() issues for `n` elements: 2 for n <= 1,
/// 3 for n = 2 and 3, else 2h - 2 with h = ceil(log2(n + 1)). Independent of block size.
CELLINT_HD constexpr int block_exclusive_scan_barriers(int n) {
  if (n < 2) return 2;
  const int top = detail::scan_floor_log2(n);
  return top + (top >= 2 ? top - 2 : 0) + 2;
}

/// In-place inclusive scan: data[i] becomes op(data[0], ..., data[i]) for i in [0, n).
///
/// Collective: every thread of the block must call it with the same `data` and `n` (barriers
/// inside). `data` is normally in shared memory (any memory all threads of the block can read
/// and write works). No extra memory is used.
///
/// Synchronisation: the values must be visible to all threads on entry (issue b.sync() after
/// the threads stored them). The call ends with a barrier (for n >= 2; for n <= 1 nothing is
/// written and none is issued), so every thread may read any result when it returns. Before
/// anything writes into `data` again, issue b.sync() if other threads may still be reading it.
/// Barriers: block_inclusive_scan_barriers(n) = 2h - 3 (n >= 2), h = ceil(log2(n + 1)):
/// one after each upward level, one after each downward level.
///
/// @tparam T     value type (copyable; the operator's result converts to T)
/// @tparam Block the block API handed to block kernels
/// @tparam Op    associative `T op(T left, T right)` (need not be commutative)
/// @param b      this thread's block handle
/// @param data   n values, scanned in place
/// @param n      number of values, 0 <= n < 2^30 (any value, not only powers of two)
/// @param op     the operator
template <class T, class Block, class Op>
CELLINT_HD void block_inclusive_scan_inplace(Block& b, T* data, int n, Op op) {
  if (n < 2) return;
  const int top = detail::scan_upward(b, data, n, op, /*fuse_right_child=*/true);
  detail::scan_downward(b, data, n, op, top, 1);
}

/// In-place inclusive prefix sum (see the operator form for the contract):
/// data[i] becomes data[0] + ... + data[i]. Barriers: 2h - 3 for n >= 2, none for n <= 1.
template <class T, class Block>
CELLINT_HD void block_inclusive_scan_inplace(Block& b, T* data, int n) {
  block_inclusive_scan_inplace(b, data, n, detail::ScanPlus{});
}

/// In-place exclusive scan: data[0] becomes `identity`, data[i] becomes
/// op(data[0], ..., data[i-1]) for i in [1, n). Optionally stores op(data[0..n)) (`identity`
/// for n = 0) into *total.
///
/// It runs the inclusive algorithm except its last downward level (stride 2, the even
/// elements), and replaces that level by a step that produces the shifted result in place:
/// each thread takes a contiguous run of pairs (2m, 2m+1), reads the one inclusive value it
/// needs from its left neighbour (data[2m-1] of its first pair), waits at a barrier, then walks
/// its pairs from high to low writing data[2m] = incl[2m-1] and data[2m+1] = incl[2m-1] + data[2m]
/// (incl[2m-1] being data[2m-1], final before this step). Only that one value crosses threads,
/// so one barrier suffices whatever n and the block size, plus the final one: the shift costs one
/// barrier more than the inclusive form, block_exclusive_scan_barriers(n) = 2h - 2 for n >= 4.
/// (For n = 2, 3: 3; for n <= 1: 2.) The root's right-child fusion is used only when that child
/// is not itself a leaf of this last level (n >= 4). Contiguous runs cost shared-memory bank
/// conflicts when a thread has many pairs (n much larger than twice the block size); for
/// n <= 2 * block_size each thread has at most one pair.
///
/// Collective and synchronisation as for block_inclusive_scan_inplace(), except that it always
/// ends with a barrier (also for n <= 1). `total`, if given, is written by one thread after the
/// first barrier of the shift step; point it at shared memory so every thread can read it on
/// return. It must be the same (null or not) in every thread.
///
/// @tparam T     value type
/// @tparam Block the block API handed to block kernels
/// @tparam Op    associative `T op(T left, T right)` (need not be commutative)
/// @param b        this thread's block handle
/// @param data     n values, scanned in place
/// @param n        number of values, 0 <= n < 2^30
/// @param total    where to store the reduction of all n inputs, or nullptr
/// @param identity the value of data[0] afterwards (and of *total when n = 0)
/// @param op       the operator
template <class T, class Block, class Op>
CELLINT_HD void block_exclusive_scan_inplace(Block& b, T* data, int n, T* total, T identity,
                                             Op op) {
  if (n >= 2) {
    const int top = detail::scan_floor_log2(n);
    detail::scan_upward(b, data, n, op, /*fuse_right_child=*/top >= 2);
    detail::scan_downward(b, data, n, op, top, 2);
  }
  // Every odd element now holds its inclusive prefix, every even one its input value.
  const int t = static_cast<int>(b.thread_rank());
  const int bs = static_cast<int>(b.block_size());
  const int pairs = (n + 1) / 2;
  const int per_thread = (pairs + bs - 1) / bs;
  const int m0 = t * per_thread;
  const int m1 = m0 + per_thread < pairs ? m0 + per_thread : pairs;
  T carry = identity;
  if (m0 > 0 && m0 < m1) carry = data[2 * m0 - 1];  // written by the previous thread below
  b.sync();
  for (int m = m1 - 1; m >= m0; --m) {
    const int i = 2 * m;
    const T left = m == m0 ? carry : data[i - 1];  // inclusive prefix up to i - 1
    const T leaf = data[i];
    if (i + 1 < n) {
      if (total && i + 2 == n) *total = data[i + 1];  // n - 1 is odd: already final
      data[i + 1] = i == 0 ? leaf : op(left, leaf);
    } else if (total) {
      *total = i == 0 ? leaf : op(left, leaf);  // i == n - 1
    }
    data[i] = left;
  }
  if (total && n == 0 && t == 0) *total = identity;
  b.sync();
}

/// In-place exclusive prefix sum (see the operator form for the contract): data[0] becomes 0,
/// data[i] becomes data[0] + ... + data[i-1]; the sum of all n inputs goes to *total if given.
/// Barriers: 2h - 2 for n >= 4, 3 for n = 2, 3, 2 for n <= 1.
template <class T, class Block>
CELLINT_HD void block_exclusive_scan_inplace(Block& b, T* data, int n, T* total = nullptr) {
  block_exclusive_scan_inplace(b, data, n, total, T(0), detail::ScanPlus{});
}

/// Class form of the in-place block scan, in the style of cub::BlockScan: the caller places
/// one TempStorage in shared memory (it holds the block total of the exclusive forms), builds a
/// BlockScan on it in every thread, and calls the collective members from every thread.
///
/// The algorithm needs no block-size template parameter: any block size works, chosen at launch.
/// Every member is collective (every thread of the block calls it with the same arguments),
/// expects the inputs to be visible to all threads on entry, ends with a barrier (except the
/// inclusive forms for n <= 1, which write nothing) and returns the reduction of all n inputs to
/// every thread. Reusing `data` or the TempStorage for other purposes afterwards needs a b.sync()
/// first, as for cub::BlockScan.
///
/// @code
///   struct Shared { BlockScan<unsigned>::TempStorage scan; unsigned counts[512]; };
///   Shared& s = *b.template shared<Shared>();
///   ... fill s.counts, b.sync() ...
///   const unsigned sum = BlockScan<unsigned>(s.scan).exclusive_sum(b, s.counts, n);
/// @endcode
///
/// @tparam T value type
template <class T>
class BlockScan {
 public:
  /// Shared-memory storage the exclusive forms use to hand the total to every thread.
  struct TempStorage {
    T total;  ///< reduction of the last exclusive scan's inputs
  };

  /// @param storage a TempStorage in shared memory, the same object in every thread
  CELLINT_HD explicit BlockScan(TempStorage& storage) : storage_(&storage) {}

  /// In-place inclusive prefix sum; returns the sum of all n values (0 for n = 0).
  /// Barriers: block_inclusive_scan_barriers(n). See block_inclusive_scan_inplace().
  template <class Block>
  CELLINT_HD T inclusive_sum(Block& b, T* data, int n) const {
    return inclusive_scan(b, data, n, T(0), detail::ScanPlus{});
  }

  /// In-place inclusive scan with associative `op`; returns the reduction of all n values
  /// (`identity` for n = 0). Barriers: block_inclusive_scan_barriers(n).
  template <class Block, class Op>
  CELLINT_HD T inclusive_scan(Block& b, T* data, int n, T identity, Op op) const {
    block_inclusive_scan_inplace(b, data, n, op);
    return n > 0 ? data[n - 1] : identity;
  }

  /// In-place exclusive prefix sum; returns the sum of all n values (0 for n = 0).
  /// Barriers: block_exclusive_scan_barriers(n). See block_exclusive_scan_inplace().
  template <class Block>
  CELLINT_HD T exclusive_sum(Block& b, T* data, int n) const {
    return exclusive_scan(b, data, n, T(0), detail::ScanPlus{});
  }

  /// In-place exclusive scan with associative `op` and its identity (the value data[0] gets);
  /// returns the reduction of all n values (`identity` for n = 0).
  /// Barriers: block_exclusive_scan_barriers(n).
  template <class Block, class Op>
  CELLINT_HD T exclusive_scan(Block& b, T* data, int n, T identity, Op op) const {
    block_exclusive_scan_inplace(b, data, n, &storage_->total, identity, op);
    return storage_->total;
  }

  /// Barriers issued by the inclusive members for n values.
  CELLINT_HD static constexpr int inclusive_barriers(int n) {
    return block_inclusive_scan_barriers(n);
  }
  /// Barriers issued by the exclusive members for n values.
  CELLINT_HD static constexpr int exclusive_barriers(int n) {
    return block_exclusive_scan_barriers(n);
  }

 private:
  TempStorage* storage_;
};

}  // namespace cellint
