// Lowering of hand-written captures (tests/frontend/data): each lowered program is run by the
// executor on seeded inputs and compared with a reference computed here with plain loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../exec/exec_test_util.h"
#include "solar/frontend/lower.h"
#include "solar/ir/printer.h"

namespace solar::frontend {
namespace {

using exec::Tensor;
using exec::TensorMap;
using exec::test::Random;

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(SOLAR_SOURCE_DIR) + "/tests/frontend/data/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TensorMap run_fixture(const std::string& name, const TensorMap& inputs) {
  return exec::run(lower_capture(fixture(name), name), inputs);
}

Tensor random(std::vector<int64_t> shape, uint64_t seed) {
  return Random(seed).tensor(ir::DType::F32, std::move(shape));
}

// Checks `got` against `want` element by element (f32 results of f64 references).
void expect_near(const Tensor& got, const std::vector<double>& want, double tol = 1e-5) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got.get(static_cast<int64_t>(i)), want[i], tol * (1.0 + std::abs(want[i])))
        << "element " << i;
  }
}

TEST(Lower, LinearRelu) {
  const Tensor x = random({2, 3}, 1), w = random({4, 3}, 2), b = random({4}, 3);
  const TensorMap out = run_fixture("linear_relu.json", {{"x", x}, {"w", w}, {"b", b}});
  std::vector<double> want;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) {
      double acc = 0;
      for (int k = 0; k < 3; ++k) acc += x.get(i * 3 + k) * w.get(j * 3 + k);
      want.push_back(std::max(0.5 * b.get(j) + 2.0 * acc, 0.0));  // beta 0.5, alpha 2
    }
  }
  expect_near(out.at("relu"), want);
}

TEST(Lower, Conv2dStridePaddingDilationGroups) {
  const Tensor x = random({1, 4, 5, 6}, 4), w = random({6, 2, 3, 2}, 5), b = random({6}, 6);
  const TensorMap out = run_fixture("conv2d.json", {{"x", x}, {"w", w}, {"b", b}});
  std::vector<double> want;
  for (int oc = 0; oc < 6; ++oc) {
    const int g = oc / 3;  // 2 groups of 3 output channels, 2 input channels each
    for (int oh = 0; oh < 3; ++oh) {
      for (int ow = 0; ow < 2; ++ow) {
        double acc = b.get(oc);
        for (int ic = 0; ic < 2; ++ic) {
          for (int kh = 0; kh < 3; ++kh) {
            for (int kw = 0; kw < 2; ++kw) {
              const int ih = 2 * oh - 1 + kh;  // stride 2, padding 1
              const int iw = 2 * ow + 2 * kw;  // stride 2, dilation 2
              if (ih < 0 || ih >= 5 || iw >= 6) continue;
              acc += x.get(((g * 2 + ic) * 5 + ih) * 6 + iw) *
                     w.get(((oc * 2 + ic) * 3 + kh) * 2 + kw);
            }
          }
        }
        want.push_back(acc);
      }
    }
  }
  expect_near(out.at("conv"), want);
}

TEST(Lower, ConvTranspose1dOutputPadding) {
  const Tensor x = random({1, 2, 3}, 7), w = random({2, 3, 3}, 8);
  const TensorMap out = run_fixture("conv_transpose1d.json", {{"x", x}, {"w", w}});
  std::vector<double> want(3 * 6, 0.0);  // length (3-1)*2 - 2*1 + (3-1) + 1 + 1 = 6
  for (int ic = 0; ic < 2; ++ic) {
    for (int oc = 0; oc < 3; ++oc) {
      for (int i = 0; i < 3; ++i) {
        for (int k = 0; k < 3; ++k) {
          const int o = 2 * i - 1 + k;  // stride 2, padding 1
          if (o >= 0 && o < 6) want[oc * 6 + o] += x.get(ic * 3 + i) * w.get((ic * 3 + oc) * 3 + k);
        }
      }
    }
  }
  expect_near(out.at("conv"), want);
}

