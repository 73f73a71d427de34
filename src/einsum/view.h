// Views: a tensor name bound to a strided window of another tensor's storage, possibly padded.
// Lifting folds slices, single-index selects, permutes, broadcasts, reshapes and constant pads
// into views, so that the consumers' accesses reach the storage really touched (docs/einsum.md,
// "Views").
//
// Internal to the einsum module; not part of the public API.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "solar/einsum/graph.h"
#include "solar/ir/affine.h"

namespace solar::einsum::detail {

// Position v of the view (a point of `shape`) is the element at flat row-major offset
// offset + sum_d strides[d] * v[d] of `base`'s storage.
//   A padded view (pad_lo not empty) holds the base's elements only in a box of valid positions:
//   position v is the element at offset + sum_d strides[d] * (v[d] - pad_lo[d]) when every v[d]
//   lies in pad_lo[d] .. pad_lo[d] + valid[d], and pad_value elsewhere (`offset` is that of the
//   first valid position). A view whose valid box is all of `shape` is never held as padded.
struct View {
  std::string base;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // 0 for a broadcast dimension
  int64_t offset = 0;
  std::vector<int64_t> pad_lo;  // padded views: the first valid position per dimension
  std::vector<int64_t> valid;   // padded views: the number of valid positions per dimension
  double pad_value = 0;

  bool padded() const { return !pad_lo.empty(); }
};

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape);
int64_t numel(const std::vector<int64_t>& shape);

// The whole of a tensor, in its own storage.
View whole_view(const TensorInfo& t);
bool is_whole(const View& v, const TensorInfo& base);

// One entry of a slice list, evaluated: `start:stop:step`, or a single index (drops the dim).
struct SliceBounds {
  bool is_index = false;
  int64_t start = 0, stop = 0, step = 1;
};

// Missing trailing dimensions are taken whole. nullopt only when a single index of a padded view
// falls in the padding and no dimension is left (the result is the pad value alone).
std::optional<View> slice_view(const View& v, const std::vector<SliceBounds>& slices);
// Dimension d of the result is dimension perm[d] of v.
View permute_view(const View& v, const std::vector<int64_t>& perm);
// Dimension i of v becomes dimension dims[i] of `shape`; a size-1 dimension repeats.
View broadcast_view(const View& v, const std::vector<int64_t>& shape,
                    const std::vector<int64_t>& dims);
// The same elements in row-major order with another shape, when that is expressible with strides
// (always for a contiguous view; PyTorch's rule for `view`); else nullopt (the data must move).
// Never for a padded view.
std::optional<View> reshape_view(const View& v, const std::vector<int64_t>& shape);
// v with lo[d] positions of `value` before dimension d and hi[d] after it; nullopt when that is
// not a view: a negative amount, or v already padded with another value.
std::optional<View> pad_view(const View& v, const std::vector<int64_t>& lo,
                             const std::vector<int64_t>& hi, double value);

// The access map of `index` (one affine form per dimension of v) through the view; `base` is
// the tensor v.base names. Through a padded view the map is guarded: its index d is index[d] -
// pad_lo[d] and its extent valid[d], so that only the base's elements count.
AccessMap view_map(const View& v, const TensorInfo& base, std::vector<ir::AffineForm> index,
                   ir::AffineDomain domain, bool guarded);

// The map reaching every element of the view, over the box of its shape (box_domain).
AccessMap box_map(const View& v, const TensorInfo& base);

// The loops d0 in 0..shape[0], d1 in 0..shape[1], ...
ir::AffineDomain box_domain(const std::vector<int64_t>& shape);

// An affine form as text, terms in the order of `domain`'s loops: "2 * oh + kh - 1".
std::string form_text(const ir::AffineForm& f, const ir::AffineDomain& domain);
ir::IntExprP form_expr(const ir::AffineForm& f, const ir::AffineDomain& domain);

// An access through v written against its base: the base's name and its own indices, or
// "x.flat" and the flat offset when those are not affine (a reshape that merges dimensions).
// Through a padded view the name carries the guard (docs/einsum.md, "Views"): "x.or(0.0)" when
// the read happens exactly where every index lies within x's shape, else the valid range of
// each padded dimension of the view, "x.or(0.0, 1 <= i < 4)".
struct BaseAccess {
  std::string name;
  std::vector<ir::AffineForm> index;
};
BaseAccess base_access(const View& v, const TensorInfo& base,
                       const std::vector<ir::AffineForm>& index, const ir::AffineDomain& domain);

// base_access as text: "x[i, 2 * j + 1]", "x.flat[64 * i + j]", "x.or(-inf)[i - 1, j]".
std::string map_text(const View& v, const TensorInfo& base,
                     const std::vector<ir::AffineForm>& index, const ir::AffineDomain& domain);

}  // namespace solar::einsum::detail
