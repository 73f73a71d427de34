"""JAX test model: an Elman RNN written with lax.scan (a plain function; the weights are
inputs), returning every hidden state and the last one."""

import jax
import jax.numpy as jnp
from jax import lax


def forward(xs: jax.Array, w_x: jax.Array, w_h: jax.Array, b: jax.Array):
    def step(h, x):
        h = jnp.tanh(x @ w_x + h @ w_h + b)
        return h, h

    h0 = jnp.zeros((xs.shape[1], w_h.shape[0]), xs.dtype)
    last, hs = lax.scan(step, h0, xs)
    return hs, last


def get_inputs() -> list[jax.Array]:
    keys = jax.random.split(jax.random.PRNGKey(4), 4)
    t, batch, d_in, hidden = 5, 2, 6, 8
    return [
        jax.random.normal(keys[0], (t, batch, d_in), jnp.float32),
        0.3 * jax.random.normal(keys[1], (d_in, hidden), jnp.float32),
        0.3 * jax.random.normal(keys[2], (hidden, hidden), jnp.float32),
        0.1 * jax.random.normal(keys[3], (hidden,), jnp.float32),
    ]
