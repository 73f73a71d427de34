"""Writes large synthetic IR programs for bench/large_graphs.py (no torch needed).

    python3 bench/gen_large_ir.py lstm  --layers 6 --steps 2048 OUT.ir   # 8 kernels per cell
    python3 bench/gen_large_ir.py chain --steps 25000 OUT.ir             # 4 kernels per step

lstm: an LSTM stack written by hand in the IR, one `repeat` over the time steps per layer, each
step a cell of 8 nodes (input and hidden projections, the gates, the cell and hidden state, and
the copy of h into the layer's output sequence): layers x steps x 8 nodes.
chain: one `repeat` of a small matmul, a bias add, a relu and a residual add on the same
tensors: steps x 4 nodes.
"""

from __future__ import annotations

import argparse
import sys


def lstm(layers: int, steps: int, batch: int, d_in: int, hidden: int) -> str:
    out = [
        f"# generated: python3 bench/gen_large_ir.py lstm --layers {layers} --steps {steps} "
        f"--batch {batch} --d-in {d_in} --hidden {hidden}",
        f"size T = {steps}",
        f"size B = {batch}",
        f"size F = {d_in}",
        f"size H = {hidden}",
        f"size G = {4 * hidden}",
        "",
        "input x : f32[B, T, F]",
    ]
    for layer in range(layers):
        width = "F" if layer == 0 else "H"
        out += [
            f"weight wi{layer} : f32[G, {width}]",
            f"weight wh{layer} : f32[G, H]",
            f"weight bias{layer} : f32[G]",
        ]
    out += [
        "tensor h : f32[B, H]",
        "tensor c : f32[B, H]",
        "tensor gx : f32[B, G]",
        "tensor gh : f32[B, G]",
        "tensor ig : f32[B, H]",
        "tensor fg : f32[B, H]",
        "tensor og : f32[B, H]",
    ]
    for layer in range(layers - 1):
        out.append(f"tensor ys{layer} : f32[B, T, H]")
    out += ["output y : f32[B, T, H]", ""]
    for layer in range(layers):
        src = "x" if layer == 0 else f"ys{layer - 1}"
        width = "F" if layer == 0 else "H"
        dst = "y" if layer == layers - 1 else f"ys{layer}"
        out += [
            f"kernel h_init{layer} {{",
            "  for b in 0..B, j in 0..H:",
            "    h[b, j] = 0.0",
            "}",
            f"kernel c_init{layer} {{",
            "  for b in 0..B, j in 0..H:",
            "    c[b, j] = 0.0",
            "}",
            "repeat t in 0..T {",
            f"  kernel in_proj{layer} {{",
            f"    for b in 0..B, g in 0..G, k in 0..{width}:",
            f"      gx[b, g] += wi{layer}[g, k] * {src}[b, t, k]",
            "  }",
            f"  kernel hid_proj{layer} {{",
            "    for b in 0..B, g in 0..G, k in 0..H:",
            f"      gh[b, g] += wh{layer}[g, k] * h[b, k]",
            "  }",
            f"  kernel in_gate{layer} {{",
            "    for b in 0..B, j in 0..H:",
            f"      ig[b, j] = sigmoid(gx[b, j] + gh[b, j] + bias{layer}[j])",
            "  }",
            f"  kernel forget_gate{layer} {{",
            "    for b in 0..B, j in 0..H:",
            f"      fg[b, j] = sigmoid(gx[b, H + j] + gh[b, H + j] + bias{layer}[H + j])",
            "  }",
            f"  kernel out_gate{layer} {{",
            "    for b in 0..B, j in 0..H:",
            f"      og[b, j] = sigmoid(gx[b, 3 * H + j] + gh[b, 3 * H + j] + bias{layer}[3 * H + j])",
            "  }",
            f"  kernel cell{layer} {{",
            "    for b in 0..B, j in 0..H:",
            f"      c[b, j] = fg[b, j] * c[b, j] + ig[b, j] * "
            f"tanh(gx[b, 2 * H + j] + gh[b, 2 * H + j] + bias{layer}[2 * H + j])",
            "  }",
            f"  kernel hidden{layer} {{",
            "    for b in 0..B, j in 0..H:",
            "      h[b, j] = og[b, j] * tanh(c[b, j])",
            "  }",
            f"  {dst}[:, t, :] = h",
            "}",
        ]
    return "\n".join(out) + "\n"


def chain(steps: int, batch: int, width: int) -> str:
    return "\n".join(
        [
            f"# generated: python3 bench/gen_large_ir.py chain --steps {steps} --batch {batch} "
            f"--width {width}",
            f"size T = {steps}",
            f"size B = {batch}",
            f"size D = {width}",
            "",
            "input x : f32[B, D]",
            "weight w : f32[T, D, D]",
            "weight bias : f32[T, D]",
            "tensor a : f32[B, D]",
            "tensor z : f32[B, D]",
            "tensor r : f32[B, D]",
            "output h : f32[B, D]",
            "",
            "kernel start {",
            "  for b in 0..B, d in 0..D:",
            "    h[b, d] = x[b, d]",
            "}",
            "repeat t in 0..T {",
            "  kernel mm {",
            "    for b in 0..B, e in 0..D, d in 0..D:",
            "      a[b, e] += h[b, d] * w[t, d, e]",
            "  }",
            "  kernel add_bias {",
            "    for b in 0..B, e in 0..D:",
            "      z[b, e] = a[b, e] + bias[t, e]",
            "  }",
            "  kernel relu {",
            "    for b in 0..B, e in 0..D:",
            "      r[b, e] = max(z[b, e], 0.0)",
            "  }",
            "  kernel residual {",
            "    for b in 0..B, e in 0..D:",
            "      h[b, e] = h[b, e] + r[b, e]",
            "  }",
            "}",
        ]
    ) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("kind", choices=["lstm", "chain"])
    p.add_argument("out")
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--steps", type=int, default=2048)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--d-in", type=int, default=32)
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--width", type=int, default=32)
    a = p.parse_args(argv)
    if a.kind == "lstm":
        text = lstm(a.layers, a.steps, a.batch, a.d_in, a.hidden)
    else:
        text = chain(a.steps, a.batch, a.width)
    with open(a.out, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
