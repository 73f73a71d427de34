// Verification: a program's outputs against expected values (a framework's run of the same
// program), with one tolerance table and one comparison. `solar ir verify`, the Python pipeline
// (solar.torch), per-op verification and the LLM agent all call these, so a user of the C++
// tool alone checks an IR file against golden data exactly as `solar analyze` does
// (docs/cli.md, "solar ir verify").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "solar/exec/executor.h"
#include "solar/exec/tensor.h"
#include "solar/ir/ast.h"
#include "solar/ir/dtype.h"

namespace solar::exec {

// An element passes when |got - expected| <= atol * scale + rtol * |expected|, scale being the
// largest finite |expected| of the tensor (at least 1), or when both are equal (equal infinities)
// or both NaN. An infinity agrees with nothing else (not with a finite value, however large).
struct Tolerance {
  double rtol = 0.0;
  double atol = 0.0;
};

// The table, by the output's dtype: f64 (1e-9, 1e-12), f32 (1e-4, 1e-5), f16 (1e-2, 1e-3),
// bf16 (2e-2, 1e-2), f8e4m3 (0.125, 0.1), f8e5m2 (0.25, 0.1); integers and bool exact (0, 0).
Tolerance tolerance(ir::DType dtype);

// One output compared. `max_abs_err` and `max_rel_err` are empty when the shapes differ (then
// `error` says how); elements that agree exactly count 0 in both. An element passes when
// |got - expected| <= atol * scale + rtol * |expected|, scale = max(1, max |expected|); its
// relative error divides by max(|expected|, (atol / rtol) * scale) (rtol 0, exact dtypes:
// scale), so near an expected 0, where the absolute allowance governs, it is relative to that
// allowance's reference: a failing element's is above rtol, a passing output's at most 2 rtol.
// An error that is no finite number is empty too, with `err_reason` saying why (JSON has no NaN
// or infinity): a NaN or an infinity against a different value leaves both undefined; outputs
// that differ where the expected value is 0 under a tolerance of atol 0 (a custom one) leave the
// relative error undefined.
struct OutputCheck {
  std::string name;
  ir::DType dtype = ir::DType::F32;  // the program's dtype of the output
  std::vector<int64_t> shape;        // the expected shape
  Tolerance tol;
  std::optional<double> max_abs_err;
  std::optional<double> max_rel_err;
  bool passed = false;
  std::string error;       // "" unless the output could not be compared
  std::string err_reason;  // why an error above is empty though the shapes agree, or ""
};

// `got` (the program's output) against `expected`, read as values of `got`'s dtype: an expected
// tensor of raw bits (u8 for f8, as .npz files carry them) is reinterpreted, any other dtype is
// compared by value. `tol` defaults to tolerance(got.dtype()).
OutputCheck compare_output(const std::string& name, const Tensor& got, const Tensor& expected,
                           std::optional<Tolerance> tol = std::nullopt);

// Every output of `p` in `outputs` against `expected`, in declaration order. An output missing
// from either side fails with an error saying so; extra tensors in `expected` are ignored.
std::vector<OutputCheck> compare_outputs(const ir::Program& p, const TensorMap& outputs,
                                         const TensorMap& expected);

bool all_passed(const std::vector<OutputCheck>& checks);

// One line per output ("y f32[4, 6]: max abs err 1.19e-07, max rel err 2.4e-07 (rtol 0.0001,
// atol 1e-05): ok"), deterministic.
std::string render_checks(const std::vector<OutputCheck>& checks);

}  // namespace solar::exec
