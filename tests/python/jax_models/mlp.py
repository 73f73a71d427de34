"""JAX test model: a three-layer MLP (Flax linen), tanh-GELU and ReLU."""

import jax
import jax.numpy as jnp
from flax import linen as nn


class Model(nn.Module):
    hidden: int
    out: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = jax.nn.gelu(nn.Dense(self.hidden)(x))
        x = jax.nn.relu(nn.Dense(self.hidden)(x))
        return nn.Dense(self.out)(x)


def get_inputs() -> list[jax.Array]:
    return [jax.random.normal(jax.random.PRNGKey(1), (8, 16), jnp.float32)]


def get_init_inputs() -> list[int]:
    return [32, 4]
