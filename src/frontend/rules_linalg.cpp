// Lowering rules for linear algebra: matrix products, linear layers and convolutions (forward
// and transposed). See docs/lowering.md.
#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "rules.h"
#include "solar/util/error.h"

namespace solar::frontend {

namespace {

// ---- contractions --------------------------------------------------------------------------

// y[b.., i, j] += a[b.., i, k] * B over the output's box and k in 0..k; `b_read` reads the
// second operand (e.g. "w[k, i1]" for mm).
void contract(NodeLowering& n, const TensorInfo& y, const TensorInfo& a, const std::string& b_read,
              int64_t k) {
  const int r = y.rank();
  std::string a_index;
  for (int d = 0; d < r - 1; ++d) a_index += kI + std::to_string(d) + ", ";
  n.kernel("mm", box_loops(y.shape, kI) + ", k in 0.." + std::to_string(k), at_box(y),
           "+=", a.name + "[" + a_index + "k] * " + b_read);
}

// mm and bmm: `y[b.., i, j] += self[b.., i, k] * mat2[b.., k, j]`.
void mm_rule(NodeLowering& n) {
  const TensorInfo a = n.tensor("self");
  const TensorInfo b = n.tensor("mat2");
  std::string b_index;
  for (int d = 0; d < n.out().rank() - 2; ++d) b_index += kI + std::to_string(d) + ", ";
  b_index += "k, " + kI + std::to_string(n.out().rank() - 1);
  contract(n, n.out(), a, b.name + "[" + b_index + "]", a.shape.back());
}

// addmm / baddbmm: out = beta * self + alpha * (mat1 @ mat2).
void addmm_rule(NodeLowering& n, const std::string& a_key, const std::string& b_key) {
  const TensorInfo& y = n.out();
  const TensorInfo a = n.tensor(a_key);
  const TensorInfo b = n.tensor(b_key);
  const TensorInfo acc = n.temp("acc", y.dtype, y.shape);
  std::string b_index;
  for (int d = 0; d < y.rank() - 2; ++d) b_index += kI + std::to_string(d) + ", ";
  b_index += "k, " + kI + std::to_string(y.rank() - 1);
  contract(n, acc, a, b.name + "[" + b_index + "]", a.shape.back());
  const double beta = n.number_or("beta", 1.0);
  const std::string prod = scaled(at_box(acc), n.number_or("alpha", 1.0));
  pointwise(n, beta == 0.0 ? prod : scaled(read(n, "self", y), beta) + " + " + prod);
}

// linear: `y[.., j] += input[.., k] * weight[j, k]`, then the bias.
void linear_rule(NodeLowering& n) {
  const TensorInfo& y = n.out();
  const TensorInfo x = n.tensor("input");
  const TensorInfo w = n.tensor("weight");
  const std::string w_read = w.name + "[" + kI + std::to_string(y.rank() - 1) + ", k]";
  if (!n.has("bias")) return contract(n, y, x, w_read, x.shape.back());
  const TensorInfo acc = n.temp("acc", y.dtype, y.shape);
  contract(n, acc, x, w_read, x.shape.back());
  pointwise(n, at_box(acc) + " + " + read(n, "bias", y));
}

// A forward convolution into y (no bias): zero padding, then one strided, dilated,
// grouped kernel.
void conv_forward(NodeLowering& n, const TensorInfo& y, const TensorInfo& x, const TensorInfo& w,
                  const std::vector<int64_t>& s, const std::vector<int64_t>& p,
                  const std::vector<int64_t>& dl, int64_t groups) {
  const size_t sp = s.size();
  const int64_t icg = w.shape[1];
  const int64_t ocg = w.shape[0] / groups;
  std::vector<int64_t> need(sp);
  for (size_t d = 0; d < sp; ++d) {
    need[d] = (y.shape[2 + d] - 1) * s[d] + dl[d] * (w.shape[2 + d] - 1) + 1;
  }
  const TensorInfo xp = pad_spatial(n, x, p, need, "0.0");
  std::string loops = "b in 0.." + std::to_string(y.shape[0]) + ", g in 0.." +
                      std::to_string(groups) + ", oc in 0.." + std::to_string(ocg);
  std::string o_index;
  std::string x_index;
  std::string w_index;
  for (size_t d = 0; d < sp; ++d) {
    loops += ", o" + std::to_string(d) + " in 0.." + std::to_string(y.shape[2 + d]);
    o_index += ", o" + std::to_string(d);
  }
  loops += ", ic in 0.." + std::to_string(icg);
  for (size_t d = 0; d < sp; ++d) {
    const std::string k = "k" + std::to_string(d);
    loops += ", " + k + " in 0.." + std::to_string(w.shape[2 + d]);
    x_index += ", " + std::to_string(s[d]) + "*o" + std::to_string(d) + " + " +
               std::to_string(dl[d]) + "*" + k;
    w_index += ", " + k;
  }
  const std::string oc = std::to_string(ocg) + "*g + oc";
  n.kernel("conv", loops, y.name + "[b, " + oc + o_index + "]", "+=",
           xp.name + "[b, " + std::to_string(icg) + "*g + ic" + x_index + "] * " + w.name + "[" +
               oc + ", ic" + w_index + "]");
}

}  // namespace

// Transposed convolution: every input element scatters into the output window it reaches,
// `o = s*i - p + d*k`, computed into an uncropped buffer and sliced by the padding.
void conv_transposed(NodeLowering& n, const TensorInfo& y, const TensorInfo& x, const TensorInfo& w,
                     const std::vector<int64_t>& s, const std::vector<int64_t>& p,
                     const std::vector<int64_t>& dl, int64_t groups) {
  const size_t sp = s.size();
  const int64_t icg = w.shape[0] / groups;
  const int64_t ocg = w.shape[1];
  std::vector<int64_t> full = y.shape;
  std::string slices = ":, :";
  for (size_t d = 0; d < sp; ++d) {
    const int64_t reach = (x.shape[2 + d] - 1) * s[d] + dl[d] * (w.shape[2 + d] - 1) + 1;
    full[2 + d] = std::max(reach, p[d] + y.shape[2 + d]);
    slices += ", " + std::to_string(p[d]) + ":" + std::to_string(p[d] + y.shape[2 + d]);
  }
  const TensorInfo acc = n.temp("full", y.dtype, full);
  std::string loops = "b in 0.." + std::to_string(y.shape[0]) + ", g in 0.." +
                      std::to_string(groups) + ", oc in 0.." + std::to_string(ocg);
  std::string o_index;
  std::string x_index;
  std::string w_index;
  for (size_t d = 0; d < sp; ++d) {
    const std::string i = "x" + std::to_string(d);
    const std::string k = "k" + std::to_string(d);
    loops += ", " + i + " in 0.." + std::to_string(x.shape[2 + d]) + ", " + k + " in 0.." +
             std::to_string(w.shape[2 + d]);
    o_index += ", " + std::to_string(s[d]) + "*" + i + " + " + std::to_string(dl[d]) + "*" + k;
    x_index += ", " + i;
    w_index += ", " + k;
  }
  loops += ", ic in 0.." + std::to_string(icg);
  const std::string ic = std::to_string(icg) + "*g + ic";
  n.kernel(
      "convt", loops, acc.name + "[b, " + std::to_string(ocg) + "*g + oc" + o_index + "]",
      "+=", x.name + "[b, " + ic + x_index + "] * " + w.name + "[" + ic + ", oc" + w_index + "]");
  n.stmt(y.name + " = " + acc.name + "[" + slices + "]");
}

namespace {

// convolution: forward or transposed, 1-d to 3-d, then the bias in a second kernel.
void convolution_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("input");
  const TensorInfo w = n.tensor("weight");
  const TensorInfo& y = n.out();
  const size_t sp = static_cast<size_t>(x.rank()) - 2;
  const std::vector<int64_t> s = per_dim(n, "stride", sp, {1});
  const std::vector<int64_t> p = per_dim(n, "padding", sp, {0});
  const std::vector<int64_t> dl = per_dim(n, "dilation", sp, {1});
  const int64_t groups = n.integer_or("groups", 1);
  const bool transposed = n.flag_or("transposed", false);
  const TensorInfo acc = n.has("bias") ? n.temp("acc", y.dtype, y.shape) : y;
  if (transposed) {
    conv_transposed(n, acc, x, w, s, p, dl, groups);
  } else {
    conv_forward(n, acc, x, w, s, p, dl, groups);
  }
  if (n.has("bias")) {
    pointwise(n, at_box(acc) + " + " + n.tensor("bias").name + "[" + kI + "1]");
  }
}

// _scaled_mm(self [M, K], mat2 [K, N], scale_a, scale_b, bias, scale_result, out_dtype): a
// product of fp8 operands accumulated in f32, `acc[i, j] += self[i, k] * mat2[k, j]`, then
// `y = acc * scale_a * scale_b (+ bias)` in the output's dtype. Tensor-wise scales (one value
// each) or row-wise ones (scale_a [M, 1], scale_b [1, N]). NVFP4 (packed fp4 operands with an
// e4m3 scale per 16 values): scaled_mm_nvfp4. Other block-scaled operands (MXFP4's e8m0
// scales, fp8 with scales per 128-blocks) and a scale_result (an fp8 output) are refused in
// one line.
std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t d = 0; d < shape.size(); ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
  return s + "]";
}

