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

// A recurrent node's arguments, read and checked: what every layer and direction shares.
struct Rnn {
  Cell cell = Cell::Lstm;
  bool lstm = false;
  TensorInfo x;
  std::vector<TensorInfo> hx;
  std::vector<TensorInfo> params;
  bool bias = true;
  int64_t layers = 0;
  bool batch_first = false;
  int64_t dirs = 1, steps = 0, batch = 0;
  int64_t width = 0;   // of h: the projection's, if any
  int64_t hidden = 0;  // of the cell
  bool proj = false;
  int64_t gates = 0;
  size_t per = 0;  // tensors of `params` per layer and direction
  std::vector<int64_t> time_major;
  ir::DType dt = ir::DType::F32;
};

// A sequence tensor (the input, a layer's output) and its layout.
struct Sequence {
  TensorInfo t;
  bool batch_first = false;
};

// Reads the node's arguments in schema order and checks their shapes against each other and the
// output's.
Rnn read_rnn(NodeLowering& n, Cell cell) {
  const bool lstm = cell == Cell::Lstm;
  TensorInfo x = n.tensor("input");
  std::vector<TensorInfo> hx = lstm ? n.tensor_list("hx") : std::vector<TensorInfo>{n.tensor("hx")};
  std::vector<TensorInfo> params = n.tensor_list("params");
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
  std::vector<int64_t> time_major = {steps, batch, dirs * width};
  expect_shape(y, batch_first ? std::vector<int64_t>{batch, steps, dirs * width} : time_major,
               "the output");
  return Rnn{.cell = cell,
             .lstm = lstm,
             .x = std::move(x),
             .hx = std::move(hx),
             .params = std::move(params),
             .bias = bias,
             .layers = layers,
             .batch_first = batch_first,
             .dirs = dirs,
             .steps = steps,
             .batch = batch,
             .width = width,
             .hidden = hidden,
             .proj = proj,
             .gates = gates,
             .per = per,
             .time_major = std::move(time_major),
             .dt = y.dtype};
}

// The weights of layer `layer` in direction `d` (1: reverse), whose input has `in` features,
// checked against the node's shapes.
LayerWeights layer_weights(const Rnn& r, int64_t layer, int64_t d, int64_t in) {
  const int64_t ld = layer * r.dirs + d;  // the index of the layer and direction in h0, c0
  const size_t base = static_cast<size_t>(ld) * r.per;
  const std::string where = " of layer " + str(layer) + (d ? " (reverse)" : "");
  LayerWeights w{r.params[base], r.params[base + 1], {}, {}, {}};
  expect_shape(w.w_ih, {r.gates, in}, "weight_ih" + where);
  expect_shape(w.w_hh, {r.gates, r.width}, "weight_hh" + where);
  if (r.bias) {
    w.b_ih = r.params[base + 2];
    w.b_hh = r.params[base + 3];
    expect_shape(w.b_ih, {r.gates}, "bias_ih" + where);
    expect_shape(w.b_hh, {r.gates}, "bias_hh" + where);
  }
  if (r.proj) {
    w.w_hr = r.params[base + r.per - 1];
    expect_shape(w.w_hr, {r.width, r.hidden}, "weight_hr" + where);
  }
  return w;
}

// A read of a sequence tensor at time `t` and batch `b`.
std::string at(const Sequence& seq, const std::string& t, const std::string& b,
               const std::string& k) {
  return seq.t.name + "[" + (seq.batch_first ? b + ", " + t : t + ", " + b) + ", " + k + "]";
}

// Gate q's input part, gx + b_ih, and hidden part, gh + b_hh, at unit j of the step that reads
// time step `pos`.
struct GateParts {
  const Rnn& r;
  const LayerWeights& w;
  const TensorInfo& gx;
  const TensorInfo& gh;
  const std::string& pos;

  std::string input_part(int64_t q) const {
    const std::string g = plus(q * r.hidden, "j");
    return gx.name + "[" + pos + ", b, " + g + "]" +
           (r.bias ? " + " + w.b_ih.name + "[" + g + "]" : "");
  }
  std::string hidden_part(int64_t q) const {
    const std::string g = plus(q * r.hidden, "j");
    return gh.name + "[b, " + g + "]" + (r.bias ? " + " + w.b_hh.name + "[" + g + "]" : "");
  }
  std::string pre(int64_t q) const { return input_part(q) + " + " + hidden_part(q); }
};

// The kernels of one step s after the hidden projection: the cell's update of c (an LSTM's) and
// of h[s + 1] (`next`), over `units`.
void cell_kernels(NodeLowering& n, const Rnn& r, const GateParts& parts, const TensorInfo& h,
                  const TensorInfo& c, const std::string& s, const std::string& units,
                  const std::string& next) {
  const int64_t batch = r.batch, width = r.width, hidden = r.hidden;
  switch (r.cell) {
    case Cell::Lstm: {  // c = f * c + i * g, h = o * tanh(c) (then h = w_hr h)
      n.kernel("cell", units, c.name + "[b, j]", "=",
               "sigmoid(" + parts.pre(1) + ") * " + c.name + "[b, j] + sigmoid(" + parts.pre(0) +
                   ") * tanh(" + parts.pre(2) + ")");
      const std::string out = "sigmoid(" + parts.pre(3) + ") * tanh(" + c.name + "[b, j])";
      if (!r.proj) {
        n.kernel("hidden", units, next, "=", out);
      } else {
        const TensorInfo m = n.temp("m", r.dt, {batch, hidden});
        n.kernel("hidden", units, m.name + "[b, j]", "=", out);
        n.kernel("proj",
                 "b in 0.." + str(batch) + ", p in 0.." + str(width) + ", j in 0.." + str(hidden),
                 h.name + "[" + s + " + 1, b, p]",
                 "+=", m.name + "[b, j] * " + parts.w.w_hr.name + "[p, j]");
      }
      break;
    }
    case Cell::Gru: {  // n = tanh(x_n + r * h_n), h = (1 - z) * n + z * h
      const TensorInfo z = n.temp("z", r.dt, {batch, hidden});
      n.kernel("update", units, z.name + "[b, j]", "=", "sigmoid(" + parts.pre(1) + ")");
      n.kernel("hidden", units, next, "=",
               "(1.0 - " + z.name + "[b, j]) * tanh(" + parts.input_part(2) + " + sigmoid(" +
                   parts.pre(0) + ") * (" + parts.hidden_part(2) + ")) + " + z.name + "[b, j] * " +
                   h.name + "[" + s + ", b, j]");
      break;
    }
    case Cell::Tanh:
      n.kernel("hidden", units, next, "=", "tanh(" + parts.pre(0) + ")");
      break;
    case Cell::Relu:
      n.kernel("hidden", units, next, "=", "max(" + parts.pre(0) + ", 0.0)");
      break;
  }
}

