// Verification: outputs against expected values (include/solar/exec/verify.h).
#include "solar/exec/verify.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "elements.h"
#include "solar/util/error.h"
#include "solar/util/text.h"

namespace solar::exec {
namespace {

// %.3g, the way the comparison is printed ("1.19e-07", "0", "nan").
std::string short_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

bool is_float(ir::DType t) {
  switch (t) {
    case ir::DType::F64:
    case ir::DType::F32:
    case ir::DType::F16:
    case ir::DType::BF16:
    case ir::DType::F8E4M3:
    case ir::DType::F8E5M2:
      return true;
    default:
      return false;
  }
}

// A tensor's elements as doubles, kBlock at a time (load_strided: the values of Tensor::get,
// converted in a tight loop instead of one call per element).
constexpr int64_t kBlock = 4096;

class Blocks {
 public:
  explicit Blocks(const Tensor& t) : t_(t), values_(static_cast<size_t>(kBlock)) {}
  // Elements [i0, min(i0 + kBlock, n)).
  const double* at(int64_t i0, int64_t n) {
    load_strided(static_cast<const std::byte*>(t_.data()), t_.dtype(), i0, 1,
                 std::min(kBlock, n - i0), values_.data());
    return values_.data();
  }

 private:
  const Tensor& t_;
  std::vector<double> values_;
};

}  // namespace

Tolerance tolerance(ir::DType dtype) {
  switch (ir::complex_part(dtype)) {  // a complex value: its parts'
    case ir::DType::F64:
      return {1e-9, 1e-12};
    case ir::DType::F32:
      return {1e-4, 1e-5};
    case ir::DType::F16:
      return {1e-2, 1e-3};
    case ir::DType::BF16:
      return {2e-2, 1e-2};
    case ir::DType::F8E4M3:
      return {1.25e-1, 1e-1};
    case ir::DType::F8E5M2:
      return {2.5e-1, 1e-1};
    default:
      return {0.0, 0.0};  // integers and bool: exact
  }
}

OutputCheck compare_output(const std::string& name, const Tensor& got, const Tensor& expected,
                           std::optional<Tolerance> tol) {
  if (ir::dtype_is_complex(got.dtype()) && expected.dtype() == got.dtype()) {
    // Compared as (real, imaginary) pairs, each part as a real tensor of the part dtype.
    const auto pairs = [](const Tensor& t) {
      std::vector<int64_t> shape = t.shape();
      shape.push_back(2);
      return Tensor::borrow(ir::complex_part(t.dtype()), shape, const_cast<void*>(t.data()));
    };
    OutputCheck c =
        compare_output(name, pairs(got), pairs(expected), tol ? *tol : tolerance(got.dtype()));
    c.dtype = got.dtype();
    c.shape = expected.shape();
    return c;
  }
  OutputCheck c;
  c.name = name;
  c.dtype = got.dtype();
  c.shape = expected.shape();
  c.tol = tol ? *tol : tolerance(got.dtype());
  if (got.shape() != expected.shape()) {
    c.error = "shape " + shape_text(got.shape()) + " != " + shape_text(expected.shape());
    return c;
  }
  const bool bits = expected.dtype() == ir::DType::U8 &&
                    (got.dtype() == ir::DType::F8E4M3 || got.dtype() == ir::DType::F8E5M2);
  const Tensor want = bits ? reinterpret_bits(expected, got.dtype()) : expected;
  const int64_t n = got.numel();
  double scale = 1.0;
  Blocks expected_blocks(want);
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const double* es = expected_blocks.at(i0, n);
    for (int64_t l = 0; l < std::min(kBlock, n - i0); ++l) {
      if (std::isfinite(es[l])) scale = std::max(scale, std::abs(es[l]));
    }
  }
  // The relative error of an element divides by |expected|, but by no less than the magnitude
  // below which the absolute allowance governs, (atol / rtol) * scale (exact dtypes: scale):
  // near 0, the error relative to the absolute allowance's own reference. So the figure stays
  // comparable with rtol: a failing element's is above rtol, a passing output's at most 2 rtol
  // (an expected 0 against 1e-8 in f32: 1e-8 / (0.1 * 1) = 1e-7, not 1e-8 / 2.2e-308).
  const double floor = c.tol.rtol > 0 ? c.tol.atol / c.tol.rtol * scale : scale;
  double max_abs = 0.0, max_rel = 0.0;
  bool passed = true;
  Blocks got_blocks(got);
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const double* gs = got_blocks.at(i0, n);
    const double* es = expected_blocks.at(i0, n);
    for (int64_t l = 0; l < std::min(kBlock, n - i0); ++l) {
      const double g = gs[l], e = es[l];
      if (g == e || (std::isnan(g) && std::isnan(e))) continue;  // equal infinities, NaNs agree
      const double diff = std::abs(g - e);
      const double reference = std::max(std::abs(e), floor);
      const double rel = reference > 0 ? diff / reference : std::numeric_limits<double>::infinity();
      if (std::isnan(diff)) {
        max_abs = max_rel = std::numeric_limits<double>::quiet_NaN();
      } else if (!std::isnan(max_abs)) {
        max_abs = std::max(max_abs, diff);
        max_rel = std::max(max_rel, rel);
      }
      // An infinity agrees only with the same infinity (rtol * |inf| would allow anything).
      const bool finite = std::isfinite(g) && std::isfinite(e);
      if (!finite || !(diff <= c.tol.atol * scale + c.tol.rtol * std::abs(e))) passed = false;
    }
  }
  if (std::isnan(max_abs)) {
    c.err_reason = "errors undefined: a NaN where the other side has a number";
  } else if (std::isinf(max_abs)) {
    c.err_reason =
        "errors undefined: an infinity where the other side is finite or the opposite "
        "infinity";
  } else {
    c.max_abs_err = max_abs;
    if (std::isfinite(max_rel)) {
      c.max_rel_err = max_rel;
    } else {
      c.err_reason = "relative error undefined: the outputs differ where the expected value is 0";
    }
  }
  c.passed = passed;
  return c;
}