TEST(Lower, LayerNorm) {
  const Tensor x = random({2, 3, 4}, 9), g = random({4}, 10), b = random({4}, 11);
  const TensorMap out = run_fixture("layer_norm.json", {{"x", x}, {"g", g}, {"b", b}});
  std::vector<double> want;
  std::vector<double> want_rstd;
  for (int r = 0; r < 6; ++r) {
    double mean = 0, var = 0;
    for (int c = 0; c < 4; ++c) mean += x.get(r * 4 + c) / 4;
    for (int c = 0; c < 4; ++c) var += (x.get(r * 4 + c) - mean) * (x.get(r * 4 + c) - mean) / 4;
    const double rstd = 1 / std::sqrt(var + 1e-5);
    want_rstd.push_back(rstd);
    for (int c = 0; c < 4; ++c)
      want.push_back((x.get(r * 4 + c) - mean) * rstd * g.get(c) + b.get(c));
  }
  expect_near(out.at("ln"), want);
  expect_near(out.at("ln_rstd"), want_rstd);
}

TEST(Lower, SoftmaxAndLogSoftmax) {
  const Tensor x = random({2, 5}, 12);
  const TensorMap out = run_fixture("softmax.json", {{"x", x}});
  std::vector<double> sm(10), lsm(10);
  for (int i = 0; i < 2; ++i) {  // softmax over dim -1
    double s = 0;
    for (int j = 0; j < 5; ++j) s += std::exp(x.get(i * 5 + j));
    for (int j = 0; j < 5; ++j) sm[i * 5 + j] = std::exp(x.get(i * 5 + j)) / s;
  }
  for (int j = 0; j < 5; ++j) {  // log_softmax over dim 0
    const double s = std::exp(x.get(j)) + std::exp(x.get(5 + j));
    for (int i = 0; i < 2; ++i) lsm[i * 5 + j] = x.get(i * 5 + j) - std::log(s);
  }
  expect_near(out.at("sm"), sm);
  expect_near(out.at("lsm"), lsm);
}

TEST(Lower, BatchNormTrainingUsesBatchStatistics) {
  const Tensor x = random({2, 3, 2, 2}, 13), g = random({3}, 14), b = random({3}, 15);
  const Tensor rm = random({3}, 16);
  const Tensor rv = exec::test::f32({3}, {0.5, 1.0, 2.0});
  const TensorMap out =
      run_fixture("batch_norm_train.json", {{"x", x}, {"g", g}, {"b", b}, {"rm", rm}, {"rv", rv}});
  std::vector<double> y(24), mean(3), rstd(3), new_rm(3), new_rv(3);
  for (int c = 0; c < 3; ++c) {
    std::vector<double> v;
    for (int n = 0; n < 2; ++n) {
      for (int p = 0; p < 4; ++p) v.push_back(x.get((n * 3 + c) * 4 + p));
    }
    double m = 0, var = 0;
    for (double e : v) m += e / 8;
    for (double e : v) var += (e - m) * (e - m) / 8;
    mean[c] = m;
    rstd[c] = 1 / std::sqrt(var + 1e-5);
    new_rm[c] = 0.9 * rm.get(c) + 0.1 * m;
    new_rv[c] = 0.9 * rv.get(c) + 0.1 * var * 8 / 7;  // unbiased variance, 8 samples
    for (int n = 0; n < 2; ++n) {
      for (int p = 0; p < 4; ++p) {
        const int i = (n * 3 + c) * 4 + p;
        y[i] = (x.get(i) - m) * rstd[c] * g.get(c) + b.get(c);
      }
    }
  }
  expect_near(out.at("bn"), y);
  expect_near(out.at("bn_mean"), mean);
  expect_near(out.at("bn_rstd"), rstd);
  expect_near(out.at("bn_rm"), new_rm);
  expect_near(out.at("bn_rv"), new_rv);
}

