// The checker's rules for composition statements: tensor operands, keyword arguments, dtypes,
// and the shape rule of each operation (docs/ir.md, "Composition statements" and "Checker rules").
#include <algorithm>
#include <array>
#include <numeric>

#include "checker_context.h"
#include "int_util.h"

namespace solar::ir::detail {

namespace {

enum class ArgKind : uint8_t { Int, IntList, Number, Word };

struct ArgSpec {
  std::string_view key;
  ArgKind kind;
  bool required;
};

// What an operation takes: how many tensors, whether a positional list (permute), which
// keyword arguments.
struct OpSpec {
  size_t min_tensors, max_tensors;
  bool takes_list;
  std::vector<ArgSpec> args;
};

constexpr size_t kAnyNumber = SIZE_MAX;
constexpr std::array<std::string_view, 4> kReduceWords = {"none", "add", "max", "min"};

OpSpec op_spec(ComposeOp op) {
  switch (op) {
    case ComposeOp::Copy:
    case ComposeOp::Slice:
    case ComposeOp::Reshape:
      return {1, 1, false, {}};
    case ComposeOp::Permute:
      return {1, 1, true, {}};
    case ComposeOp::Broadcast:
      return {1, 1, false, {{"dims", ArgKind::IntList, false}}};
    case ComposeOp::Concat:
      return {1, kAnyNumber, false, {{"dim", ArgKind::Int, true}}};
    case ComposeOp::Pad:
      return {1,
              1,
              false,
              {{"lo", ArgKind::IntList, true},
               {"hi", ArgKind::IntList, true},
               {"value", ArgKind::Number, false}}};
    case ComposeOp::Take:
      return {2, 2, false, {{"dim", ArgKind::Int, true}, {"distinct", ArgKind::Int, false}}};
    case ComposeOp::Gather:
      return {2, 2, false, {{"dim", ArgKind::Int, true}}};
    case ComposeOp::Scatter:
      return {3, 3, false, {{"dim", ArgKind::Int, true}, {"reduce", ArgKind::Word, false}}};
    case ComposeOp::Argsort:
      return {1, 1, false, {{"dim", ArgKind::Int, true}, {"descending", ArgKind::Int, false}}};
    case ComposeOp::Rfft:
    case ComposeOp::Irfft:
    case ComposeOp::Fft:
    case ComposeOp::Ifft:
      return {1, 1, false, {{"dim", ArgKind::Int, true}, {"norm", ArgKind::Int, false}}};
    case ComposeOp::ViewAsReal:
    case ComposeOp::ViewAsComplex:
      return {1, 1, false, {}};
  }
  SOLAR_CHECK(false, "unknown ComposeOp");
}

bool has_kind(const ComposeAttr& a, ArgKind kind) {
  const bool single_int = !a.is_list && a.ints.size() == 1 && !a.number && a.word.empty();
  switch (kind) {
    case ArgKind::Int:
      return single_int;
    case ArgKind::IntList:
      return a.is_list && !a.number && a.word.empty();
    case ArgKind::Number:
      return single_int || (a.ints.empty() && a.number && a.word.empty());
    case ArgKind::Word:
      return a.ints.empty() && !a.number &&
             std::find(kReduceWords.begin(), kReduceWords.end(), a.word) != kReduceWords.end();
  }
  SOLAR_CHECK(false, "unknown ArgKind");
}

std::string_view kind_text(ArgKind kind) {
  switch (kind) {
    case ArgKind::Int:
      return "an integer";
    case ArgKind::IntList:
      return "a list of integers in brackets";
    case ArgKind::Number:
      return "a number";
    case ArgKind::Word:
      return "one of: none, add, max, min";
  }
  SOLAR_CHECK(false, "unknown ArgKind");
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

std::string list_str(const std::vector<int64_t>& v) { return shape_str(v); }

// Checks one composition statement. The structural rules (operands, arguments, dtypes) always
// run; the shape rules need concrete values and every operand's shape.
class ComposeChecker {
 public:
  ComposeChecker(CheckContext& cx, const Compose& c, Loc loc, const Scope& scope)
      : cx_(cx),
        c_(c),
        loc_(loc),
        scope_(scope),
        spec_(op_spec(c.op)),
        op_(quoted(compose_op_name(c.op))) {}

  void run() {
    const bool arity_ok = check_arity();
    const bool list_ok = check_list();
    const bool args_ok = check_attrs() && arity_ok && list_ok;
    dst_ = cx_.tensor_or_error(c_.dst, loc_);
    bool operands_ok = dst_ != nullptr;
    for (const std::string& src : c_.srcs) {
      srcs_.push_back(cx_.tensor_or_error(src, loc_));
      operands_ok = operands_ok && srcs_.back();
    }
    if (dst_) cx_.write(*dst_, loc_);
    if (!operands_ok || !args_ok) return;
    check_dtypes();
    const bool shapes_known = dst_->shape && std::all_of(srcs_.begin(), srcs_.end(), [](auto* t) {
                                return t->shape.has_value();
                              });
    if (scope_.concrete && shapes_known) check_shapes();
  }

 private:
  // ----- structure -----

  bool check_arity() {
    const size_t n = c_.srcs.size();
    if (n >= spec_.min_tensors && n <= spec_.max_tensors) return true;
    const std::string want = count_str(spec_.min_tensors, "tensor argument");
    cx_.error(loc_, op_ + " takes " +
                        (spec_.max_tensors == kAnyNumber ? "at least " + want
                                                         : want + ", found " + std::to_string(n)));
    return false;
  }

  // (make_stmt already rejects a list for any other operation.)
  bool check_list() {
    if (!spec_.takes_list || !c_.list.empty()) return true;
    cx_.error(loc_, op_ + " needs a permutation list, e.g. permute(x, [1, 0])");
    return false;
  }

  bool check_attrs() {
    bool ok = true;
    for (size_t i = 0; i < c_.attrs.size(); ++i) ok = check_attr(i) && ok;
    for (const ArgSpec& spec : spec_.args) {
      if (spec.required && !find_attr(spec.key)) {
        cx_.error(loc_, op_ + " needs the argument " + quoted(std::string(spec.key) + "="));
        ok = false;
      }
    }
    return ok;
  }

  bool check_attr(size_t i) {
    const ComposeAttr& a = c_.attrs[i];
    const auto spec = std::find_if(spec_.args.begin(), spec_.args.end(),
                                   [&](const ArgSpec& s) { return s.key == a.key; });
    if (spec == spec_.args.end()) {
      cx_.error(a.loc, "unknown argument " + quoted(a.key) + " for " + op_ + "; " + valid_keys());
      return false;
    }
    if (find_attr(a.key) != &a) {
      cx_.error(a.loc, "argument " + quoted(a.key) + " is given twice");
      return false;
    }
    if (!has_kind(a, spec->kind)) {
      cx_.error(a.loc, "argument " + quoted(a.key) + " of " + op_ + " must be " +
                           std::string(kind_text(spec->kind)));
      return false;
    }
    bool ok = true;
    for (const IntExprP& e : a.ints) ok = cx_.check_names(*e, scope_) && ok;
    return ok;
  }

  std::string valid_keys() const {
    if (spec_.args.empty()) return op_ + " takes none";
    std::string out = "valid: ";
    for (const ArgSpec& s : spec_.args)
      out += (&s == &spec_.args.front() ? "" : ", ") + std::string(s.key);
    return out;
  }

  const ComposeAttr* find_attr(std::string_view key) const {
    const auto it = std::find_if(c_.attrs.begin(), c_.attrs.end(),
                                 [&](const ComposeAttr& a) { return a.key == key; });
    return it == c_.attrs.end() ? nullptr : &*it;
  }

  // Data operands must have the destination's dtype (only a copy converts); index operands an
  // integer dtype.
  void check_dtypes() {
    if (complex_dtypes()) return;
    if (c_.op == ComposeOp::Argsort) {  // a permutation of positions: an integer destination
      if (!dtype_is_integer(dst_->decl->dtype)) {
        cx_.error(loc_, "the result " + quoted(c_.dst) +
                            " of argsort must have an integer dtype, not " +
                            std::string(dtype_name(dst_->decl->dtype)));
      }
      return;
    }
    const bool indexed =
        c_.op == ComposeOp::Take || c_.op == ComposeOp::Gather || c_.op == ComposeOp::Scatter;
    for (size_t i = 0; i < srcs_.size(); ++i) {
      const TensorDecl& src = *srcs_[i]->decl;
      if (indexed && i == 1) {
        if (!dtype_is_integer(src.dtype)) {
          cx_.error(loc_, "index tensor " + quoted(src.name) + " of " + op_ +
                              " must have an integer dtype, not " +
                              std::string(dtype_name(src.dtype)));
        }
      } else if (c_.op == ComposeOp::Copy && src.dtype != dst_->decl->dtype &&
                 (dtype_is_complex(src.dtype) || dtype_is_complex(dst_->decl->dtype))) {
        cx_.error(loc_, "cannot copy " + quoted(src.name) + " of " +
                            std::string(dtype_name(src.dtype)) + " to " + quoted(c_.dst) + " of " +
                            std::string(dtype_name(dst_->decl->dtype)) +
                            "; a copy converts complex values only to their own dtype");
      } else if (c_.op != ComposeOp::Copy && src.dtype != dst_->decl->dtype) {
        cx_.error(loc_, quoted(src.name) + " is " + std::string(dtype_name(src.dtype)) + " but " +
                            quoted(c_.dst) + " is " + std::string(dtype_name(dst_->decl->dtype)) +
                            "; only a copy converts between dtypes");
      }
    }
  }

  // The dtype rules of the operations between complex tensors and their real parts, and of
  // complex operands of the others (which move complex elements whole, or refuse them). True when
  // they decided.
  bool complex_dtypes() {
    const DType y = dst_->decl->dtype;
    const DType x = srcs_[0]->decl->dtype;
    const auto want = [&](const std::string& name, DType has, bool complex, DType part) {
      if (dtype_is_complex(has) == complex && complex_part(has) == part) return;
      cx_.error(loc_, op_ + " needs " + (complex ? "a complex " : "a real ") + quoted(name) +
                          " of parts " + std::string(dtype_name(part)) + ", not " +
                          std::string(dtype_name(has)));
    };
    switch (c_.op) {
      case ComposeOp::Rfft:
      case ComposeOp::ViewAsComplex:
        if (!dtype_is_complex(y)) return want(c_.dst, y, true, complex_part(y)), true;
        return want(c_.srcs[0], x, false, complex_part(y)), true;
      case ComposeOp::Irfft:
      case ComposeOp::ViewAsReal:
        if (!dtype_is_complex(x)) return want(c_.srcs[0], x, true, complex_part(x)), true;
        return want(c_.dst, y, false, complex_part(x)), true;
      case ComposeOp::Fft:
      case ComposeOp::Ifft:
        if (!dtype_is_complex(x)) return want(c_.srcs[0], x, true, complex_part(x)), true;
        return want(c_.dst, y, true, complex_part(x)), true;
      case ComposeOp::Copy:
      case ComposeOp::Slice:
      case ComposeOp::Reshape:
      case ComposeOp::Permute:
      case ComposeOp::Concat:
        return false;  // complex elements move whole; only a copy converts, and not complex
      case ComposeOp::Broadcast:
      case ComposeOp::Pad:
      case ComposeOp::Take:
      case ComposeOp::Gather:
      case ComposeOp::Scatter:
      case ComposeOp::Argsort:
        break;
    }
    bool complex = dtype_is_complex(y);
    for (const TensorInfo* t : srcs_) complex = complex || dtype_is_complex(t->decl->dtype);
    if (complex) {
      cx_.error(loc_, op_ + " does not take complex tensors; view them as real pairs " +
                          "(view_as_real) first");
    }
    return complex;
  }

  // ----- shapes -----

  const Shape& shape(size_t src) const { return *srcs_[src]->shape; }
  const Shape& dst_shape() const { return *dst_->shape; }

  void check_shapes() {
    switch (c_.op) {
      case ComposeOp::Copy:
        return c_.dst_region.empty() ? check_copy() : check_region_copy();
      case ComposeOp::Slice:
        return check_slice();
      case ComposeOp::Reshape:
        return check_reshape();
      case ComposeOp::Permute:
        return check_permute();
      case ComposeOp::Broadcast:
        return check_broadcast();
      case ComposeOp::Concat:
        return check_concat();
      case ComposeOp::Pad:
        return check_pad();
      case ComposeOp::Take:
        return check_take();
      case ComposeOp::Gather:
        return check_gather();
      case ComposeOp::Scatter:
        return check_scatter();
      case ComposeOp::Argsort:
        return check_argsort();
      case ComposeOp::Rfft:
      case ComposeOp::Irfft:
      case ComposeOp::Fft:
      case ComposeOp::Ifft:
        return check_fft();
      case ComposeOp::ViewAsReal:
      case ComposeOp::ViewAsComplex:
        return check_view_as();
    }
  }

  // An FFT along `dim`: fft and ifft keep X's shape; rfft gives n/2+1 (the one-sided half) or n
  // (the whole spectrum) along dim, for X's n; irfft takes n/2+1 along dim to Y's n (n >= 1).
  // norm is 0 (none), 1 (divide by sqrt(n)) or 2 (divide by n).
  void check_fft() {
    const bool inverse_real = c_.op == ComposeOp::Irfft;
    const Shape& real = inverse_real ? dst_shape() : shape(0);
    const std::optional<size_t> dim = dim_arg(real.size(), inverse_real ? c_.dst : c_.srcs[0]);
    if (!dim) return;
    if (const ComposeAttr* a = find_attr("norm")) {
      const std::optional<int64_t> v = cx_.eval(*a->ints[0], scope_);
      if (v && (*v < 0 || *v > 2)) {
        cx_.error(a->loc,
                  "norm must be 0 (none), 1 (by sqrt(n)) or 2 (by n), not " + std::to_string(*v));
      }
    }
    Shape half = real;
    half[*dim] = real[*dim] / 2 + 1;
    switch (c_.op) {
      case ComposeOp::Rfft:
        if (dst_shape() != real) expect_result(half, "rfft", " (or " + shape_str(real) + ")");
        return;
      case ComposeOp::Irfft:
        if (real[*dim] < 1) {
          cx_.error(loc_, "irfft gives " + quoted(c_.dst) + " no element along dim " +
                              std::to_string(*dim));
        } else if (shape(0) != half) {
          cx_.error(loc_, "irfft to " + quoted(c_.dst) + " of shape " + shape_str(real) +
                              " reads shape " + shape_str(half) + " but " + quoted(c_.srcs[0]) +
                              " has shape " + shape_str(shape(0)));
        }
        return;
      default:
        return expect_result(real, op_);
    }
  }

  // view_as_real: Y is X's shape and 2; view_as_complex: X is Y's shape and 2.
  void check_view_as() {
    if (c_.op == ComposeOp::ViewAsReal) {
      Shape pairs = shape(0);
      pairs.push_back(2);
      return expect_result(pairs, op_);
    }
    const Shape& x = shape(0);
    if (x.empty() || x.back() != 2) {
      cx_.error(loc_, "view_as_complex needs a last dimension of 2 in " + quoted(c_.srcs[0]) +
                          ", which has shape " + shape_str(x));
      return;
    }
    expect_result(Shape(x.begin(), x.end() - 1), op_);
  }

  // "<what> gives shape [..]<note> but 'y' has shape [..]" unless they agree.
  void expect_result(const Shape& got, const std::string& what, const std::string& note = "") {
    if (got == dst_shape()) return;
    cx_.error(loc_, what + " gives shape " + shape_str(got) + note + " but " + quoted(c_.dst) +
                        " has shape " + shape_str(dst_shape()));
  }

  void check_copy() {
    if (shape(0) == dst_shape()) return;
    cx_.error(loc_, "cannot copy " + quoted(c_.srcs[0]) + " of shape " + shape_str(shape(0)) +
                        " to " + quoted(c_.dst) + " of shape " + shape_str(dst_shape()));
  }

  void check_region_copy() {
    const std::optional<Shape> region = slice_shape(c_.dst_region, dst_shape(), c_.dst);
    if (!region || *region == shape(0)) return;
    cx_.error(loc_, "the region of " + quoted(c_.dst) + " has shape " + shape_str(*region) +
                        " but " + quoted(c_.srcs[0]) + " has shape " + shape_str(shape(0)));
  }

  void check_slice() {
    const std::optional<Shape> result = slice_shape(c_.src_slices, shape(0), c_.srcs[0]);
    if (result) expect_result(*result, "the slice of " + quoted(c_.srcs[0]));
  }

  // The shape of tensor[slices] (dimensions with a single index dropped, missing trailing
  // dimensions whole); nullopt after reporting a bad slice.
  std::optional<Shape> slice_shape(const std::vector<SliceSpec>& slices, const Shape& dims,
                                   const std::string& tensor) {
    if (slices.size() > dims.size()) {
      cx_.error(slices[dims.size()].loc, quoted(tensor) + " has " +
                                             count_str(dims.size(), "dimension") +
                                             ", sliced with " + std::to_string(slices.size()));
      return std::nullopt;
    }
    Shape out;
    bool ok = true;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (d >= slices.size()) {
        out.push_back(dims[d]);
      } else if (std::optional<int64_t> n = slice_length(slices[d], dims[d], d, tensor)) {
        if (!slices[d].is_index) out.push_back(*n);
      } else {
        ok = false;
      }
    }
    return ok ? std::optional<Shape>(out) : std::nullopt;
  }

  // The length of one slice of a dimension of size `size` (1 for a single index).
  std::optional<int64_t> slice_length(const SliceSpec& s, int64_t size, size_t dim,
                                      const std::string& tensor) {
    const auto value = [&](const IntExprP& e, int64_t fallback) {
      return e ? cx_.eval(*e, scope_) : std::optional<int64_t>(fallback);
    };
    const std::optional<int64_t> start = value(s.start, 0);
    const std::optional<int64_t> stop = value(s.stop, size);
    const std::optional<int64_t> step = value(s.step, 1);
    if (!start || !stop || !step) return std::nullopt;
    const std::string where = " is out of range for dimension " + std::to_string(dim) + " of " +
                              quoted(tensor) + " (size " + std::to_string(size) + ")";
    if (s.is_index) {
      SOLAR_CHECK(s.start != nullptr, "a single-index slice without its index");
      if (*start >= 0 && *start < size) return 1;
      cx_.error(loc_of(*s.start), "index " + std::to_string(*start) + where);
      return std::nullopt;
    }
    if (*step <= 0) {
      cx_.error(loc_of(*s.step), "slice step must be positive, got " + std::to_string(*step));
      return std::nullopt;
    }
    // The defaults (0 and size) are in range, so a bound out of range was written out.
    for (const auto& [bound, v] : {std::pair{s.start, *start}, std::pair{s.stop, *stop}}) {
      if (v < 0 || v > size) {
        cx_.error(loc_of(*bound), "slice bound " + std::to_string(v) + where);
        return std::nullopt;
      }
    }
    return *stop <= *start ? 0 : (*stop - *start - 1) / *step + 1;
  }

  void check_reshape() {
    const std::optional<int64_t> from = elements(shape(0));
    const std::optional<int64_t> to = elements(dst_shape());
    if (!from || !to || *from == *to) return;
    cx_.error(loc_, "cannot reshape " + quoted(c_.srcs[0]) + " of shape " + shape_str(shape(0)) +
                        " (" + std::to_string(*from) + " elements) to " + quoted(c_.dst) +
                        " of shape " + shape_str(dst_shape()) + " (" + std::to_string(*to) +
                        " elements)");
  }

  // The sum of non-negative sizes; nullopt after reporting an overflow.
  std::optional<int64_t> sum(const std::vector<int64_t>& parts) {
    int64_t total = 0;
    for (int64_t p : parts) {
      const std::optional<int64_t> next = checked_add(total, p);
      if (!next) {
        cx_.error(loc_, "a size of the result of " + op_ + " exceeds the 64-bit range");
        return std::nullopt;
      }
      total = *next;
    }
    return total;
  }

  std::optional<int64_t> elements(const Shape& s) {
    int64_t n = 1;
    for (int64_t d : s) {
      const std::optional<int64_t> next = checked_mul(n, d);
      if (!next) {
        cx_.error(loc_, "the element count of shape " + shape_str(s) + " exceeds the 64-bit range");
        return std::nullopt;
      }
      n = *next;
    }
    return n;
  }

  // The values of an integer list; nullopt when one could not be evaluated (reported).
  std::optional<std::vector<int64_t>> values(const std::vector<IntExprP>& list) {
    std::vector<int64_t> out;
    for (const IntExprP& e : list) {
      const std::optional<int64_t> v = cx_.eval(*e, scope_);
      if (!v) return std::nullopt;
      out.push_back(*v);
    }
    return out;
  }

  // An attribute's list of values, checked to have one entry per dimension of `tensor`.
  std::optional<std::vector<int64_t>> per_dim_list(std::string_view key, size_t rank,
                                                   const std::string& tensor) {
    const ComposeAttr& a = *find_attr(key);
    std::optional<std::vector<int64_t>> v = values(a.ints);
    if (v && v->size() != rank) {
      cx_.error(a.loc, std::string(key) + " has " + count_str(v->size(), "entry") + " but " +
                           quoted(tensor) + " has " + count_str(rank, "dimension"));
      return std::nullopt;
    }
    return v;
  }

  // The value of `dim=`, checked to be a dimension of a tensor of rank `rank`.
  std::optional<size_t> dim_arg(size_t rank, const std::string& tensor) {
    const ComposeAttr& a = *find_attr("dim");
    const std::optional<int64_t> d = cx_.eval(*a.ints[0], scope_);
    if (!d) return std::nullopt;
    if (*d >= 0 && static_cast<size_t>(*d) < rank) return static_cast<size_t>(*d);
    cx_.error(a.loc, "dim " + std::to_string(*d) + " is out of range for " + quoted(tensor) +
                         " with " + count_str(rank, "dimension"));
    return std::nullopt;
  }

  void check_permute() {
    const std::optional<std::vector<int64_t>> p = values(c_.list);
    if (!p) return;
    const Loc at = loc_of(*c_.list[0]);
    const size_t rank = shape(0).size();
    if (p->size() != rank) {
      cx_.error(at, "the permutation has " + count_str(p->size(), "entry") + " but " +
                        quoted(c_.srcs[0]) + " has " + count_str(rank, "dimension"));
      return;
    }
    std::vector<int64_t> sorted = *p;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int64_t> identity(rank);
    std::iota(identity.begin(), identity.end(), 0);
    if (sorted != identity) {
      cx_.error(at, list_str(*p) + " is not a permutation of " + list_str(identity));
      return;
    }
    Shape result;
    for (int64_t d : *p) result.push_back(shape(0)[static_cast<size_t>(d)]);
    expect_result(result, "permute of " + quoted(c_.srcs[0]));
  }

  void check_broadcast() {
    const Shape& from = shape(0);
    const Shape& to = dst_shape();
    std::vector<int64_t> dims(from.size());  // where each dimension of X goes in Y
    if (const ComposeAttr* a = find_attr("dims")) {
      std::optional<std::vector<int64_t>> d = per_dim_list("dims", from.size(), c_.srcs[0]);
      if (!d) return;
      if (!increasing_within(*d, to.size())) {
        cx_.error(a->loc, "dims " + list_str(*d) + " must be strictly increasing dimensions of " +
                              quoted(c_.dst) + ", which has " + count_str(to.size(), "dimension"));
        return;
      }
      dims = *d;
    } else if (from.size() > to.size()) {
      return broadcast_error(quoted(c_.srcs[0]) + " has more dimensions");
    } else {
      std::iota(dims.begin(), dims.end(), static_cast<int64_t>(to.size() - from.size()));
    }
    for (size_t i = 0; i < from.size(); ++i) {
      const int64_t target = to[static_cast<size_t>(dims[i])];
      if (from[i] != 1 && from[i] != target) {
        return broadcast_error("dimension " + std::to_string(i) + " of " + quoted(c_.srcs[0]) +
                               " (" + std::to_string(from[i]) + ") does not match dimension " +
                               std::to_string(dims[i]) + " of " + quoted(c_.dst) + " (" +
                               std::to_string(target) + ")");
      }
    }
  }

  static bool increasing_within(const std::vector<int64_t>& v, size_t rank) {
    for (size_t i = 0; i < v.size(); ++i) {
      const bool in_range = v[i] >= 0 && static_cast<size_t>(v[i]) < rank;
      if (!in_range || (i > 0 && v[i] <= v[i - 1])) return false;
    }
    return true;
  }

  void broadcast_error(const std::string& why) {
    cx_.error(loc_, "cannot broadcast " + quoted(c_.srcs[0]) + " of shape " + shape_str(shape(0)) +
                        " to " + quoted(c_.dst) + " of shape " + shape_str(dst_shape()) + ": " +
                        why);
  }

  void check_concat() {
    const Shape& to = dst_shape();
    const std::optional<size_t> dim = dim_arg(to.size(), c_.dst);
    if (!dim) return;
    std::vector<int64_t> parts;
    for (size_t i = 0; i < srcs_.size(); ++i) {
      if (!concat_operand_fits(c_.srcs[i], shape(i), *dim)) return;
      parts.push_back(shape(i)[*dim]);
    }
    const std::optional<int64_t> total = sum(parts);
    if (total && *total != to[*dim]) {
      cx_.error(loc_, "concat along dim " + std::to_string(*dim) + " gives size " +
                          std::to_string(*total) + " but " + quoted(c_.dst) + " has " +
                          std::to_string(to[*dim]));
    }
  }

  // Same rank as the result, same size in every dimension but `dim`.
  bool concat_operand_fits(const std::string& name, const Shape& s, size_t dim) {
    const Shape& to = dst_shape();
    if (s.size() != to.size()) {
      cx_.error(loc_, quoted(name) + " has " + count_str(s.size(), "dimension") + " but " +
                          quoted(c_.dst) + " has " + std::to_string(to.size()));
      return false;
    }
    for (size_t d = 0; d < s.size(); ++d) {
      if (d != dim && s[d] != to[d]) {
        cx_.error(loc_, "dimension " + std::to_string(d) + " of " + quoted(name) + " is " +
                            std::to_string(s[d]) + " but " + quoted(c_.dst) + " has " +
                            std::to_string(to[d]));
        return false;
      }
    }
    return true;
  }

  void check_pad() {
    const Shape& from = shape(0);
    const std::optional<std::vector<int64_t>> lo = per_dim_list("lo", from.size(), c_.srcs[0]);
    const std::optional<std::vector<int64_t>> hi = per_dim_list("hi", from.size(), c_.srcs[0]);
    if (!lo || !hi || !non_negative("lo", *lo) || !non_negative("hi", *hi)) return;
    Shape result;
    for (size_t d = 0; d < from.size(); ++d) {
      const std::optional<int64_t> n = sum({(*lo)[d], from[d], (*hi)[d]});
      if (!n) return;
      result.push_back(*n);
    }
    expect_result(result, "pad of " + quoted(c_.srcs[0]));
  }

  bool non_negative(std::string_view key, const std::vector<int64_t>& v) {
    for (size_t d = 0; d < v.size(); ++d) {
      if (v[d] < 0) {
        cx_.error(loc_of(*find_attr(key)->ints[d]), std::string(key) + "[" + std::to_string(d) +
                                                        "] is " + std::to_string(v[d]) +
                                                        "; padding must be non-negative");
        return false;
      }
    }
    return true;
  }

  // Y = X[.., I[i..], ..]: X's shape with dimension `dim` replaced by I's shape.
  void check_take() {
    const std::optional<size_t> dim = dim_arg(shape(0).size(), c_.srcs[0]);
    if (!dim) return;
    const Shape& x = shape(0);
    Shape result(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(*dim));
    result.insert(result.end(), shape(1).begin(), shape(1).end());
    result.insert(result.end(), x.begin() + static_cast<std::ptrdiff_t>(*dim) + 1, x.end());
    expect_result(result, "take");
    // distinct=D: the index holds at least D different values (1 <= D <= X's size along dim and
    // the index's element count), a fact the frontend knows (top-k picks k different experts).
    if (const ComposeAttr* a = find_attr("distinct")) {
      const std::optional<int64_t> v = cx_.eval(*a->ints[0], scope_);
      int64_t most = x[*dim];
      int64_t elements = 1;
      for (const int64_t n : shape(1)) elements *= n;
      most = std::min(most, elements);
      if (v && (*v < 1 || *v > most)) {
        cx_.error(a->loc, "distinct must be in 1.." + std::to_string(most) + " (the size of " +
                              quoted(c_.srcs[0]) + " along dim and the index's elements), not " +
                              std::to_string(*v));
      }
    }
  }

  // torch.gather: I has X's rank and is no larger than X outside `dim`; Y has I's shape.
  // argsort: I has X's shape; descending is 0 or 1.
  void check_argsort() {
    if (!dim_arg(shape(0).size(), c_.srcs[0])) return;
    if (const ComposeAttr* a = find_attr("descending")) {
      const std::optional<int64_t> v = cx_.eval(*a->ints[0], scope_);
      if (v && *v != 0 && *v != 1) {
        cx_.error(a->loc, "descending must be 0 or 1, not " + std::to_string(*v));
      }
    }
    expect_result(shape(0), "argsort", " (the shape of " + quoted(c_.srcs[0]) + ")");
  }

  void check_gather() {
    const std::optional<size_t> dim = dim_arg(shape(0).size(), c_.srcs[0]);
    if (!dim || !index_fits(1, 0, *dim)) return;
    expect_result(shape(1), "gather", " (the shape of " + quoted(c_.srcs[1]) + ")");
  }

  // torch.scatter: I, S and X share a rank; I is no larger than S, nor than X outside `dim`;
  // Y has X's shape.
  void check_scatter() {
    const std::optional<size_t> dim = dim_arg(shape(0).size(), c_.srcs[0]);
    if (!dim || !index_fits(1, 0, *dim) || !index_fits(1, 2, std::nullopt)) return;
    expect_result(shape(0), "scatter", " (the shape of " + quoted(c_.srcs[0]) + ")");
  }

  // Index operand `index` has the rank of operand `of` and is no larger in any dimension but
  // `except`.
  bool index_fits(size_t index, size_t of, std::optional<size_t> except) {
    const Shape& i = shape(index);
    const Shape& x = shape(of);
    const std::string iname = quoted(c_.srcs[index]);
    const std::string xname = quoted(c_.srcs[of]);
    if (i.size() != x.size()) {
      cx_.error(loc_, "index tensor " + iname + " has " + count_str(i.size(), "dimension") +
                          " but " + xname + " has " + std::to_string(x.size()));
      return false;
    }
    for (size_t d = 0; d < i.size(); ++d) {
      if (d != except && i[d] > x[d]) {
        cx_.error(loc_, "dimension " + std::to_string(d) + " of index tensor " + iname + " (" +
                            std::to_string(i[d]) + ") is larger than that of " + xname + " (" +
                            std::to_string(x[d]) + ")");
        return false;
      }
    }
    return true;
  }

  CheckContext& cx_;
  const Compose& c_;
  const Loc loc_;
  const Scope& scope_;
  const OpSpec spec_;
  const std::string op_;  // the operation's name, quoted
  const TensorInfo* dst_ = nullptr;
  std::vector<const TensorInfo*> srcs_;
};

}  // namespace

void check_compose(CheckContext& cx, const Compose& c, Loc loc, const Scope& scope) {
  ComposeChecker(cx, c, loc, scope).run();
}

}  // namespace solar::ir::detail
