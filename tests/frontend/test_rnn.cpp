// The recurrent-layer rules (src/frontend/rules_rnn.cpp) on one capture
// (tests/frontend/data/rnn.json): a bidirectional one-layer LSTM over time-first x : f32[3, 2, 2]
// (T=3, B=2, I=2, H=3, biases, given h0 and c0) and a two-layer GRU without biases over
// batch-first xb : f32[2, 3, 2] (B=2, T=3, I=2, H=2). The outputs are compared with the
// recurrences written out here in double (PyTorch's formulas, gate order i, f, g, o and r, z, n).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
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

std::string fixture() {
  std::ifstream in(std::string(SOLAR_SOURCE_DIR) + "/tests/frontend/data/rnn.json");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// A [rows, cols] row-major view of a tensor's values.
struct Mat {
  const Tensor* t;
  int64_t cols;
  double at(int64_t r, int64_t c) const { return t->get(r * cols + c); }
};

class Rnn : public ::testing::Test {
 protected:
  void SetUp() override {
    const nlohmann::json doc = nlohmann::json::parse(fixture());
    uint64_t seed = 1;
    for (const auto& t : doc["tensors"]) {
      if (t["role"] == "output") continue;
      inputs_[t["name"]] = exec::test::Random(seed++).tensor(ir::DType::F32, t["shape"]);
    }
    out_ = exec::run(lower_capture(fixture(), "rnn.json"), inputs_);
  }
  const Tensor& in(const std::string& name) const { return inputs_.at(name); }
  void expect(const std::string& name, const std::vector<double>& want) const {
    const Tensor& got = out_.at(name);
    ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << name;
    for (size_t k = 0; k < want.size(); ++k) {
      EXPECT_NEAR(got.get(static_cast<int64_t>(k)), want[k], 1e-5) << name << " at " << k;
    }
  }
  TensorMap inputs_, out_;
};

TEST_F(Rnn, BidirectionalLstmMatchesTheRecurrence) {
  const int64_t steps = 3, batch = 2, in_w = 2, hid = 3;
  std::vector<double> y(steps * batch * 2 * hid), hn(2 * batch * hid), cn(2 * batch * hid);
  for (int64_t d = 0; d < 2; ++d) {
    const std::string sfx = d ? "_r" : "_f";
    const Mat wi{&in("lw_ih" + sfx), in_w}, wh{&in("lw_hh" + sfx), hid};
    const Tensor &bi = in("lb_ih" + sfx), &bh = in("lb_hh" + sfx);
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<double> h(hid), c(hid);
      for (int64_t j = 0; j < hid; ++j) {
        h[j] = in("lh0").get((d * batch + b) * hid + j);
        c[j] = in("lc0").get((d * batch + b) * hid + j);
      }
      for (int64_t s = 0; s < steps; ++s) {
        const int64_t t = d ? steps - 1 - s : s;
        std::vector<double> g(4 * hid);
        for (int64_t q = 0; q < 4 * hid; ++q) {
          g[q] = bi.get(q) + bh.get(q);
          for (int64_t k = 0; k < in_w; ++k)
            g[q] += wi.at(q, k) * in("x").get((t * batch + b) * in_w + k);
          for (int64_t k = 0; k < hid; ++k) g[q] += wh.at(q, k) * h[k];
        }
        for (int64_t j = 0; j < hid; ++j) {
          c[j] = sigmoid(g[hid + j]) * c[j] + sigmoid(g[j]) * std::tanh(g[2 * hid + j]);
          h[j] = sigmoid(g[3 * hid + j]) * std::tanh(c[j]);
          y[(t * batch + b) * 2 * hid + d * hid + j] = h[j];
        }
      }
      for (int64_t j = 0; j < hid; ++j) {
        hn[(d * batch + b) * hid + j] = h[j];
        cn[(d * batch + b) * hid + j] = c[j];
      }
    }
  }
  expect("ly", y);
  expect("lhn", hn);
  expect("lcn", cn);
}

