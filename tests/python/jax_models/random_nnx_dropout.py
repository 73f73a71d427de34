"""JAX test model: Flax nnx Linear(16 -> 32), relu and nnx.Dropout(0.25) in training mode on
x [8, 16]. The dropout's key and counter are nnx state (the model's weights): they are PRNG key
data, left out of the program."""

import jax
import jax.numpy as jnp
from flax import nnx


class Model(nnx.Module):
    def __init__(self, rngs: nnx.Rngs) -> None:
        self.lin = nnx.Linear(16, 32, rngs=rngs)
        self.drop = nnx.Dropout(0.25, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.drop(jax.nn.relu(self.lin(x)))


def get_inputs() -> list[jax.Array]:
    return [jax.random.normal(jax.random.PRNGKey(1), (8, 16), jnp.float32)]
