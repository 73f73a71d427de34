// solar._core bindings of the executor: run a program on numpy arrays.
//
// Inputs are not copied: a C-contiguous array whose dtype is the declared one is lent to the
// executor as it is (Tensor::borrow; the executor never writes inputs). An array of another
// dtype is converted when that is exact (exec::conform_inputs), else refused. bf16 and f8 tensors
// travel as their raw bits: uint16 arrays for bf16, uint8 arrays for f8e4m3 / f8e5m2 (a uint8
// array given for an f8 input is read as bits). The Python layer (python/solar/__init__.py) turns
// ml_dtypes arrays into such bit views and back, without copying.
//
// Outputs are not copied either: each returned array owns the executor's Tensor through a
// capsule, deleted when numpy releases the array.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "solar/exec/executor.h"
#include "solar/exec/inputs.h"
#include "solar/exec/verify.h"
#include "solar/frontend/lower.h"
#include "solar/ir/checker.h"
#include "solar/util/error.h"

namespace nb = nanobind;

namespace solar::python {
namespace {

using Array = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;
using Code = nb::dlpack::dtype_code;

// The IR dtype an array of dtype `dt` holds, given the dtype its tensor is declared with (which
// decides how raw-bit arrays are read).
std::optional<ir::DType> ir_dtype_of(nb::dlpack::dtype dt, std::optional<ir::DType> declared) {
  if (dt.lanes != 1) return std::nullopt;
  const auto code = static_cast<Code>(dt.code);
  // f8 and packed fp4 data travel as raw bytes.
  const bool f8 = declared == ir::DType::F8E4M3 || declared == ir::DType::F8E5M2 ||
                  declared == ir::DType::F4E2M1X2;
  switch (dt.bits) {
    case 128:
      if (code == Code::Complex) return ir::DType::C128;
      break;
    case 64:
      if (code == Code::Complex) return ir::DType::C64;
      if (code == Code::Float) return ir::DType::F64;
      if (code == Code::Int) return ir::DType::I64;
      break;
    case 32:
      if (code == Code::Float) return ir::DType::F32;
      if (code == Code::Int) return ir::DType::I32;
      break;
    case 16:
      if (code == Code::Float) return ir::DType::F16;
      if (code == Code::UInt && declared == ir::DType::BF16) return ir::DType::BF16;
      break;
    case 8:
      if (code == Code::Int) return ir::DType::I8;
      if (code == Code::UInt) return f8 ? *declared : ir::DType::U8;
      if (code == Code::Bool) return ir::DType::Bool;
      break;
    default:
      break;
  }
  return std::nullopt;
}

nb::dlpack::dtype numpy_dtype_of(ir::DType t) {
  switch (t) {
    case ir::DType::F64:
      return nb::dtype<double>();
    case ir::DType::F32:
      return nb::dtype<float>();
    case ir::DType::F16:
      return {static_cast<uint8_t>(Code::Float), 16, 1};
    case ir::DType::BF16:
      return nb::dtype<uint16_t>();  // raw bits
    case ir::DType::F8E4M3:
    case ir::DType::F8E5M2:
    case ir::DType::F4E2M1X2:
      return nb::dtype<uint8_t>();  // raw bits
    case ir::DType::I64:
      return nb::dtype<int64_t>();
    case ir::DType::I32:
      return nb::dtype<int32_t>();
    case ir::DType::I8:
      return nb::dtype<int8_t>();
    case ir::DType::U8:
      return nb::dtype<uint8_t>();
    case ir::DType::Bool:
      return nb::dtype<bool>();
    case ir::DType::C64:
      return {static_cast<uint8_t>(Code::Complex), 64, 1};
    case ir::DType::C128:
      return {static_cast<uint8_t>(Code::Complex), 128, 1};
  }
  internal_error(__FILE__, __LINE__, "unknown dtype");
}

// `value` (a C-contiguous CPU array) lent as a tensor, its raw-bit arrays read as `declared`
// says; the array is kept alive by `keep`. `what` names it in errors ("input 'x'").
exec::Tensor borrow_array(const nb::handle& value, std::optional<ir::DType> declared,
                          const std::string& what, std::vector<Array>& keep) {
  Array a;
  if (!nb::try_cast(value, a, /*convert=*/false)) {
    throw UserError(what + " must be a C-contiguous numpy array on the CPU");
  }
  const std::optional<ir::DType> dtype = ir_dtype_of(a.dtype(), declared);
  if (!dtype) {
    throw UserError(what +
                    " has a numpy dtype SOLAR does not read; use float64, float32, float16, "
                    "int64, int32, int8, uint8 or bool (bf16: uint16 bits or ml_dtypes."
                    "bfloat16; f8: uint8 bits or ml_dtypes float8_e4m3fn / float8_e5m2)");
  }
  std::vector<int64_t> shape(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) shape[i] = static_cast<int64_t>(a.shape(i));
  // Read only: the executor never writes inputs, and a comparison only reads.
  exec::Tensor t = exec::Tensor::borrow(*dtype, shape, const_cast<void*>(a.data()));
  keep.push_back(std::move(a));
  return t;
}

// The arrays keep their Python objects alive for as long as the borrowed tensors are used.
struct Inputs {
  std::vector<Array> arrays;
  exec::TensorMap tensors;
};

Inputs import_inputs(const ir::Program& p, const nb::dict& given) {
  Inputs result;
  for (auto [key, value] : given) {
    const std::string name = nb::cast<std::string>(key);
    const ir::TensorDecl* decl = p.find_tensor(name);
    result.tensors.emplace(name,
                           borrow_array(value, decl ? std::optional(decl->dtype) : std::nullopt,
                                        "input '" + name + "'", result.arrays));
  }
  result.tensors = exec::conform_inputs(p, std::move(result.tensors));
  return result;
}

bool points_into(const void* ptr, const exec::TensorMap& tensors) {
  const auto* q = static_cast<const std::byte*>(ptr);
  for (const auto& [name, t] : tensors) {
    const auto* lo = static_cast<const std::byte*>(t.data());
    if (lo != nullptr && q >= lo && q < lo + t.nbytes()) return true;
  }
  return false;
}

// A numpy array that owns `t`'s storage (moved into a capsule), without copying the data.
nb::object to_numpy(exec::Tensor t) {
  auto* owned = new exec::Tensor(std::move(t));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<exec::Tensor*>(p); });
  std::vector<size_t> shape(owned->shape().begin(), owned->shape().end());
  nb::ndarray<nb::numpy> array(owned->data(), shape.size(), shape.data(), owner, nullptr,
                               numpy_dtype_of(owned->dtype()));
  return array.cast();
}