TEST(Lower, MaxPoolWithIndicesAndAvgPoolCeilMode) {
  const Tensor x = random({1, 2, 5, 5}, 17);
  const TensorMap out = run_fixture("pool.json", {{"x", x}});
  std::vector<double> mp, idx, ap;
  for (int c = 0; c < 2; ++c) {
    for (int oh = 0; oh < 3; ++oh) {
      for (int ow = 0; ow < 3; ++ow) {
        // max pool: kernel 2, stride 2, ceil_mode: the last window is clipped to row/col 4
        double best = -std::numeric_limits<double>::infinity();
        int best_at = -1;
        for (int h = 2 * oh; h < std::min(2 * oh + 2, 5); ++h) {
          for (int w = 2 * ow; w < std::min(2 * ow + 2, 5); ++w) {
            if (x.get((c * 5 + h) * 5 + w) > best) {
              best = x.get((c * 5 + h) * 5 + w);
              best_at = h * 5 + w;
            }
          }
        }
        mp.push_back(best);
        idx.push_back(best_at);
        // avg pool: kernel 3, stride 2, padding 1, count_include_pad false: valid cells only
        double sum = 0;
        int count = 0;
        for (int h = std::max(2 * oh - 1, 0); h < std::min(2 * oh + 2, 5); ++h) {
          for (int w = std::max(2 * ow - 1, 0); w < std::min(2 * ow + 2, 5); ++w) {
            sum += x.get((c * 5 + h) * 5 + w);
            ++count;
          }
        }
        ap.push_back(sum / count);
      }
    }
  }
  expect_near(out.at("mp"), mp);
  expect_near(out.at("mp_idx"), idx, 0.0);
  expect_near(out.at("ap"), ap);
}

TEST(Lower, CausalScaledDotProductAttention) {
  const Tensor q = random({1, 2, 4, 3}, 18), k = random({1, 2, 4, 3}, 19),
               v = random({1, 2, 4, 2}, 20);
  const TensorMap out = run_fixture("sdpa_causal.json", {{"q", q}, {"k", k}, {"v", v}});
  std::vector<double> want;
  for (int h = 0; h < 2; ++h) {
    for (int i = 0; i < 4; ++i) {
      std::vector<double> p;
      double sum = 0;
      for (int j = 0; j <= i; ++j) {  // causal: keys up to the query's position
        double s = 0;
        for (int e = 0; e < 3; ++e) s += q.get((h * 4 + i) * 3 + e) * k.get((h * 4 + j) * 3 + e);
        p.push_back(std::exp(0.5 * s));  // scale 0.5
        sum += p.back();
      }
      for (int d = 0; d < 2; ++d) {
        double acc = 0;
        for (int j = 0; j <= i; ++j) acc += p[j] * v.get((h * 4 + j) * 2 + d);
        want.push_back(acc / sum);
      }
    }
  }
  expect_near(out.at("attn"), want);
}

TEST(Lower, CatSliceSelectViewSubAlpha) {
  const Tensor x = random({2, 3}, 21), y = random({2, 2}, 22);
  const TensorMap out = run_fixture("cat_slice.json", {{"x", x}, {"y", y}});
  // cat = [x | y] (2x5); out[i, j] = cat[i, 1 + 2j] - 3 * cat[j, 4] (select row -1, broadcast)
  auto cat = [&](int i, int j) { return j < 3 ? x.get(i * 3 + j) : y.get(i * 2 + j - 3); };
  std::vector<double> want;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) want.push_back(cat(i, 1 + 2 * j) - 3 * cat(j, 4));
  }
  expect_near(out.at("out"), want);
}

TEST(Lower, SplitWithSizesSplitTensorUnbind) {
  const Tensor x = random({2, 6}, 31);
  const TensorMap out = run_fixture("split_unbind.json", {{"x", x}});
  // Columns [lo, hi) of x, row-major.
  auto cols = [&](int lo, int hi) {
    std::vector<double> v;
    for (int i = 0; i < 2; ++i) {
      for (int j = lo; j < hi; ++j) v.push_back(x.get(i * 6 + j));
    }
    return v;
  };
  expect_near(out.at("a"), cols(0, 1));
  expect_near(out.at("b"), cols(1, 3));
  expect_near(out.at("c"), cols(3, 6));
  expect_near(out.at("d"), cols(0, 4));
  expect_near(out.at("e"), cols(4, 6));
  std::vector<double> row0, row1;
  for (int j = 0; j < 6; ++j) {
    row0.push_back(x.get(j));
    row1.push_back(x.get(6 + j));
  }
  expect_near(out.at("u0"), row0);
  expect_near(out.at("u1"), row1);
}