// Layer `layer` in direction `d` (1: reverse), reading `src` and writing its part of `seq`: the
// input projection of every step, the initial state, the `repeat` over the steps, and the outputs.
void lower_direction(NodeLowering& n, const Rnn& r, const Sequence& src, const Sequence& seq,
                     int64_t layer, int64_t d, bool last) {
  const int64_t steps = r.steps, batch = r.batch, width = r.width, hidden = r.hidden;
  const int64_t gates = r.gates;
  const ir::DType dt = r.dt;
  const int64_t in = src.t.shape[2];
  const int64_t ld = layer * r.dirs + d;  // the index of the layer and direction in h0, c0
  const LayerWeights w = layer_weights(r, layer, d, in);
  // The input projection of every step at once: gx[t, b, g] = sum_k x[t, b, k] w_ih[g, k].
  const TensorInfo gx = n.temp("gx", dt, {steps, batch, gates});
  n.kernel("in_proj",
           "t in 0.." + str(steps) + ", b in 0.." + str(batch) + ", g in 0.." + str(gates) +
               ", k in 0.." + str(in),
           gx.name + "[t, b, g]", "+=", at(src, "t", "b", "k") + " * " + w.w_ih.name + "[g, k]");
  // h[s] is the hidden state before step s (h[0] = h0); step s writes h[s + 1].
  const TensorInfo h = n.temp("h", dt, {steps + 1, batch, width});
  n.kernel("h0", "b in 0.." + str(batch) + ", j in 0.." + str(width), h.name + "[0, b, j]", "=",
           r.hx[0].name + "[" + str(ld) + ", b, j]");
  TensorInfo c;
  if (r.lstm) {
    c = n.temp("c", dt, {batch, hidden});
    n.kernel("c0", "b in 0.." + str(batch) + ", j in 0.." + str(hidden), c.name + "[b, j]", "=",
             r.hx[1].name + "[" + str(ld) + ", b, j]");
  }
  const TensorInfo gh = n.temp("gh", dt, {batch, gates});
  const std::string s = n.fresh_name("step");  // the repeat index
  // the time step that step s reads: s forward, steps - 1 - s in reverse
  const std::string pos = d ? str(steps - 1) + " - " + s : s;
  const GateParts parts{r, w, gx, gh, pos};
  const std::string units = "b in 0.." + str(batch) + ", j in 0.." + str(hidden);
  const std::string next = h.name + "[" + s + " + 1, b, j]";
  n.stmt("repeat " + s + " in 0.." + str(steps) + " {");
  n.kernel("hid_proj",
           "b in 0.." + str(batch) + ", g in 0.." + str(gates) + ", k in 0.." + str(width),
           gh.name + "[b, g]", "+=", h.name + "[" + s + ", b, k] * " + w.w_hh.name + "[g, k]");
  cell_kernels(n, r, parts, h, c, s, units, next);
  n.stmt("}");
  // The layer's output at time t is the state after the step that read t.
  const std::string units_out = "b in 0.." + str(batch) + ", j in 0.." + str(width);
  if (!last || n.output_needed(0)) {
    n.kernel("out", "t in 0.." + str(steps) + ", " + units_out,
             at(seq, "t", "b", plus(d * width, "j")), "=",
             h.name + "[" + (d ? str(steps) + " - t" : "t + 1") + ", b, j]");
  }
  if (n.outputs() > 1 && n.output_needed(1)) {
    n.kernel("h_n", units_out, n.out(1).name + "[" + str(ld) + ", b, j]", "=",
             h.name + "[" + str(steps) + ", b, j]");
  }
  if (r.lstm && n.outputs() > 2 && n.output_needed(2)) {
    n.kernel("c_n", units, n.out(2).name + "[" + str(ld) + ", b, j]", "=", c.name + "[b, j]");
  }
}

// Lowers a recurrent node: its layers in order, each direction of a layer in turn.
void rnn_rule(NodeLowering& n, Cell cell) {
  const Rnn r = read_rnn(n, cell);
  const TensorInfo& y = n.out();
  Sequence src{r.x, r.batch_first};
  for (int64_t layer = 0; layer < r.layers; ++layer) {
    const bool last = layer == r.layers - 1;
    const Sequence seq{last ? y : n.temp("seq", r.dt, r.time_major), last && r.batch_first};
    for (int64_t d = 0; d < r.dirs; ++d) lower_direction(n, r, src, seq, layer, d, last);
    src = seq;
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
