// The pieces of the lift (src/einsum/lift.cpp; graph.h's einsum::lift), one concern each:
//
//   lift.cpp           the program unrolled into steps, the tensors, the bindings of names to
//                      views, the kernels and random draws as nodes, dead code, the records of
//                      in-place writes, and the run
//   lift_views.cpp     composition statements (Composer): views folded, aliases of an input
//                      updated in place or of a graph output, else a movement node
//   lift_tracking.cpp  origin precision, fp4 codes and expanded values per storage tensor
//                      (Tracking)
//   lift_scans.cpp     the steps of a scan as one node (collapse_scans), after the walk
//
// Internal to the einsum module; not part of the public API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "counts.h"
#include "solar/einsum/graph.h"
#include "solar/ir/affine.h"
#include "solar/ir/ast.h"
#include "solar/ir/sizes.h"
#include "view.h"

namespace solar::einsum::detail {

// One statement of the unrolled program.
struct Step {
  const ir::Stmt* stmt = nullptr;
  ir::SymbolValues values;  // sizes and the enclosing repeat indices
  std::string suffix;       // "[t=3]", "[t=1,u=2]" inside repeat blocks, else ""
  std::string op_block;     // the enclosing op block's name with its suffix, or ""
};

// The program's tensors (Graph::tensors, which it fills) by name: the first declaration of each.
class Tensors {
 public:
  explicit Tensors(std::vector<TensorInfo>& list) : list_(list) {}

  void add(TensorInfo t);
  const TensorInfo& at(const std::string& name) const;  // an internal error for an unknown name

 private:
  std::vector<TensorInfo>& list_;
  std::map<std::string, size_t> index_;  // list_ by name, not a scan of it
};

// Where each tensor is read and written, for the folding rule: the steps, in order.
class Uses {
 public:
  Uses() = default;
  explicit Uses(const std::vector<Step>& steps);

  const std::vector<size_t>& reads(const std::string& name) const;  // empty: never read
  const std::vector<size_t>& writes(const std::string& name) const;

 private:
  std::map<std::string, std::vector<size_t>> reads_, writes_;
};

// What the pieces read of the unrolled program.
struct Unrolled {
  std::string file;
  std::vector<Step> steps;
  Uses uses;
  std::set<std::string> complex;  // the complex tensors (each lifted as its real pairs)
};

// Every tensor name is bound to a view of some tensor's storage: initially its own, whole.
class Bindings {
 public:
  explicit Bindings(const Tensors& tensors) : tensors_(tensors) {}

  View of(const std::string& name) const;
  void bind(const std::string& name, View v) { views_[name] = std::move(v); }
  // After a step writes `name`'s own storage.
  void materialise(const std::string& name) { views_.erase(name); }
  // Every name bound to a view of `from`'s storage is bound to the same view of `to`'s.
  void rebase(const std::string& from, const std::string& to);

 private:
  const Tensors& tensors_;
  std::map<std::string, View> views_;
};

// Unique node names: `base`, or `base#2`, `base#3`, ... when taken.
class NodeNames {
 public:
  std::string unique(const std::string& base);

 private:
  std::map<std::string, int> counts_;
};

// The names of the tensors read in `e`, in order (a name read twice: twice).
void collect_reads(const ir::Expr& e, std::vector<std::string>& names);

// Whether `e` reads a tensor or uses a loop index.
bool has_read_or_index(const ir::Expr& e);

// The affine forms of the indices of a checked statement, with `values` substituted.
std::vector<ir::AffineForm> affine_all(const std::vector<ir::IntExprP>& index,
                                       const ir::SymbolValues& values);

// The read maps of an expression, in order, against the storage each read reaches; `guarded`
// inside a select branch.
void read_maps(const Tensors& tensors, const Bindings& bindings, const ir::Expr& e, const Step& s,
               const ir::AffineDomain& domain, bool guarded,
               std::vector<std::pair<std::string, AccessMap>>& out);

// The accesses of a node, one per tensor in order of first appearance; identical maps kept once.
std::vector<Access> group_maps(const Tensors& tensors,
                               const std::vector<std::pair<std::string, AccessMap>>& maps);

// "for i in 0..4, j in 0..8: " (empty for an empty domain).
std::string domain_text(const ir::AffineDomain& domain);

// ---------------------------------------------------------------------------------------------
// lift_tracking.cpp

// Origin precision (docs/precision.md, "Origin precision"): per storage tensor, the narrowest
// dtype of which its values are exact upcasts (absent: its own dtype), and whether its values are
// copies of fewer elements (expanded: a broadcast or repeat materialised, such as a per-block
// scale repeated over its block); also which integer tensors hold 4-bit codes of packed fp4 data.
// Updated after each node writes its output.
class Tracking {
 public:
  Tracking(const Tensors& tensors, const Bindings& bindings)
      : tensors_(tensors), bindings_(bindings) {}