// The 16 e2m1 values by 4-bit code (sign bit 3, then magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6 by
// the low 3 bits m: m / 2 below 4, m - 2 below 6, else 2m - 8), in a table of 16 f32.
TensorInfo e2m1_table(NodeLowering& n) {
  const TensorInfo t = n.temp("e2m1", ir::DType::F32, {16});
  n.kernel("e2m1", "c in 0..16", t.name + "[c]", "=",
           "select(c < 8, 1.0, -1.0) * select(c % 8 < 4, c % 8 * 0.5, select(c % 8 < 6, c % 8 - "
           "2, c % 8 * 2 - 8))");
  return t;
}

// The values of a packed fp4 operand `p` ([rows, K / 2] pairs along K, `along_k` = 1, or
// [K / 2, cols] pairs along K, `along_k` = 0), unpacked to [rows, K] or [K, cols] f32 (the low
// nibble is the even element) and multiplied by its block scale: `scale` is NVFP4's swizzled
// layout, one e4m3 value per 16 along K for `rows` rows padded to 128 and K / 16 blocks padded
// to 4, flattened as 512-element tiles of 128 x 4, row r and block c at (r / 128 * ceil(K / 64)
// + c / 4) * 512 + r % 32 * 16 + r % 128 / 32 * 4 + c % 4 (cuBLAS's block-scaling layout).
TensorInfo nvfp4_operand(NodeLowering& n, const TensorInfo& p, int along_k, const TensorInfo& table,
                         const TensorInfo& scale, int64_t k) {
  const int64_t outer = p.shape[along_k == 1 ? 0 : 1];  // rows (of self) or columns (of mat2)
  const int64_t half = k / 2;
  const TensorInfo bytes = n.temp("bytes", ir::DType::U8, p.shape);
  n.stmt(bytes.name + " = " + p.name);
  const TensorInfo lo = n.temp("lo", ir::DType::I64, p.shape);
  const TensorInfo hi = n.temp("hi", ir::DType::I64, p.shape);
  n.kernel("lo", box_loops(p.shape, kI), at_box(lo), "=", "bitand(" + at_box(bytes) + ", 15.0)");
  n.kernel("hi", box_loops(p.shape, kI), at_box(hi), "=", "shr(" + at_box(bytes) + ", 4.0)");
  // Each nibble as its own element along K: [outer, K/2, 1] (or [K/2, 1, outer]), joined.
  const std::vector<int64_t> one =
      along_k == 1 ? std::vector<int64_t>{outer, half, 1} : std::vector<int64_t>{half, 1, outer};
  const std::vector<int64_t> two =
      along_k == 1 ? std::vector<int64_t>{outer, half, 2} : std::vector<int64_t>{half, 2, outer};
  const std::vector<int64_t> flat =
      along_k == 1 ? std::vector<int64_t>{outer, k} : std::vector<int64_t>{k, outer};
  const TensorInfo lo1 = n.temp("lo1", ir::DType::I64, one);
  const TensorInfo hi1 = n.temp("hi1", ir::DType::I64, one);
  const TensorInfo pairs = n.temp("pairs", ir::DType::I64, two);
  const TensorInfo codes = n.temp("codes", ir::DType::I64, flat);
  n.stmt(lo1.name + " = reshape(" + lo.name + ")");
  n.stmt(hi1.name + " = reshape(" + hi.name + ")");
  n.stmt(pairs.name + " = concat(" + lo1.name + ", " + hi1.name +
         ", dim=" + std::to_string(along_k == 1 ? 2 : 1) + ")");
  n.stmt(codes.name + " = reshape(" + pairs.name + ")");
  const TensorInfo values = n.temp("values", ir::DType::F32, flat);
  n.stmt(values.name + " = take(" + table.name + ", " + codes.name + ", dim=0)");
  const TensorInfo scales = n.temp("scales", scale.dtype, {scale.numel()});
  n.stmt(scales.name + " = reshape(" + scale.name + ")");
  // Loops that split the row r = 128 r2 + 32 r1 + r0 and K's index k = 64 kt + 16 kb + e, so
  // that the scale's index is affine in them: a kernel for each piece of the rows (whole tiles of
  // 128, then whole 32-row quarters of the last tile, then its last rows) and of K (whole groups
  // of 4 blocks, then the last blocks).
  const int64_t blocks = k / 16;
  const TensorInfo out = n.temp("dequant", ir::DType::F32, flat);
  const auto range = [](const std::string& v, int64_t first, int64_t end) {
    return v + " in " + std::to_string(first) + ".." + std::to_string(end);
  };
  std::vector<std::string> row_pieces;
  const int64_t q = outer / 128, quarters = outer % 128 / 32, last = outer % 32;
  if (q > 0) row_pieces.push_back(range("r2", 0, q) + ", r1 in 0..4, r0 in 0..32");
  if (quarters > 0) {
    row_pieces.push_back(range("r2", q, q + 1) + ", " + range("r1", 0, quarters) + ", r0 in 0..32");
  }
  if (last > 0) {
    row_pieces.push_back(range("r2", q, q + 1) + ", " + range("r1", quarters, quarters + 1) + ", " +
                         range("r0", 0, last));
  }
  std::vector<std::string> k_pieces;
  if (blocks / 4 > 0) k_pieces.push_back(range("kt", 0, blocks / 4) + ", kb in 0..4");
  if (blocks % 4 > 0) {
    k_pieces.push_back(range("kt", blocks / 4, blocks / 4 + 1) + ", " + range("kb", 0, blocks % 4));
  }
  const std::string row = "128*r2 + 32*r1 + r0";
  const std::string col = "64*kt + 16*kb + e";
  const std::string at = along_k == 1 ? row + ", " + col : col + ", " + row;
  const std::string scale_at =
      "512*(" + std::to_string((blocks + 3) / 4) + "*r2 + kt) + 16*r0 + 4*r1 + kb";
  for (const std::string& rows : row_pieces) {
    for (const std::string& ks : k_pieces) {
      n.kernel("dequant", rows + ", " + ks + ", e in 0..16", out.name + "[" + at + "]", "=",
               values.name + "[" + at + "] * " + scales.name + "[" + scale_at + "]");
    }
  }
  return out;
}

