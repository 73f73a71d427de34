// The reference executor: input validation, memory accounting, and the statement walk. Kernels
// run in kernel.cpp / interpreter.cpp / gemm.cpp, composition statements in compose.cpp.
#include "solar/exec/executor.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "compose.h"
#include "elements.h"
#include "env.h"
#include "kernel.h"
#include "solar/ir/checker.h"
#include "solar/util/checked.h"
#include "solar/util/error.h"
#include "solar/util/text.h"

namespace solar::exec {
namespace {

std::vector<int64_t> shape_of(const ir::TensorDecl& t, const ir::SymbolValues& sizes,
                              const std::string& file) {
  std::vector<int64_t> shape;
  for (const ir::IntExprP& d : t.shape) shape.push_back(ir::eval_int(*d, sizes, file));
  return shape;
}

// "1.5 GiB", "12.0 MiB", "512 B"
std::string format_bytes(uint64_t b) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (b < 1024) return std::to_string(b) + " B";
  double v = static_cast<double>(b) / 1024.0;
  size_t u = 0;
  while (v >= 1024.0 && u + 1 < std::size(kUnits)) {
    v /= 1024.0;
    ++u;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", v, kUnits[u]);
  return text;
}

// Bytes of the program's tensors by role, and of the largest per-statement scratch buffer.
class Footprint {
 public:
  Footprint(const ir::Program& p, const ir::SymbolValues& sizes) : p_(p), sizes_(sizes) {
    for (const ir::TensorDecl& t : p.tensors) {
      const uint64_t b = bytes(t, ir::dtype_size(t.dtype));
      switch (t.role) {
        case ir::TensorRole::Input:
        case ir::TensorRole::Weight:
        case ir::TensorRole::Random:
          inputs_ = saturating_add(inputs_, b);
          break;
        case ir::TensorRole::Output:
          outputs_ = saturating_add(outputs_, b);
          break;
        case ir::TensorRole::Intermediate:
          intermediates_ = saturating_add(intermediates_, b);
          break;
      }
    }
    scan(p.body);
  }

  uint64_t total() const {
    return saturating_add(saturating_add(inputs_, outputs_),
                          saturating_add(intermediates_, scratch_));
  }

  std::string breakdown() const {
    return "inputs and weights " + format_bytes(inputs_) + ", outputs " + format_bytes(outputs_) +
           ", intermediates " + format_bytes(intermediates_) + ", scratch " +
           format_bytes(scratch_);
  }

 private:
  uint64_t bytes(const ir::TensorDecl& t, int element_size) const {
    uint64_t n = static_cast<uint64_t>(element_size);
    for (int64_t d : shape_of(t, sizes_, p_.file)) n = saturating_mul(n, static_cast<uint64_t>(d));
    return n;
  }

  uint64_t bytes(const std::string& tensor, bool as_double) const {
    const ir::TensorDecl* t = p_.find_tensor(tensor);
    SOLAR_CHECK(t != nullptr, "undeclared tensor in a checked program");
    return bytes(*t, as_double ? 8 : ir::dtype_size(t->dtype));
  }

  static bool reads(const ir::Expr& e, const std::string& name) {
    if (e.kind == ir::ExprKind::Read && e.tensor == name) return true;
    return std::any_of(e.args.begin(), e.args.end(),
                       [&](const ir::ExprP& a) { return reads(*a, name); });
  }

  // Mirrors run_kernel, run_reduction and run_compose (for a kernel that reads its output, the
  // snapshot run_kernel takes only where a read may touch an element it writes: an upper bound).
  void scan(const std::vector<ir::StmtP>& body) {
    for (const ir::StmtP& s : body) {
      uint64_t need = 0;
      if (const auto* k = std::get_if<ir::Kernel>(&s->node)) {
        if (reads(*k->rhs, k->out)) need = bytes(k->out, false);
        const ir::TensorDecl* out = p_.find_tensor(k->out);
        if (k->op != ir::AssignOp::Assign && out && out->dtype != ir::DType::F64) {
          need = saturating_add(need, bytes(k->out, true));
        }
      } else if (const auto* c = std::get_if<ir::Compose>(&s->node)) {
        const auto n = static_cast<uint64_t>(std::count(c->srcs.begin(), c->srcs.end(), c->dst));
        need = saturating_mul(n, bytes(c->dst, false));
      } else if (const auto* o = std::get_if<ir::OpBlock>(&s->node)) {
        scan(o->body);
      } else {
        scan(std::get<ir::Repeat>(s->node).body);
      }
      scratch_ = std::max(scratch_, need);
    }
  }