  // After kernel k wrote its output: the output's origin, and whether it is expanded (every read
  // of the right side a scale of the write: fewer loops, or an expanded tensor).
  void track_kernel(const ir::Kernel& k, const Step& s, const ir::AffineDomain& domain);
  // After movement node n wrote `dst` from `srcs` (the data sources: for take and gather the
  // first only): the origin of its values, and whether they are expanded.
  void track_movement(const ir::Compose& c, const Node& n);
  // The origins of a contraction's two operands, when its factors are two operands and scales of
  // them (constants, expanded tensors, reads with fewer loops than the operand they scale).
  std::optional<std::pair<ir::DType, ir::DType>> mac_origins(const MacOperands& m, const Step& s,
                                                             const ir::AffineDomain& domain) const;
  // Intermediate `base` is aliased into graph output `dst` (Composer): dst holds its values.
  void alias(const std::string& dst, const std::string& base);

 private:
  const TensorInfo& tensor(const std::string& name) const { return tensors_.at(name); }
  View binding(const std::string& name) const { return bindings_.of(name); }
  bool fp4_data(const std::string& base) const;
  void track_fp4_codes(const std::string& out, const std::vector<std::string>& reads);
  ir::DType tensor_origin(const std::string& base) const;
  void set_origin(const std::string& name, ir::DType o);
  std::map<std::string, std::set<std::string>> read_loops_by_tensor(
      const ir::Expr& e, const Step& s, const ir::AffineDomain& domain) const;
  std::set<std::string> read_loops(const ir::Expr& e, const Step& s,
                                   const ir::AffineDomain& domain) const;
  bool is_scale(const ir::Expr& f, const ir::Expr& of, const Step& s,
                const ir::AffineDomain& domain) const;
  std::optional<ir::DType> origin_of(const ir::Expr& e, const Step& s,
                                     const ir::AffineDomain& domain) const;

  const Tensors& tensors_;
  const Bindings& bindings_;
  std::map<std::string, ir::DType> origin_;  // origin precision of a storage tensor's values
  std::set<std::string> fp4_codes_;          // storage tensors of 4-bit codes of fp4 data
  std::set<std::string> expanded_;           // storage tensors holding copies of fewer elements
};

// ---------------------------------------------------------------------------------------------
// lift_views.cpp

// The composition statements (docs/einsum.md, "Views"): a view statement rebinds its destination
// when the view can be folded, or aliases an input updated in place or a graph output; every
// other statement (and a view that cannot stay one) is a movement node that writes the
// destination's own storage.
class Composer {
 public:
  Composer(const Unrolled& program, const Tensors& tensors, Bindings& bindings, Tracking& tracking,
           NodeNames& names, std::vector<Node>& nodes)
      : program_(program),
        tensors_(tensors),
        bindings_(bindings),
        tracking_(tracking),
        names_(names),
        nodes_(nodes) {}

  // Step i, a composition statement.
  void compose(size_t i);

 private:
  struct Movement {
    std::vector<std::pair<std::string, AccessMap>> reads, writes;
    std::vector<int64_t> points_shape;  // the elements moved
  };

  const TensorInfo& tensor(const std::string& name) const { return tensors_.at(name); }
  View binding(const std::string& name) const { return bindings_.of(name); }
  std::vector<Access> group(const std::vector<std::pair<std::string, AccessMap>>& maps) const {
    return group_maps(tensors_, maps);
  }

  // Views and aliases
  std::optional<View> view_of(const ir::Compose& c, const Step& s) const;
  bool can_fold(size_t i, const std::string& dst, const std::string& base) const;
  bool region_write(size_t i) const;
  bool in_place_alias(size_t i, const ir::Compose& c, const View& v);
  bool alias_into_output(size_t i, const std::string& dst, const View& v);

  // Movement nodes
  OpCounts fft_ops(const ir::Compose& c, const Step& s) const;
  std::pair<std::string, AccessMap> box(const View& v) const;
  std::pair<std::string, AccessMap> whole(const std::string& name) const;
  bool expanded_output(const View& v, const TensorInfo& y, Movement& m) const;
  std::pair<std::string, AccessMap> data_dependent(const std::string& name, std::string text,
                                                   int64_t moved) const;
  Movement movement(const ir::Compose& c, const Step& s, const std::optional<View>& view) const;
  void concat(const ir::Compose& c, const Step& s, Movement& m) const;
  void take_or_gather(const ir::Compose& c, const Step& s, Movement& m) const;
  void scatter(const ir::Compose& c, const Step& s, Movement& m) const;

  // The statement's attributes
  int64_t eval(const ir::IntExpr& e, const Step& s) const;
  std::vector<int64_t> ints(const ir::Compose& c, std::string_view key, const Step& s) const;
  std::vector<SliceBounds> slices(const std::vector<ir::SliceSpec>& specs,
                                  const std::vector<int64_t>& shape, const Step& s) const;
  double pad_value(const ir::Compose& c, const Step& s) const;

  const Unrolled& program_;
  const Tensors& tensors_;
  Bindings& bindings_;
  Tracking& tracking_;
  NodeNames& names_;
  std::vector<Node>& nodes_;
  std::set<std::string> aliased_inputs_;  // intermediates that alias an input updated in place
};

// ---------------------------------------------------------------------------------------------
// lift_scans.cpp

// Scans as one node (docs/einsum.md, "Scans"): consecutive nodes of g that are the steps of a
// scan become one node whose domain gains the step as its outermost loop.
void collapse_scans(Graph& g, const Tensors& tensors);

}  // namespace solar::einsum::detail
