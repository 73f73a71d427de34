// The einsum graph's small functions, and the union of a tensor's accesses over a graph.
#include "solar/einsum/graph.h"

#include <cctype>
#include <string>

#include "footprint.h"
#include "solar/util/error.h"

namespace solar::einsum {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

// "einsum", "movement": the enum's name in lower case.
std::string_view node_kind_name(NodeKind k) {
  switch (k) {
#define SOLAR_X(e)                             \
  case NodeKind::e: {                          \
    static const std::string name = lower(#e); \
    return name;                               \
  }
    SOLAR_NODE_KINDS(SOLAR_X)
#undef SOLAR_X
  }
  SOLAR_CHECK(false, "unknown NodeKind");
}

std::string_view reduction_name(Reduction r) {
  switch (r) {
    case Reduction::None:
      return "none";
    case Reduction::Sum:
      return "sum";
    case Reduction::Prod:
      return "prod";
    case Reduction::Max:
      return "max";
    case Reduction::Min:
      return "min";
  }
  SOLAR_CHECK(false, "unknown Reduction");
}

ir::AffineForm AccessMap::flat() const {
  SOLAR_CHECK(!data_dependent, "AccessMap::flat of a data-dependent map");
  ir::AffineForm f{offset, {}};
  for (size_t d = 0; d < index.size(); ++d) {
    f.constant += strides[d] * index[d].constant;
    for (const auto& [v, c] : index[d].coeffs) {
      if ((f.coeffs[v] += strides[d] * c) == 0) f.coeffs.erase(v);
    }
  }
  return f;
}

int64_t Node::bytes_read() const {
  int64_t n = 0;
  for (const Access& a : reads) n += a.bytes;
  return n;
}

int64_t Node::bytes_written() const {
  int64_t n = 0;
  for (const Access& a : writes) n += a.bytes;
  return n;
}

const TensorInfo* Graph::find_tensor(std::string_view name) const {
  for (const TensorInfo& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

Footprint touched_footprint(const Graph& g, std::string_view tensor) {
  const TensorInfo* t = g.find_tensor(tensor);
  if (t == nullptr) throw UserError("no tensor '" + std::string(tensor) + "' in the graph");
  const bool read = t->role == ir::TensorRole::Input || t->role == ir::TensorRole::Weight;
  std::vector<const AccessMap*> maps;
  for (const Node& n : g.nodes) {
    for (const Access& a : read ? n.reads : n.writes) {
      if (a.tensor != tensor) continue;
      for (const AccessMap& m : a.maps) maps.push_back(&m);
    }
  }
  return detail::union_footprint(maps, t->numel);
}

int64_t touched_elements(const Graph& g, std::string_view tensor) {
  return touched_footprint(g, tensor).elements;
}

}  // namespace solar::einsum
