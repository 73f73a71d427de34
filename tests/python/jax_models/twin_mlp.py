"""JAX twin of torch_twins/twin_mlp.py: Linear(16, 32), tanh-GELU, Linear(32, 4)."""

import jax
import jax.numpy as jnp
from flax import linen as nn


class Model(nn.Module):
    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        return nn.Dense(4)(jax.nn.gelu(nn.Dense(32)(x), approximate=True))


def get_inputs() -> list[jax.Array]:
    return [jax.random.normal(jax.random.PRNGKey(0), (8, 16), jnp.float32)]