nb::dict to_numpy_dict(exec::TensorMap tensors, const exec::TensorMap& inputs) {
  nb::dict result;
  for (auto& [name, t] : tensors) {
    // Never hand out a view of an input's memory as an output (it may be the caller's array).
    if (t.data() != nullptr && points_into(t.data(), inputs)) t = t.clone();
    result[name.c_str()] = to_numpy(std::move(t));
  }
  return result;
}

ir::DType dtype_named(const std::string& name) {
  const std::optional<ir::DType> t = ir::dtype_from_name(name);
  if (!t) {
    throw UserError("unknown dtype '" + name + "' (one of " + std::string(ir::dtype_all_names()) +
                    ")");
  }
  return *t;
}

nb::dict check_dict(const exec::OutputCheck& c) {
  nb::dict d;
  d["name"] = c.name;
  d["dtype"] = std::string(ir::dtype_name(c.dtype));
  d["shape"] = c.shape;
  d["rtol"] = c.tol.rtol;
  d["atol"] = c.tol.atol;
  d["max_abs_err"] = c.max_abs_err;
  d["max_rel_err"] = c.max_rel_err;
  d["passed"] = c.passed;
  if (!c.error.empty()) d["error"] = c.error;
  if (!c.err_reason.empty()) d["err_reason"] = c.err_reason;
  return d;
}

}  // namespace

