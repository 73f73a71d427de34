"""Fidelity pattern (JAX): a jitted helper is one framework operation. `softmax_rows` is
`jax.jit`-decorated, so eager JAX runs it as one executable; the scaling before it is one
primitive of its own."""

import jax
import jax.numpy as jnp


@jax.jit
def softmax_rows(x: jax.Array) -> jax.Array:
    m = jnp.max(x, axis=-1, keepdims=True)
    e = jnp.exp(x - m)
    return e / jnp.sum(e, axis=-1, keepdims=True)


def forward(x: jax.Array) -> jax.Array:
    return softmax_rows(x * 2.0)


def get_inputs() -> list[jax.Array]:
    return [jax.random.normal(jax.random.PRNGKey(0), (64, 128), jnp.float32)]
