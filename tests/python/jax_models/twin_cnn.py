"""JAX twin of torch_twins/twin_cnn.py: NCHW convolutions with OIHW kernels (a strided one and a
grouped one), ReLU, global average pooling and a linear head, the same shapes as PyTorch's."""

import jax
import jax.numpy as jnp
from flax import linen as nn
from jax import lax

DIMS = ("NCHW", "OIHW", "NCHW")


class Conv(nn.Module):
    c_in: int
    c_out: int
    stride: int
    groups: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        shape = (self.c_out, self.c_in // self.groups, 3, 3)
        w = self.param("weight", nn.initializers.lecun_normal(), shape)
        b = self.param("bias", nn.initializers.zeros, (self.c_out,))
        y = lax.conv_general_dilated(
            x,
            w,
            (self.stride,) * 2,
            ((1, 1), (1, 1)),
            dimension_numbers=DIMS,
            feature_group_count=self.groups,
        )
        return y + b[None, :, None, None]


class Model(nn.Module):
    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = jax.nn.relu(Conv(3, 8, 2, 1)(x))
        x = jax.nn.relu(Conv(8, 16, 1, 4)(x))
        return nn.Dense(10)(jnp.mean(x, axis=(2, 3)))


def get_inputs() -> list[jax.Array]:
    return [jax.random.normal(jax.random.PRNGKey(0), (2, 3, 16, 16), jnp.float32)]
