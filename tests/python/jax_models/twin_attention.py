"""JAX twin of torch_twins/twin_attention.py: multi-head self-attention (no mask) and a GELU MLP
with residual connections, the same shapes as PyTorch's."""

import jax
import jax.numpy as jnp
from flax import linen as nn

HEADS = 2


class Model(nn.Module):
    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        b, t, d = x.shape
        q, k, v = jnp.split(nn.Dense(3 * d)(x), 3, axis=-1)
        q, k, v = (z.reshape(b, t, HEADS, d // HEADS) for z in (q, k, v))
        a = jax.nn.dot_product_attention(q, k, v)
        x = x + nn.Dense(d)(a.reshape(b, t, d))
        return x + nn.Dense(d)(jax.nn.gelu(nn.Dense(4 * d)(x), approximate=False))


def get_inputs() -> list[jax.Array]:
    return [jax.random.normal(jax.random.PRNGKey(0), (2, 8, 16), jnp.float32)]
