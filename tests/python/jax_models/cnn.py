"""JAX test model: a CNN (Flax linen, NHWC) with a strided convolution, a grouped convolution,
max pooling, global average pooling and a dense head."""

import jax
import jax.numpy as jnp
from flax import linen as nn


class Model(nn.Module):
    classes: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = nn.relu(nn.Conv(8, (3, 3), strides=(2, 2), padding=((1, 1), (1, 1)))(x))
        x = nn.relu(nn.Conv(16, (3, 3), padding="SAME", feature_group_count=4)(x))
        x = nn.max_pool(x, (2, 2), strides=(2, 2))
        x = jnp.mean(x, axis=(1, 2))
        return nn.Dense(self.classes)(x)


def get_inputs() -> list[jax.Array]:
    return [jax.random.normal(jax.random.PRNGKey(2), (2, 16, 16, 3), jnp.float32)]


def get_init_inputs() -> list[int]:
    return [10]
