#include "solar/exec/inputs.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <numbers>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "solar/util/error.h"

namespace solar::exec {
namespace {

bool is_runtime_supplied(const ir::TensorDecl& t) {
  return t.role == ir::TensorRole::Input || t.role == ir::TensorRole::Weight ||
         t.role == ir::TensorRole::Random;
}

std::string format_value(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

// True when `v` stored in `to` reads back as `v` (NaN stays NaN between float dtypes).
bool converts_exactly(double v, ir::DType to) {
  const double r = ir::round_to_dtype(v, to);
  if (std::isnan(v)) return ir::dtype_is_float(to) && std::isnan(r);
  return r == v;
}

// splitmix64: seeds one stream per tensor from (seed, name). Fully specified, so the values are
// the same on every platform (std::normal_distribution is not).
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

class Stream {
 public:
  Stream(uint64_t seed, std::string_view name) : state_(seed ^ fnv1a(name)) {}
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(splitmix64(state_) >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n), n > 0 (multiply-shift; bias below 2^-40 for the sizes used here).
  int64_t below(int64_t n) { return static_cast<int64_t>(uniform() * static_cast<double>(n)); }
  // Standard normal (Box-Muller, one sample per pair of uniforms).
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  uint64_t state_;
};

void collect_index_bounds(const std::vector<ir::StmtP>& body, const ir::Program& p,
                          const ir::SymbolValues& sizes, std::map<std::string, int64_t>& bounds) {
  for (const ir::StmtP& s : body) {
    if (const auto* r = std::get_if<ir::Repeat>(&s->node)) {
      collect_index_bounds(r->body, p, sizes, bounds);
      continue;
    }
    if (const auto* o = std::get_if<ir::OpBlock>(&s->node)) {
      collect_index_bounds(o->body, p, sizes, bounds);
      continue;
    }
    const auto* c = std::get_if<ir::Compose>(&s->node);
    if (c == nullptr) continue;
    if (c->op != ir::ComposeOp::Take && c->op != ir::ComposeOp::Gather &&
        c->op != ir::ComposeOp::Scatter) {
      continue;
    }
    if (c->srcs.size() < 2) continue;
    const ir::TensorDecl* x = p.find_tensor(c->srcs[0]);
    if (x == nullptr) continue;
    int64_t dim = 0;
    for (const ir::ComposeAttr& a : c->attrs) {
      if (a.key == "dim" && a.ints.size() == 1) dim = ir::eval_int(*a.ints[0], sizes, p.file);
    }
    const auto rank = static_cast<int64_t>(x->shape.size());
    if (dim < 0) dim += rank;
    if (dim < 0 || dim >= rank) continue;  // the checker reports it
    const int64_t n = ir::eval_int(*x->shape[static_cast<size_t>(dim)], sizes, p.file);
    auto [it, inserted] = bounds.emplace(c->srcs[1], n);
    if (!inserted && n < it->second) it->second = n;
  }
}

}  // namespace

TensorMap conform_inputs(const ir::Program& p, TensorMap given) {
  for (auto& [name, tensor] : given) {
    const ir::TensorDecl* decl = p.find_tensor(name);
    if (decl == nullptr || !is_runtime_supplied(*decl) || tensor.dtype() == decl->dtype) continue;
    if (tensor.dtype() == ir::DType::U8 &&
        (decl->dtype == ir::DType::F8E4M3 || decl->dtype == ir::DType::F8E5M2)) {
      // f8 data travels as its raw bits in uint8 arrays (npz.h): the declaration says which f8.
      tensor = reinterpret_bits(tensor, decl->dtype);
      continue;
    }
    Tensor converted(decl->dtype, tensor.shape());
    const int64_t n = tensor.numel();
    for (int64_t i = 0; i < n; ++i) {
      const double v = tensor.get(i);
      if (!converts_exactly(v, decl->dtype)) {
        throw UserError("input '" + name + "' has dtype " +
                        std::string(ir::dtype_name(tensor.dtype())) + " but is declared " +
                        std::string(ir::dtype_name(decl->dtype)) + ", and its element " +
                        std::to_string(i) + " (" + format_value(v) + ") is not exactly " +
                        "representable in " + std::string(ir::dtype_name(decl->dtype)) +
                        ": convert it yourself (e.g. numpy's astype) to accept the rounding");
      }
      converted.set(i, v);
    }
    tensor = std::move(converted);
  }
  return given;
}

TensorMap random_inputs(const ir::Program& p, const ir::SymbolValues& sizes, uint64_t seed) {
  std::map<std::string, int64_t> index_bounds;
  collect_index_bounds(p.body, p, sizes, index_bounds);
  TensorMap result;
  for (const ir::TensorDecl& t : p.tensors) {
    if (!is_runtime_supplied(t)) continue;
    std::vector<int64_t> shape;
    shape.reserve(t.shape.size());
    for (const ir::IntExprP& d : t.shape) shape.push_back(ir::eval_int(*d, sizes, p.file));
    Tensor tensor(t.dtype, shape);
    Stream stream(seed, t.name);
    const int64_t n = tensor.numel();
    const auto bound = index_bounds.find(t.name);
    for (int64_t i = 0; i < n; ++i) {
      double v = 0.0;
      if (ir::dtype_is_float(t.dtype)) {
        v = stream.normal();
      } else if (t.dtype == ir::DType::Bool) {
        v = static_cast<double>(stream.below(2));
      } else if (bound != index_bounds.end()) {
        v = bound->second > 0 ? static_cast<double>(stream.below(bound->second)) : 0.0;
      } else {
        v = static_cast<double>(stream.below(10));
      }
      tensor.set(i, v);
    }
    result.emplace(t.name, std::move(tensor));
  }
  return result;
}

}  // namespace solar::exec
