"""JAX training test model: a Flax nnx MLP, Linear 64 -> 32, ReLU, Linear 32 -> 8, batch 16;
the loss sum((out - 1)^2) (as tests/python/models/train/mlp.py for PyTorch)."""

import jax
import jax.numpy as jnp
from flax import nnx


class Model(nnx.Module):
    def __init__(self, rngs: nnx.Rngs) -> None:
        self.fc1 = nnx.Linear(64, 32, rngs=rngs)
        self.fc2 = nnx.Linear(32, 8, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.fc2(jax.nn.relu(self.fc1(x)))


def get_inputs() -> list[jax.Array]:
    return [jax.random.normal(jax.random.PRNGKey(0), (16, 64), jnp.float32)]


def get_loss(output: jax.Array, x: jax.Array) -> jax.Array:
    return jnp.sum(jnp.square(output - 1.0))