  const ir::Program& p_;
  const ir::SymbolValues& sizes_;
  uint64_t inputs_ = 0, outputs_ = 0, intermediates_ = 0, scratch_ = 0;
};

void check_memory(const ir::Program& p, const ir::SymbolValues& sizes, uint64_t limit) {
  const Footprint f(p, sizes);
  if (f.total() <= limit) return;
  std::string hint = "run at smaller sizes";
  for (const ir::SizeDecl& s : p.sizes) {
    if (s.is_free()) {
      hint += " (--size " + s.name + "=...)";
      break;
    }
  }
  throw UserError("program needs " + format_bytes(f.total()) + " for its tensors (" +
                  f.breakdown() + "), more than the memory limit of " + format_bytes(limit) +
                  "; set a larger limit with --memory-limit or " + hint);
}

bool supplied(const ir::TensorDecl& t) {
  return t.role == ir::TensorRole::Input || t.role == ir::TensorRole::Weight ||
         t.role == ir::TensorRole::Random;
}

void check_inputs(const ir::Program& p, const ir::SymbolValues& sizes, const TensorMap& inputs) {
  for (const ir::TensorDecl& t : p.tensors) {
    if (!supplied(t)) continue;
    const std::string what = std::string(ir::tensor_role_keyword(t.role)) + " '" + t.name + "'";
    const std::vector<int64_t> shape = shape_of(t, sizes, p.file);
    const auto it = inputs.find(t.name);
    if (it == inputs.end()) {
      throw UserError("missing " + what + " (" + std::string(ir::dtype_name(t.dtype)) +
                      shape_text(shape) + ")");
    }
    if (it->second.dtype() != t.dtype) {
      throw UserError(what + " has dtype " + std::string(ir::dtype_name(it->second.dtype())) +
                      ", expected " + std::string(ir::dtype_name(t.dtype)));
    }
    if (it->second.shape() != shape) {
      throw UserError(what + " has shape " + shape_text(it->second.shape()) + ", expected " +
                      shape_text(shape));
    }
  }
  for (const auto& [name, tensor] : inputs) {
    const ir::TensorDecl* t = p.find_tensor(name);
    if (t == nullptr) {
      throw UserError("unexpected input '" + name +
                      "': the program declares no tensor of that name");
    }
    if (!supplied(*t)) {
      throw UserError("unexpected input '" + name + "': it is declared as " +
                      std::string(ir::tensor_role_keyword(t->role)) +
                      ", and only inputs and weights are supplied");
    }
  }
}

void run_body(const std::vector<ir::StmtP>& body, Env& env) {
  for (const ir::StmtP& s : body) {
    switch (s->kind()) {
      case ir::StmtKind::Kernel:
        run_kernel(*s, env);
        break;
      case ir::StmtKind::Compose:
        run_compose(*s, env);
        break;
      case ir::StmtKind::Repeat: {
        const auto& r = std::get<ir::Repeat>(s->node);
        const int64_t lo = ir::eval_int(*r.lo, env.symbols, env.program.file);
        const int64_t hi = ir::eval_int(*r.hi, env.symbols, env.program.file);
        const bool one_kernel = r.body.size() == 1 && r.body[0]->kind() == ir::StmtKind::Kernel;
        int64_t t = lo;
        if (one_kernel && run_repeated_kernel(*r.body[0], r.var, lo, hi, env)) t = hi;
        for (; t < hi; ++t) {
          env.symbols[r.var] = t;
          run_body(r.body, env);
        }
        env.symbols.erase(r.var);
        break;
      }
      case ir::StmtKind::Op:
        run_body(std::get<ir::OpBlock>(s->node).body, env);
        break;
    }
  }
}

}  // namespace

Tensor& Env::tensor(const std::string& name) {
  const auto it = tensors.find(name);
  SOLAR_CHECK(it != tensors.end(), "tensor '" + name + "' is not declared");
  return it->second;
}

uint64_t required_bytes(const ir::Program& p, const ir::SymbolValues& sizes) {
  return Footprint(p, sizes).total();
}

TensorMap run(const ir::Program& p, const TensorMap& inputs, const RunOptions& options) {
  return run(ir::check_program(p, options.size_overrides), inputs, options);
}

TensorMap run(const ir::CheckedProgram& checked, const TensorMap& inputs,
              const RunOptions& options) {
  const ir::Program& p = checked.program();
  const ir::SymbolValues& sizes = checked.sizes();
  check_memory(p, sizes, options.memory_limit_bytes);
  check_inputs(p, sizes, inputs);
  Env env{p, {}, sizes, options.fast_paths};
  for (const ir::TensorDecl& t : p.tensors) {
    // Inputs and weights are shared, not copied: the checker guarantees no statement writes them.
    env.tensors.emplace(
        t.name, supplied(t) ? inputs.at(t.name) : Tensor(t.dtype, shape_of(t, sizes, p.file)));
  }
  run_body(p.body, env);
  TensorMap outputs;
  for (const ir::TensorDecl& t : p.tensors) {
    if (t.role == ir::TensorRole::Output) outputs.emplace(t.name, std::move(env.tensor(t.name)));
  }
  return outputs;
}

Tensor convert_to(const Tensor& t, ir::DType dtype) {
  if (t.dtype() == dtype) return t.clone();
  Tensor out(dtype, t.shape());
  const Loader load = loader_for(t.dtype());
  const Storer store = storer_for(dtype);
  const auto* src = static_cast<const std::byte*>(t.data());
  auto* dst = static_cast<std::byte*>(out.data());
  for (int64_t i = 0; i < t.numel(); ++i) store(dst, i, load(src, i));
  return out;
}

Tensor reinterpret_bits(const Tensor& t, ir::DType dtype) {
  if (ir::dtype_size(dtype) != ir::dtype_size(t.dtype())) {
    throw UserError("cannot read the bits of a " + std::string(ir::dtype_name(t.dtype())) +
                    " array as " + std::string(ir::dtype_name(dtype)) +
                    ": their elements have different sizes");
  }
  Tensor out(dtype, t.shape());
  if (t.nbytes() > 0) std::memcpy(out.data(), t.data(), t.nbytes());
  return out;
}

}  // namespace solar::exec