// The block scales of an NVFP4 product: one e4m3 value per 16 along K of each operand, in
// cuBLAS's swizzled layout, and optional tensor-wise global scales (f32, one value each) that
// multiply the product (_scaled_mm_v2's two-level recipe).
struct Nvfp4Scales {
  TensorInfo a, b;
  std::vector<TensorInfo> globals;
};

// NVFP4: self [M, K/2] and mat2 [K/2, N] packed fp4 pairs along K, e4m3 scales per 16 values
// along K (nvfp4_operand), `acc[i, j] += A[i, k] * B[k, j]` over the scaled values in f32, then
// `y = acc (* globals) (+ bias)` in the output's dtype. Decoding and scaling are nodes of their
// own here; the tensor core does them as it multiplies, so the analysis prices them as free and
// the product at the fp4 rate in every fidelity (docs/precision.md, "Block-scaled fp4
// products").
void scaled_mm_nvfp4(NodeLowering& n, const TensorInfo& a, const TensorInfo& b,
                     const Nvfp4Scales& scales) {
  const TensorInfo& y = n.out();
  if (a.dtype != ir::DType::F4E2M1X2 || b.dtype != ir::DType::F4E2M1X2) {
    throw UserError(
        n.op() + " of one packed fp4 operand and one " +
        std::string(ir::dtype_name(a.dtype == ir::DType::F4E2M1X2 ? b.dtype : a.dtype)) +
        " operand has no lowering rule (both packed fp4, NVFP4, has)");
  }
  if (a.rank() != 2 || b.rank() != 2) throw UserError(n.op() + ": operands of rank 2 only");
  const TensorInfo& sa = scales.a;
  const TensorInfo& sb = scales.b;
  if (sa.dtype != ir::DType::F8E4M3 || sb.dtype != ir::DType::F8E4M3) {
    throw UserError(
        n.op() + " of packed fp4 operands with " +
        std::string(ir::dtype_name(sa.dtype == ir::DType::F8E4M3 ? sb.dtype : sa.dtype)) +
        " scales has no lowering rule (NVFP4's f8e4m3 scales, one per 16 values, has)");
  }
  const int64_t m = a.shape[0];
  const int64_t k = 2 * a.shape[1];
  const int64_t cols = b.shape[1];
  if (2 * b.shape[0] != k) {
    throw UserError(n.op() + ": self " + shape_text(a.shape) + " and mat2 " + shape_text(b.shape) +
                    " (packed fp4 pairs) do not share K");
  }
  if (k % 16 != 0) {
    throw UserError(n.op() + " of packed fp4 operands: K = " + std::to_string(k) +
                    " is not a multiple of NVFP4's 16-value scale block");
  }
  const auto count = [&](int64_t rows) {
    return (rows + 127) / 128 * 128 * ((k / 16 + 3) / 4 * 4);
  };
  for (const auto& [s, rows, key] :
       {std::tuple{sa, m, "scale_a"}, std::tuple{sb, cols, "scale_b"}}) {
    if (s.numel() != count(rows)) {
      throw UserError(n.op() + " of packed fp4 operands: " + key + " " + shape_text(s.shape) +
                      " holds " + std::to_string(s.numel()) + " scales, not the " +
                      std::to_string(count(rows)) + " of NVFP4's swizzled layout (" +
                      std::to_string(rows) + " rows padded to 128 x " + std::to_string(k / 16) +
                      " blocks of 16 padded to 4)");
    }
  }
  for (const TensorInfo& g : scales.globals) {
    if (g.numel() != 1) {
      throw UserError(n.op() + ": a global scale of " + shape_text(g.shape) +
                      " (one value expected)");
    }
  }
  if (n.has("scale_result")) {
    throw UserError(n.op() + " with a scale_result (an fp8 output) has no lowering rule yet");
  }
  const TensorInfo table = e2m1_table(n);
  const TensorInfo da = nvfp4_operand(n, a, 1, table, sa, k);
  const TensorInfo db = nvfp4_operand(n, b, 0, table, sb, k);
  const TensorInfo acc = n.temp("acc", ir::DType::F32, y.shape);
  contract(n, acc, da, db.name + "[k, " + kI + "1]", k);
  std::string rhs = at_box(acc);
  for (const TensorInfo& g : scales.globals) {
    std::string at;  // its one element: g[0, 0, ..]
    for (int d = 0; d < g.rank(); ++d) at += d == 0 ? "0" : ", 0";
    rhs += " * " + g.name + "[" + at + "]";
  }
  if (n.has("bias")) rhs += " + " + read(n, "bias", y);
  pointwise(n, rhs);
}

