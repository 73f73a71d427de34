"""JAX test model: the long tail of lax primitives in one function (sorting, cumulative ops,
gathers and scatters, padding, dynamic slices, control flow with static trip counts and
predicates, transposed and batch-grouped convolutions, and elementwise functions)."""

import jax
import jax.numpy as jnp
from jax import lax


def forward(x: jax.Array, ids: jax.Array, start: jax.Array, img: jax.Array, k: jax.Array):
    outs = [jnp.sort(x, axis=1), jnp.argsort(x, axis=0), *lax.top_k(x, 3)]
    outs += [jnp.cumsum(x, axis=1), lax.cumsum(x, axis=0, reverse=True), lax.cummax(x, axis=1)]
    outs += [jnp.cumprod(x[:, :3], axis=1), jnp.argmax(x, axis=1), jnp.argmin(x, axis=0)]
    outs += [jnp.take(x, ids, axis=1), x[ids], x.at[ids].add(1.5), x.at[2].set(0.0)]
    outs += [jnp.take(x, ids, axis=0, mode="clip")]
    outs += [lax.pad(x, 0.5, ((1, -1, 1), (-2, 2, 0))), jnp.flip(x, axis=(0, 1))]
    outs += [
        lax.dynamic_slice(x, (start, 1), (2, 3)),
        lax.dynamic_update_slice(x, x[:2, :2], (1, 3)),
    ]
    outs += [jnp.concatenate([x, -x], axis=0), jnp.expand_dims(x, 1).squeeze(1).T]
    outs += [x[1:4:2, ::3], lax.rev(x, (1,)), lax.iota(jnp.int32, 5)]
    y = jnp.abs(x) + 0.5
    outs += [lax.clamp(-0.5, x, 0.5), lax.rem(x * 3.0, 1.25), lax.pow(y, x), y**-2, jnp.exp2(x)]
    outs += [jnp.log1p(y), lax.erf_inv(jnp.tanh(x) * 0.9), jax.nn.sigmoid(x), jnp.sign(x)]
    outs += [jnp.prod(y, axis=0), jnp.min(x, axis=1), jnp.all(x > -3.0, axis=0), jnp.any(x > 2.0)]
    outs += [lax.reduce_precision(x, 8, 7), jnp.where(x > 0, x, 2 * x), jnp.round(x * 4)]
    outs += [jax.nn.silu(x), jax.nn.log_softmax(x, axis=-1), jax.nn.one_hot(ids, 6)]
    outs += [lax.fori_loop(0, 3, lambda i, h: h * 0.5 + x[i], jnp.zeros(6))]
    outs += [lax.cond(True, lambda a: a + 1.0, lambda a: a - 1.0, x)]
    outs += [lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] * 1.5), (0, x))[1]]
    outs += [jax.nn.logsumexp(x, axis=0), jax.nn.standardize(x, axis=-1)]
    # a transposed convolution (lhs dilation), and a batch-grouped one (weight gradients)
    outs += [lax.conv_transpose(img, k, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))]
    outs += [
        lax.conv_general_dilated(
            img, k, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"), batch_group_count=2
        )
    ]
    outs += [
        lax.conv_general_dilated(
            img.transpose(0, 3, 1, 2),
            k.transpose(3, 2, 0, 1),
            (1, 2),
            ((1, 0), (2, 1)),
            rhs_dilation=(2, 1),
            dimension_numbers=("NCHW", "OIHW", "NCHW"),
        )
    ]
    return outs


def get_inputs() -> list[jax.Array]:
    keys = jax.random.split(jax.random.PRNGKey(5), 3)
    return [
        jax.random.normal(keys[0], (5, 6), jnp.float32),
        jnp.array([4, 0, 2, 2], jnp.int32),
        jnp.array(2, jnp.int32),
        jax.random.normal(keys[1], (2, 6, 6, 4), jnp.float32),
        jax.random.normal(keys[2], (3, 3, 4, 4), jnp.float32),
    ]