void bind_exec(nb::module_& m) {
  m.def(
      "tolerance",
      [](const std::string& dtype) {
        const exec::Tolerance t = exec::tolerance(dtype_named(dtype));
        return std::pair<double, double>(t.rtol, t.atol);
      },
      nb::arg("dtype"), "(rtol, atol) of verification for outputs of an IR dtype (exec/verify.h).");

  m.def(
      "compare_output",
      [](const std::string& name, const std::string& dtype, const nb::handle& got,
         const nb::handle& expected, std::optional<double> rtol, std::optional<double> atol) {
        const ir::DType declared = dtype_named(dtype);
        std::vector<Array> keep;
        const exec::Tensor g = borrow_array(got, declared, "output '" + name + "'", keep);
        const exec::Tensor e = borrow_array(expected, declared, "expected '" + name + "'", keep);
        exec::Tolerance tol = exec::tolerance(declared);
        if (rtol) tol.rtol = *rtol;
        if (atol) tol.atol = *atol;
        exec::OutputCheck c = exec::compare_output(name, g, e, tol);
        c.dtype = declared;
        return check_dict(c);
      },
      nb::arg("name"), nb::arg("dtype"), nb::arg("got"), nb::arg("expected"),
      nb::arg("rtol") = nb::none(), nb::arg("atol") = nb::none(),
      "One output against its expected values (exec/verify.h): a dict with name, dtype, shape, "
      "rtol, atol, max_abs_err, max_rel_err, passed (and error when the shapes differ).");

  m.def(
      "run",
      [](const nb::handle& program, const nb::dict& inputs, const ir::SymbolValues& sizes,
         std::optional<uint64_t> memory_limit, bool fast_paths) {
        exec::RunOptions options;
        if (memory_limit) options.memory_limit_bytes = *memory_limit;
        options.fast_paths = fast_paths;
        options.size_overrides = sizes;
        std::optional<ir::CheckedProgram> checked;
        if (!nb::isinstance<frontend::LowerResult>(program)) {
          checked.emplace(ir::check_program(nb::cast<const ir::Program&>(program), sizes));
        } else if (const auto& lowered = nb::cast<const frontend::LowerResult&>(program);
                   sizes.empty()) {
          checked.emplace(lowered.lifted->checked());  // the lowering's check
        } else {
          checked.emplace(ir::check_program(lowered.program(), sizes));
        }
        Inputs in = import_inputs(checked->program(), inputs);
        exec::TensorMap outputs;
        {
          nb::gil_scoped_release release;
          outputs = exec::run(*checked, in.tensors, options);
        }
        return to_numpy_dict(std::move(outputs), in.tensors);
      },
      nb::arg("program"), nb::arg("inputs"), nb::arg("sizes") = ir::SymbolValues{},
      nb::arg("memory_limit") = nb::none(), nb::arg("fast_paths") = true,
      "Checks and runs a program (a solar.Program, or a LoweringResult: its program, checked "
      "once); returns its outputs by name (bf16/f8 as raw bits).");

  m.def(
      "random_inputs",
      [](const ir::Program& p, const ir::SymbolValues& sizes, uint64_t seed) {
        const ir::SymbolValues bound = ir::check_or_throw(p, sizes);
        return to_numpy_dict(exec::random_inputs(p, bound, seed), {});
      },
      nb::arg("program"), nb::arg("sizes") = ir::SymbolValues{}, nb::arg("seed") = 0,
      "The seeded random inputs of `solar ir run --random-inputs` (bf16/f8 as raw bits).");

  m.def(
      "_input_addresses",
      [](const ir::Program& p, const nb::dict& inputs) {
        Inputs in = import_inputs(p, inputs);
        std::map<std::string, uintptr_t> addresses;
        for (const auto& [name, t] : in.tensors) {
          addresses[name] = reinterpret_cast<uintptr_t>(t.data());
        }
        return addresses;
      },
      nb::arg("program"), nb::arg("inputs"),
      "For tests: the address of the data each input is run from, after the same import as "
      "run() (equal to the array's own address when it is not copied).");
}

}  // namespace solar::python
