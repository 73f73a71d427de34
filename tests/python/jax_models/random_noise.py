"""JAX test model: a dense layer with Gaussian noise added to its activation,
x [8, 16] @ w [16, 32] + 0.1 * jax.random.normal(key, (8, 32)); the key is a legacy
``PRNGKey`` (uint32[2]) input."""

import jax
import jax.numpy as jnp


def forward(x: jax.Array, w: jax.Array, key: jax.Array) -> jax.Array:
    return x @ w + 0.1 * jax.random.normal(key, (8, 32), jnp.float32)


def get_inputs() -> list[jax.Array]:
    kx, kw = jax.random.split(jax.random.PRNGKey(1))
    x = jax.random.normal(kx, (8, 16), jnp.float32)
    w = jax.random.normal(kw, (16, 32), jnp.float32) * 0.25
    return [x, w, jax.random.PRNGKey(7)]