// The functionalised views (make_fx's `_copy` twins of alias, detach, permute, transpose,
// unsqueeze, expand, squeeze (3 overloads), unbind, split, split_with_sizes, t and
// _reshape_alias) lower as their views do: the right values, and no kernel (a view moves no
// byte in the program's own graph; the copy is the trace's, not the program's).
TEST(Lower, FunctionalisedViewCopiesLowerAsTheirViews) {
  const Tensor x = random({2, 3, 4}, 7);
  const TensorMap out = run_fixture("view_copies.json", {{"x", x}});
  auto at = [&](int b, int a, int c) { return x.get((b * 3 + a) * 4 + c); };  // x[b, a, c]
  // permute [2, 0, -2] then transpose(0, 2): tr[a, b, c] = p[c, b, a] = x[b, a, c], [3, 2, 4]
  std::vector<double> tr;
  for (int a = 0; a < 3; ++a) {
    for (int b = 0; b < 2; ++b) {
      for (int c = 0; c < 4; ++c) tr.push_back(at(b, a, c));
    }
  }
  std::vector<double> e = tr;  // expand of tr[None] to [2, 3, 2, 4]: tr twice
  e.insert(e.end(), tr.begin(), tr.end());
  expect_near(out.at("e"), e);
  expect_near(out.at("sd"), tr);
  expect_near(out.at("sds"), tr);
  for (int k = 0; k < 3; ++k) {  // unbind_copy along dim 0 of tr: ub_k[b, c] = x[b, k, c]
    std::vector<double> ub;
    for (int b = 0; b < 2; ++b) {
      for (int c = 0; c < 4; ++c) ub.push_back(at(b, k, c));
    }
    expect_near(out.at("ub" + std::to_string(k)), ub);
  }
  auto box = [&](int a0, int a1, int c0, int c1) {  // x[:, a0:a1, c0:c1], row-major
    std::vector<double> v;
    for (int b = 0; b < 2; ++b) {
      for (int a = a0; a < a1; ++a) {
        for (int c = c0; c < c1; ++c) v.push_back(at(b, a, c));
      }
    }
    return v;
  };
  expect_near(out.at("sp0"), box(0, 3, 0, 2));  // split_copy of size 2 along dim -1
  expect_near(out.at("sp1"), box(0, 3, 2, 4));
  expect_near(out.at("sw0"), box(0, 1, 0, 4));  // split_with_sizes_copy [1, 2] along dim 1
  expect_near(out.at("sw1"), box(1, 3, 0, 4));
  std::vector<double> tc;  // t_copy of ub0: tc[c, b] = x[b, 0, c]
  for (int c = 0; c < 4; ++c) {
    for (int b = 0; b < 2; ++b) tc.push_back(at(b, 0, c));
  }
  expect_near(out.at("tc"), tc);
  expect_near(out.at("ra"), box(0, 3, 0, 4));  // _reshape_alias_copy to [6, 4]: x's order
  // 14 nodes, each lowered to statements only: 0 kernels (a copy kernel would print "kernel")
  const std::string text = ir::print(lower_capture(fixture("view_copies.json"), "v.json"));
  EXPECT_EQ(text.find("kernel"), std::string::npos) << text;
}