TEST_F(Rnn, TwoLayerGruWithoutBiasMatchesTheRecurrence) {
  const int64_t steps = 3, batch = 2, hid = 2;
  // seq[b][t][k]: the layer's input, batch first; layer 0 reads xb (I = 2)
  std::vector<double> seq(batch * steps * 2), hn(2 * batch * hid);
  for (int64_t k = 0; k < batch * steps * 2; ++k) seq[k] = in("xb").get(k);
  for (int64_t layer = 0; layer < 2; ++layer) {
    const Mat wi{&in("gw_ih_" + std::to_string(layer)), 2};
    const Mat wh{&in("gw_hh_" + std::to_string(layer)), hid};
    std::vector<double> next(batch * steps * hid);
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<double> h(hid);
      for (int64_t j = 0; j < hid; ++j) h[j] = in("gh0").get((layer * batch + b) * hid + j);
      for (int64_t t = 0; t < steps; ++t) {
        std::vector<double> gi(3 * hid), gh(3 * hid);
        for (int64_t q = 0; q < 3 * hid; ++q) {
          for (int64_t k = 0; k < 2; ++k) gi[q] += wi.at(q, k) * seq[(b * steps + t) * 2 + k];
          for (int64_t k = 0; k < hid; ++k) gh[q] += wh.at(q, k) * h[k];
        }
        std::vector<double> hnew(hid);
        for (int64_t j = 0; j < hid; ++j) {
          const double r = sigmoid(gi[j] + gh[j]);
          const double z = sigmoid(gi[hid + j] + gh[hid + j]);
          const double nn = std::tanh(gi[2 * hid + j] + r * gh[2 * hid + j]);
          hnew[j] = (1.0 - z) * nn + z * h[j];
        }
        h = hnew;
        for (int64_t j = 0; j < hid; ++j) next[(b * steps + t) * hid + j] = h[j];
      }
      for (int64_t j = 0; j < hid; ++j) hn[(layer * batch + b) * hid + j] = h[j];
    }
    seq = next;  // hid = 2 = the next layer's input width
  }
  expect("gy", seq);
  expect("ghn", hn);
}

TEST(RnnText, OneRepeatPerLayerAndDirection) {
  // LSTM: 1 layer x 2 directions; GRU: 2 layers x 1 direction; 3 kernels a step each
  const std::string ir = ir::print(lower_capture(fixture(), "rnn.json"));
  size_t repeats = 0;
  for (size_t at = ir.find("repeat "); at != std::string::npos; at = ir.find("repeat ", at + 1)) {
    ++repeats;
  }
  EXPECT_EQ(repeats, 4u) << ir;
}

TEST(RnnErrors, TrainingModeInterLayerDropoutNamesTheOp) {
  nlohmann::json doc = nlohmann::json::parse(fixture());
  doc["nodes"][1]["args"]["dropout"] = 0.5;
  const std::string text = doc.dump();
  EXPECT_EQ(exec::test::user_error([&] { lower_capture(text, "rnn.json"); }),
            "model.py:6 in forward: aten.gru.input (node 'gru'): inter-layer dropout in training "
            "mode (dropout=0.5) is not supported");
  doc["nodes"][1]["args"]["train"] = false;  // eval mode: no dropout
  EXPECT_NO_THROW(lower_capture(doc.dump(), "rnn.json"));
}

TEST(RnnErrors, WrongParameterCountIsAUserError) {
  nlohmann::json doc = nlohmann::json::parse(fixture());
  doc["nodes"][1]["args"]["params"].erase(3);
  const std::string text = doc.dump();
  EXPECT_EQ(exec::test::user_error([&] { lower_capture(text, "rnn.json"); }),
            "model.py:6 in forward: aten.gru.input (node 'gru'): expects 4 tensors in params (2 "
            "per layer and direction), got 3");
}

}  // namespace
}  // namespace solar::frontend
