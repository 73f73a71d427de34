"""JAX test model: a pre-norm transformer encoder block with causal attention (Flax nnx, with
jax.nn.dot_product_attention)."""

import jax
import jax.numpy as jnp
from flax import nnx


class Model(nnx.Module):
    def __init__(self, d_model: int, n_heads: int, *, rngs: nnx.Rngs) -> None:
        self.n_heads = n_heads
        self.ln1 = nnx.LayerNorm(d_model, rngs=rngs)
        self.qkv = nnx.Linear(d_model, 3 * d_model, rngs=rngs)
        self.proj = nnx.Linear(d_model, d_model, rngs=rngs)
        self.ln2 = nnx.LayerNorm(d_model, rngs=rngs)
        self.up = nnx.Linear(d_model, 4 * d_model, rngs=rngs)
        self.down = nnx.Linear(4 * d_model, d_model, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        b, t, d = x.shape
        q, k, v = jnp.split(self.qkv(self.ln1(x)), 3, axis=-1)
        q, k, v = (z.reshape(b, t, self.n_heads, d // self.n_heads) for z in (q, k, v))
        a = jax.nn.dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.reshape(b, t, d))
        return x + self.down(jax.nn.gelu(self.up(self.ln2(x)), approximate=False))


def get_inputs() -> list[jax.Array]:
    return [jax.random.normal(jax.random.PRNGKey(3), (2, 8, 16), jnp.float32)]


def get_init_inputs() -> list[int]:
    return [16, 2]