std::vector<OutputCheck> compare_outputs(const ir::Program& p, const TensorMap& outputs,
                                         const TensorMap& expected) {
  std::vector<OutputCheck> checks;
  for (const ir::TensorDecl& t : p.tensors) {
    if (t.role != ir::TensorRole::Output) continue;
    const auto got = outputs.find(t.name);
    const auto want = expected.find(t.name);
    if (got == outputs.end() || want == expected.end()) {
      OutputCheck c;
      c.name = t.name;
      c.dtype = t.dtype;
      c.tol = tolerance(t.dtype);
      if (got != outputs.end()) c.shape = got->second.shape();
      c.error = got == outputs.end() ? "not computed by the program" : "no expected value given";
      checks.push_back(std::move(c));
      continue;
    }
    checks.push_back(compare_output(t.name, got->second, want->second));
  }
  return checks;
}

bool all_passed(const std::vector<OutputCheck>& checks) {
  return std::all_of(checks.begin(), checks.end(), [](const OutputCheck& c) { return c.passed; });
}

std::string render_checks(const std::vector<OutputCheck>& checks) {
  std::string s;
  for (const OutputCheck& c : checks) {
    s += c.name + " " + std::string(ir::dtype_name(c.dtype)) + shape_text(c.shape) + ": ";
    if (!c.error.empty()) {
      s += c.error + ": FAILED\n";
      continue;
    }
    const auto number = [](const std::optional<double>& v) {
      return v ? short_number(*v) : std::string("undefined");
    };
    s += "max abs err " + number(c.max_abs_err) + ", max rel err " + number(c.max_rel_err);
    if (!c.err_reason.empty()) s += " (" + c.err_reason + ")";
    if (is_float(ir::complex_part(c.dtype))) {
      s += " (rtol " + short_number(c.tol.rtol) + ", atol " + short_number(c.tol.atol) + ")";
    } else {
      s += " (exact)";
    }
    s += c.passed ? ": ok\n" : ": FAILED\n";
  }
  return s;
}

}  // namespace solar::exec
