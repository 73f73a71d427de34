"""JAX test model: training-mode dropout written by hand, a jax.random.bernoulli keep mask
(p = 0.75) over relu(x [8, 16] @ w [16, 32]), the kept values scaled by 1 / 0.75; the key is a
typed ``jax.random.key`` input."""

import jax
import jax.numpy as jnp

KEEP = 0.75


def forward(x: jax.Array, w: jax.Array, key: jax.Array) -> jax.Array:
    h = jax.nn.relu(x @ w)
    keep = jax.random.bernoulli(key, KEEP, h.shape)
    return jnp.where(keep, h / KEEP, 0.0)


def get_inputs() -> list[jax.Array]:
    kx, kw = jax.random.split(jax.random.key(1))
    x = jax.random.normal(kx, (8, 16), jnp.float32)
    w = jax.random.normal(kw, (16, 32), jnp.float32) * 0.25
    return [x, w, jax.random.key(3)]