// fp8 operands with tensor-wise scales (one value each) or row-wise ones (scale_a [M, 1], scale_b
// [1, N]): `acc[i, j] += self[i, k] * mat2[k, j]` in f32, then `y = acc * sa * sb (+ bias)`.
void scaled_mm_fp8(NodeLowering& n, const TensorInfo& a, const TensorInfo& b, const TensorInfo& sa,
                   const TensorInfo& sb) {
  const TensorInfo& y = n.out();
  if (a.rank() != 2 || b.rank() != 2) throw UserError(n.op() + ": operands of rank 2 only");
  const int64_t m = a.shape[0];
  const int64_t cols = b.shape[1];
  const bool tensor_wise = sa.numel() == 1 && sb.numel() == 1;
  const bool row_wise =
      sa.shape == std::vector<int64_t>{m, 1} && sb.shape == std::vector<int64_t>{1, cols};
  if (!tensor_wise && !row_wise) {
    throw UserError(n.op() + " with block-wise scales (scale_a " + shape_text(sa.shape) +
                    ", scale_b " + shape_text(sb.shape) +
                    ") has no lowering rule yet (tensor-wise or row-wise scales have)");
  }
  if (n.has("scale_result")) {
    throw UserError(n.op() + " with a scale_result (an fp8 output) has no lowering rule yet");
  }
  const TensorInfo acc = n.temp("acc", ir::DType::F32, y.shape);
  contract(n, acc, a, b.name + "[k, " + kI + "1]", a.shape[1]);
  const auto scale = [&](const TensorInfo& t) {
    if (t.numel() != 1) return t.name + "[" + bcast_index(t.shape, y.shape, kI) + "]";
    std::string at;  // its one element: t[0, 0, ..]
    for (int d = 0; d < t.rank(); ++d) at += d == 0 ? "0" : ", 0";
    return t.name + "[" + at + "]";
  };
  std::string rhs = at_box(acc) + " * " + scale(sa) + " * " + scale(sb);
  if (n.has("bias")) rhs += " + " + read(n, "bias", y);
  pointwise(n, rhs);
}

