"""Copies eager runs as kernels are charged in the unfused fidelity (a read and a write of the
tensor), as eager runs them: ``clone``, ``contiguous()`` of a non-contiguous tensor (exported as
``aten.clone``), ``to`` with a dtype change and ``to(copy=True)`` (``aten._to_copy``). The
unfused SOL bounds an eager run of the same ops, and each of these IS a kernel in eager; the
views (``contiguous()`` of a contiguous tensor, ``detach``) are none. On H100-SXM; every tensor
is 64 x 128 = 8192 elements: 32,768 B in f32, 16,384 B in f16.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import solar  # noqa: E402

F32 = 64 * 128 * 4  # 32,768 B
F16 = 64 * 128 * 2  # 16,384 B


class Clone(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x).clone() * 2


class Contiguous(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x).t().contiguous() + 1


class AlreadyContiguous(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x).contiguous().detach() + 1


class ToHalf(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x).to(torch.float16) * 2


class ToCopy(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x).to(torch.float32, copy=True) * 2


def _report(model: torch.nn.Module) -> dict:
    data = solar.analyze(model, (torch.randn(64, 128),), hw="H100-SXM").data
    assert data["verification"]["status"] == "passed", data["verification"]
    return data


def _bytes(data: dict) -> dict[str, int]:
    return {n["name"]: n["bytes_unfused"] for n in data["nodes"]}


def test_a_clone_reads_and_writes_its_tensor():
    data = _report(Clone())
    # relu reads x and writes relu: 2 x 32,768; the clone reads relu and writes its copy:
    # 2 x 32,768; mul reads the copy and writes the output: 2 x 32,768. 6 x 32,768 = 196,608.
    assert _bytes(data) == {"relu_map": 2 * F32, "clone_copy": 2 * F32, "mul_map": 2 * F32}
    assert data["bytes"]["unfused"] == 196_608
    # Fused: the copy stays on chip, as every intermediate: x in, the output out, 2 x 32,768.
    assert data["bytes"]["fused"] == 65_536


def test_contiguous_of_a_transpose_is_a_copy():
    data = _report(Contiguous())
    # relu: 2 x 32,768; the copy of relu's transpose (exported as aten.clone): reads 32,768,
    # writes 32,768; the add: 2 x 32,768. 6 x 32,768 = 196,608.
    assert _bytes(data)["clone_copy"] == 2 * F32
    assert data["bytes"]["unfused"] == 196_608


def test_contiguous_of_a_contiguous_tensor_and_detach_are_no_kernel():
    data = _report(AlreadyContiguous())
    # Views in eager (no kernel): relu 2 x 32,768 and the add 2 x 32,768 only = 131,072.
    assert sorted(_bytes(data)) == ["add_map", "relu_map"]
    assert data["bytes"]["unfused"] == 131_072


def test_to_with_a_dtype_change_reads_f32_and_writes_f16():
    data = _report(ToHalf())
    # The conversion reads 32,768 B of f32 and writes 16,384 B of f16 = 49,152 B; relu
    # 2 x 32,768 = 65,536; mul reads and writes f16: 2 x 16,384 = 32,768. 147,456 B.
    assert _bytes(data)["copy:_to_copy"] == F32 + F16
    assert data["bytes"]["unfused"] == 147_456


def test_to_with_copy_true_is_a_copy_kernel():
    data = _report(ToCopy())
    # _to_copy of the same dtype: reads and writes 32,768 B; as the clone: 6 x 32,768 = 196,608.
    copies = [n for n in data["nodes"] if n["name"].startswith("_to_copy")]
    assert [n["bytes_unfused"] for n in copies] == [2 * F32]
    assert data["bytes"]["unfused"] == 196_608