TEST(Lower, ArangeLogicalAnyConstantPadLogsumexp) {
  Tensor x(ir::DType::F32, {2, 3});
  const std::vector<double> xs = {2.0, 1.0, 6.0, 0.5, 4.0, 5.5};  // row 1: no x <= arange
  for (int k = 0; k < 6; ++k) x.set(k, xs[k]);
  const TensorMap out = run_fixture("logical_pad.json", {{"x", x}});
  const std::vector<double> ar = {1.0, 3.0, 5.0};
  expect_near(out.at("ar"), ar);
  std::vector<double> any, la;
  for (int i = 0; i < 2; ++i) {
    bool a = false;
    for (int j = 0; j < 3; ++j) a = a || !(xs[i * 3 + j] > ar[j]);
    any.push_back(a);
    for (int j = 0; j < 3; ++j) la.push_back(xs[i * 3 + j] > ar[j] && a);
  }
  expect_near(out.at("anyv"), any);
  expect_near(out.at("la"), la);
  // pad [1, -1, 0, 1]: last dim one 0.5 column before, the last column cropped; one row after.
  std::vector<double> p;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) p.push_back(i < 2 && j > 0 ? xs[i * 3 + j - 1] : 0.5);
  }
  expect_near(out.at("p"), p);
  std::vector<double> lse;
  for (int i = 0; i < 2; ++i) {
    double s = 0;
    for (int j = 0; j < 3; ++j) s += std::exp(xs[i * 3 + j]);
    lse.push_back(std::log(s));
  }
  expect_near(out.at("lse"), lse);
}

TEST(Lower, UnsupportedOperatorNamesItAndWhereItWasCalled) {
  const std::string message = exec::test::user_error(
      [] { lower_capture(fixture("unsupported.json"), "unsupported.json"); });
  EXPECT_EQ(message,
            "model.py:12 in forward: unsupported operator 'aten.foo.default' (node "
            "'foo_1', 2 of 2 nodes); " +
                std::to_string(registered_ops().size()) +
                " operators have lowering rules (docs/lowering.md lists them); without a rule: "
                // 1 of the 2 nodes; each writes one f32[2] (8 B): 8 of 16 B
                "1 of 2 nodes (50.0%, 50.0% of the bytes the nodes write): aten.foo.default x1; "
                "--allow-unsupported analyses the rest");
}

TEST(Lower, MalformedJsonIsAOneLineUserError) {
  const std::string message =
      exec::test::user_error([] { lower_capture("{\"format\": \"solar-capture\",", "bad.json"); });
  EXPECT_EQ(message.rfind("bad.json: invalid capture JSON: ", 0), 0u) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

TEST(Lower, MissingArgumentNamesTheNode) {
  std::string text = fixture("linear_relu.json");
  text.replace(text.find("\"mat1\""), 6, "\"matX\"");
  const std::string message = exec::test::user_error([&] { lower_capture(text, "m.json"); });
  EXPECT_EQ(message,
            "model.py:10 in forward: aten.addmm.default (node 'addmm'): missing "
            "argument 'mat1'");
}

TEST(Lower, InvalidLoweredIrIsAnInternalError) {
  nlohmann::json capture = nlohmann::json::parse(fixture("linear_relu.json"));
  capture["tensors"][5]["shape"] = {2, 5};  // relu's output declared too long: reads overrun
  const std::string text = capture.dump();
  try {
    lower_capture(text, "m.json");
    FAIL() << "no error";
  } catch (const InternalError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(
                  "internal error: lowering of aten.relu.default produced invalid IR: m.json:", 0),
              0u)
        << e.what();
  }
}

TEST(Lower, LoweredProgramsPrintAndReparseEqual) {
  for (const char* name :
       {"linear_relu.json", "conv2d.json", "conv_transpose1d.json", "layer_norm.json",
        "softmax.json", "batch_norm_train.json", "pool.json", "sdpa_causal.json", "cat_slice.json",
        "split_unbind.json", "logical_pad.json", "view_copies.json"}) {
    const ir::Program p = lower_capture(fixture(name), name);
    EXPECT_TRUE(ir::equal(ir::parse(ir::print(p), name), p)) << name;
  }
}

TEST(Lower, EveryRegisteredOperatorIsDocumented) {
  const std::string doc = fixture("../../../docs/lowering.md");
  const std::vector<std::string> ops = registered_ops();
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
  for (const std::string& op : ops) {
    EXPECT_NE(doc.find("`" + op + "`"), std::string::npos) << op << " is not in docs/lowering.md";
  }
}

}  // namespace
}  // namespace solar::frontend