void scaled_mm_rule(NodeLowering& n) {
  const TensorInfo a = n.tensor("self");
  const TensorInfo b = n.tensor("mat2");
  if (a.dtype == ir::DType::F4E2M1X2 || b.dtype == ir::DType::F4E2M1X2) {
    return scaled_mm_nvfp4(n, a, b, {n.tensor("scale_a"), n.tensor("scale_b"), {}});
  }
  scaled_mm_fp8(n, a, b, n.tensor("scale_a"), n.tensor("scale_b"));
}

// torch.nn.functional.scaled_mm's op: _scaled_mm_v2(self, mat2, scale_a[], recipe_a[],
// swizzle_a[], scale_b[], recipe_b[], swizzle_b[], bias, out_dtype, contraction_dim,
// use_fast_accum), the scaling named by recipe (torch's ScalingType: 0 TensorWise, 1 RowWise,
// 2 BlockWise1x16, 3 BlockWise1x32, 4 BlockWise1x128, 5 BlockWise128x128) and the scale layout by
// swizzle (SwizzleType: 0 NO_SWIZZLE, 1 SWIZZLE_32_4_4). NVFP4 (BlockWise1x16 on both, with an
// optional TensorWise global scale second) and fp8 with TensorWise or RowWise scales lower as
// _scaled_mm's; any other recipe is one line naming it.
// The names of torch's ScalingType values, by value.
constexpr std::array<const char*, 6> kRecipeNames = {"TensorWise",     "RowWise",
                                                     "BlockWise1x16",  "BlockWise1x32",
                                                     "BlockWise1x128", "BlockWise128x128"};

