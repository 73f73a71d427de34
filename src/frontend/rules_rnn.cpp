// Rules for the recurrent layers nn.LSTM, nn.GRU and nn.RNN: aten.lstm.input, aten.gru.input,
// aten.rnn_tanh.input and aten.rnn_relu.input, which the capture keeps whole (KEPT_WHOLE in
// python/solar/capture/_trace.py). Each layer and direction is one contraction that projects
// the whole input sequence, then one `repeat` over the time steps holding the hidden
// projection and the cell's update: 3 kernels a step for an LSTM and a GRU, 2 for an RNN.
// See docs/lowering.md, "Recurrent layers".
#include <cstdint>
#include <string>
#include <vector>

#include "rules.h"
#include "solar/util/error.h"
#include "solar/util/text.h"

namespace solar::frontend {

namespace {

enum class Cell { Lstm, Gru, Tanh, Relu };

// The gates of a cell, in PyTorch's order in the weights' rows: i, f, g, o (LSTM); r, z, n (GRU).
int64_t gate_count(Cell cell) {
  switch (cell) {
    case Cell::Lstm:
      return 4;
    case Cell::Gru:
      return 3;
    case Cell::Tanh:
    case Cell::Relu:
      return 1;
  }
  return 1;
}

std::string str(int64_t v) { return std::to_string(v); }

void expect_shape(const TensorInfo& t, const std::vector<int64_t>& want, const std::string& what) {
  if (t.shape != want) {
    throw UserError(what + " '" + t.name + "' has shape " + shape_text(t.shape) + ", expected " +
                    shape_text(want));
  }
}

// `offset + j`, or `j` for offset 0.
std::string plus(int64_t offset, const std::string& j) {
  return offset == 0 ? j : str(offset) + " + " + j;
}

// The weights of one layer and direction, in the order of `params` (nn.LSTM's _flat_weights):
// w_ih, w_hh, then b_ih, b_hh with biases, then w_hr with an LSTM's projection.
struct LayerWeights {
  TensorInfo w_ih, w_hh, b_ih, b_hh, w_hr;
};

void rnn_rule(NodeLowering& n, Cell cell) {
  const bool lstm = cell == Cell::Lstm;
  const TensorInfo x = n.tensor("input");
  const std::vector<TensorInfo> hx =
      lstm ? n.tensor_list("hx") : std::vector<TensorInfo>{n.tensor("hx")};
  const std::vector<TensorInfo> params = n.tensor_list("params");
  const bool bias = n.flag_or("has_biases", true);
  const int64_t layers = n.integer("num_layers");
  const double dropout = n.number_or("dropout", 0.0);
  const bool bidirectional = n.flag_or("bidirectional", false);
  const bool batch_first = n.flag_or("batch_first", false);
  if (x.rank() != 3) {
    throw UserError("expects a 3-d input (time, batch, features), got shape " +
                    shape_text(x.shape));
  }
  if (lstm && hx.size() != 2) throw UserError("expects hx = [h0, c0]");
  if (layers < 1) throw UserError("num_layers must be at least 1, got " + str(layers));
  if (dropout > 0.0 && n.flag_or("train", false) && layers > 1) {
    throw UserError("inter-layer dropout in training mode (dropout=" + lit(dropout) +
                    ") is not supported");
  }
  const int64_t dirs = bidirectional ? 2 : 1;
  const int64_t steps = x.shape[batch_first ? 1 : 0];
  const int64_t batch = x.shape[batch_first ? 0 : 1];
  if (steps < 1) throw UserError("the input has no time steps");
  const TensorInfo& h0 = hx[0];
  if (h0.rank() != 3) throw UserError("h0 '" + h0.name + "' must be 3-d");
  const int64_t width = h0.shape[2];                        // of h: the projection's, if any
  const int64_t hidden = lstm ? hx[1].shape.at(2) : width;  // of the cell
  const bool proj = lstm && width != hidden;
  const int64_t gates = gate_count(cell) * hidden;
  expect_shape(h0, {layers * dirs, batch, width}, "h0");
  if (lstm) expect_shape(hx[1], {layers * dirs, batch, hidden}, "c0");
  const size_t per = (bias ? 4 : 2) + (proj ? 1 : 0);
  if (params.size() != static_cast<size_t>(layers * dirs) * per) {
    throw UserError("expects " + str(layers * dirs * static_cast<int64_t>(per)) +
                    " tensors in params (" + str(static_cast<int64_t>(per)) +
                    " per layer and direction), got " + str(static_cast<int64_t>(params.size())));
  }
  const TensorInfo& y = n.out();
  const std::vector<int64_t> time_major = {steps, batch, dirs * width};
  expect_shape(y, batch_first ? std::vector<int64_t>{batch, steps, dirs * width} : time_major,
               "the output");
  const ir::DType dt = y.dtype;

  // A read of a sequence tensor (the input, a layer's output) at time `t` and batch `b`.
  auto at = [](const TensorInfo& seq, bool seq_batch_first, const std::string& t,
               const std::string& b, const std::string& k) {
    return seq.name + "[" + (seq_batch_first ? b + ", " + t : t + ", " + b) + ", " + k + "]";
  };
  TensorInfo src = x;
  bool src_batch_first = batch_first;
  for (int64_t layer = 0; layer < layers; ++layer) {
    const bool last = layer == layers - 1;
    const TensorInfo seq = last ? y : n.temp("seq", dt, time_major);
    const bool seq_batch_first = last && batch_first;
    const int64_t in = src.shape[2];
    for (int64_t d = 0; d < dirs; ++d) {
      const int64_t ld = layer * dirs + d;  // the index of the layer and direction in h0, c0
      const size_t base = static_cast<size_t>(ld) * per;
      const std::string where = " of layer " + str(layer) + (d ? " (reverse)" : "");
      LayerWeights w{params[base], params[base + 1], {}, {}, {}};
      expect_shape(w.w_ih, {gates, in}, "weight_ih" + where);
      expect_shape(w.w_hh, {gates, width}, "weight_hh" + where);
      if (bias) {
        w.b_ih = params[base + 2];
        w.b_hh = params[base + 3];
        expect_shape(w.b_ih, {gates}, "bias_ih" + where);
        expect_shape(w.b_hh, {gates}, "bias_hh" + where);
      }
      if (proj) {
        w.w_hr = params[base + per - 1];
        expect_shape(w.w_hr, {width, hidden}, "weight_hr" + where);
      }
      // The input projection of every step at once: gx[t, b, g] = sum_k x[t, b, k] w_ih[g, k].
      const TensorInfo gx = n.temp("gx", dt, {steps, batch, gates});
      n.kernel("in_proj",
               "t in 0.." + str(steps) + ", b in 0.." + str(batch) + ", g in 0.." + str(gates) +
                   ", k in 0.." + str(in),
               gx.name + "[t, b, g]",
               "+=", at(src, src_batch_first, "t", "b", "k") + " * " + w.w_ih.name + "[g, k]");
      // h[s] is the hidden state before step s (h[0] = h0); step s writes h[s + 1].
      const TensorInfo h = n.temp("h", dt, {steps + 1, batch, width});
      n.kernel("h0", "b in 0.." + str(batch) + ", j in 0.." + str(width), h.name + "[0, b, j]", "=",
               h0.name + "[" + str(ld) + ", b, j]");
      TensorInfo c;
      if (lstm) {
        c = n.temp("c", dt, {batch, hidden});
        n.kernel("c0", "b in 0.." + str(batch) + ", j in 0.." + str(hidden), c.name + "[b, j]", "=",
                 hx[1].name + "[" + str(ld) + ", b, j]");
      }
      const TensorInfo gh = n.temp("gh", dt, {batch, gates});
      const std::string s = n.fresh_name("step");  // the repeat index
      // the time step that step s reads: s forward, steps - 1 - s in reverse
      const std::string pos = d ? str(steps - 1) + " - " + s : s;
      // Gate q's input part, gx + b_ih, and hidden part, gh + b_hh, at unit j.
      auto input_part = [&](int64_t q) {
        const std::string g = plus(q * hidden, "j");
        return gx.name + "[" + pos + ", b, " + g + "]" +
               (bias ? " + " + w.b_ih.name + "[" + g + "]" : "");
      };
      auto hidden_part = [&](int64_t q) {
        const std::string g = plus(q * hidden, "j");
        return gh.name + "[b, " + g + "]" + (bias ? " + " + w.b_hh.name + "[" + g + "]" : "");
      };
      auto pre = [&](int64_t q) { return input_part(q) + " + " + hidden_part(q); };
      const std::string units = "b in 0.." + str(batch) + ", j in 0.." + str(hidden);
      const std::string next = h.name + "[" + s + " + 1, b, j]";
      n.stmt("repeat " + s + " in 0.." + str(steps) + " {");
      n.kernel("hid_proj",
               "b in 0.." + str(batch) + ", g in 0.." + str(gates) + ", k in 0.." + str(width),
               gh.name + "[b, g]", "+=", h.name + "[" + s + ", b, k] * " + w.w_hh.name + "[g, k]");
      switch (cell) {
        case Cell::Lstm: {  // c = f * c + i * g, h = o * tanh(c) (then h = w_hr h)
          n.kernel("cell", units, c.name + "[b, j]", "=",
                   "sigmoid(" + pre(1) + ") * " + c.name + "[b, j] + sigmoid(" + pre(0) +
                       ") * tanh(" + pre(2) + ")");
          const std::string out = "sigmoid(" + pre(3) + ") * tanh(" + c.name + "[b, j])";
          if (!proj) {
            n.kernel("hidden", units, next, "=", out);
          } else {
            const TensorInfo m = n.temp("m", dt, {batch, hidden});
            n.kernel("hidden", units, m.name + "[b, j]", "=", out);
            n.kernel(
                "proj",
                "b in 0.." + str(batch) + ", p in 0.." + str(width) + ", j in 0.." + str(hidden),
                h.name + "[" + s + " + 1, b, p]",
                "+=", m.name + "[b, j] * " + w.w_hr.name + "[p, j]");
          }
          break;
        }
        case Cell::Gru: {  // n = tanh(x_n + r * h_n), h = (1 - z) * n + z * h
          const TensorInfo z = n.temp("z", dt, {batch, hidden});
          n.kernel("update", units, z.name + "[b, j]", "=", "sigmoid(" + pre(1) + ")");
          n.kernel("hidden", units, next, "=",
                   "(1.0 - " + z.name + "[b, j]) * tanh(" + input_part(2) + " + sigmoid(" + pre(0) +
                       ") * (" + hidden_part(2) + ")) + " + z.name + "[b, j] * " + h.name + "[" +
                       s + ", b, j]");
          break;
        }
        case Cell::Tanh:
          n.kernel("hidden", units, next, "=", "tanh(" + pre(0) + ")");
          break;
        case Cell::Relu:
          n.kernel("hidden", units, next, "=", "max(" + pre(0) + ", 0.0)");
          break;
      }
      n.stmt("}");
      // The layer's output at time t is the state after the step that read t.
      const std::string units_out = "b in 0.." + str(batch) + ", j in 0.." + str(width);
      if (!last || n.output_needed(0)) {
        n.kernel("out", "t in 0.." + str(steps) + ", " + units_out,
                 at(seq, seq_batch_first, "t", "b", plus(d * width, "j")), "=",
                 h.name + "[" + (d ? str(steps) + " - t" : "t + 1") + ", b, j]");
      }
      if (n.outputs() > 1 && n.output_needed(1)) {
        n.kernel("h_n", units_out, n.out(1).name + "[" + str(ld) + ", b, j]", "=",
                 h.name + "[" + str(steps) + ", b, j]");
      }
      if (lstm && n.outputs() > 2 && n.output_needed(2)) {
        n.kernel("c_n", units, n.out(2).name + "[" + str(ld) + ", b, j]", "=", c.name + "[b, j]");
      }
    }
    src = seq;
    src_batch_first = seq_batch_first;
  }
}

}  // namespace

void register_rnn_rules(RuleTable& r) {
  r["aten.lstm.input"] = [](NodeLowering& n) { rnn_rule(n, Cell::Lstm); };
  r["aten.gru.input"] = [](NodeLowering& n) { rnn_rule(n, Cell::Gru); };
  r["aten.rnn_tanh.input"] = [](NodeLowering& n) { rnn_rule(n, Cell::Tanh); };
  r["aten.rnn_relu.input"] = [](NodeLowering& n) { rnn_rule(n, Cell::Relu); };
}

}  // namespace solar::frontend
