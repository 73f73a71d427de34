"""JAX test model: keys split and folded inside the function, x [4, 8] * uniform + normal,
then a lax.scan of 3 steps that splits its carried key and adds a fresh normal draw to its
state each step. The key is made from a seed inside the function (jax.random.key(0))."""

import jax
import jax.numpy as jnp
from jax import lax


def forward(x: jax.Array) -> jax.Array:
    k1, k2 = jax.random.split(jax.random.key(0))
    a = jax.random.uniform(k1, x.shape, jnp.float32)
    b = jax.random.normal(jax.random.fold_in(k2, 7), x.shape, jnp.float32)
    y = x * a + b

    def step(carry, _):
        h, key = carry
        key, sub = jax.random.split(key)
        h = jnp.tanh(h + jax.random.normal(sub, h.shape, jnp.float32))
        return (h, key), h.sum()

    (h, _), sums = lax.scan(step, (y, k2), None, length=3)
    return h, sums


def get_inputs() -> list[jax.Array]:
    return [jax.random.normal(jax.random.PRNGKey(1), (4, 8), jnp.float32)]