std::string recipe_text(const std::vector<int64_t>& recipe) {
  std::string s = "[";
  for (size_t i = 0; i < recipe.size(); ++i) {
    const int64_t r = recipe[i];
    s += (i ? ", " : "") + (r >= 0 && r < 6 ? std::string(kRecipeNames.at(static_cast<size_t>(r)))
                                            : "recipe " + std::to_string(r));
  }
  return s + "]";
}

void scaled_mm_v2_rule(NodeLowering& n) {
  const TensorInfo a = n.tensor("self");
  const TensorInfo b = n.tensor("mat2");
  const std::vector<TensorInfo> sa = n.tensor_list("scale_a");
  const std::vector<TensorInfo> sb = n.tensor_list("scale_b");
  const std::vector<int64_t> ra = n.ints_or("recipe_a", {});
  const std::vector<int64_t> rb = n.ints_or("recipe_b", {});
  const std::vector<int64_t> wa = n.ints_or("swizzle_a", {});
  const std::vector<int64_t> wb = n.ints_or("swizzle_b", {});
  if (!n.ints_or("contraction_dim", {}).empty()) {
    throw UserError(n.op() + " with a contraction_dim has no lowering rule yet");
  }
  const auto refuse = [&]() {
    return UserError(n.op() + " with scaling recipes " + recipe_text(ra) + " and " +
                     recipe_text(rb) +
                     " has no lowering rule (NVFP4's BlockWise1x16, with an optional TensorWise "
                     "global scale, and fp8's TensorWise or RowWise have)");
  };
  if (sa.size() != ra.size() || sb.size() != rb.size() || sa.empty() || sb.empty()) throw refuse();
  const bool fp4 = a.dtype == ir::DType::F4E2M1X2 || b.dtype == ir::DType::F4E2M1X2;
  const auto nvfp4 = [](const std::vector<int64_t>& r) {
    return r == std::vector<int64_t>{2} || r == std::vector<int64_t>{2, 0};
  };
  if (fp4 && nvfp4(ra) && nvfp4(rb)) {
    if (wa != std::vector<int64_t>{1} || wb != std::vector<int64_t>{1}) {
      throw UserError(n.op() +
                      " of packed fp4 operands with scales not in the SWIZZLE_32_4_4 "
                      "layout has no lowering rule (torch requires that layout for NVFP4)");
    }
    Nvfp4Scales scales{sa[0], sb[0], {}};
    if (sa.size() == 2) scales.globals.push_back(sa[1]);
    if (sb.size() == 2) scales.globals.push_back(sb[1]);
    return scaled_mm_nvfp4(n, a, b, scales);
  }
  const bool same_fp8 =
      ra == rb && (ra == std::vector<int64_t>{0} || ra == std::vector<int64_t>{1});
  if (fp4 || !same_fp8) throw refuse();
  scaled_mm_fp8(n, a, b, sa[0], sb[0]);
}

}  // namespace

void register_linalg_rules(RuleTable& r) {
  r["aten.mm.default"] = mm_rule;
  r["aten.bmm.default"] = mm_rule;
  r["aten.addmm.default"] = [](NodeLowering& n) { addmm_rule(n, "mat1", "mat2"); };
  r["aten.baddbmm.default"] = [](NodeLowering& n) { addmm_rule(n, "batch1", "batch2"); };
  r["aten.linear.default"] = linear_rule;
  r["aten._scaled_mm.default"] = scaled_mm_rule;
  r["aten._scaled_mm_v2.default"] = scaled_mm_v2_rule;
  r["aten.convolution.default"] = convolution_rule;
}

}  // namespace solar::frontend
