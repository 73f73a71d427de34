"""SOLAR's executor on a kernel-benchmark workload's own inputs, in CPU seconds (issue 38: where
the verification time of a definition goes).

For each workload named: the reference traced on the workload's values, lowered, its golden
run made (PyTorch), then ``solar.ir.run`` on the golden inputs, timed with
``time.process_time``. Run it under two builds (two checkouts or venvs) to compare executors.

    python3 bench/definition_executor.py bench/definitions/moe_loop_e16_h1024 t16 t512
"""

from __future__ import annotations

import argparse
import time

from solar import ir, stages
from solar.options import Options
from solar.suites import definition as fmt
from solar.torch import captured_call
from solar.torch import definition as capture_definition
from solar.torch._device import OnCpu


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("definition", help="a definition folder (definition.json, workload.jsonl)")
    p.add_argument("workloads", nargs="+", help="workload uuids")
    p.add_argument("--hw", default="B200")
    args = p.parse_args()
    problem = fmt.load(args.definition)
    namespace = capture_definition.reference_namespace(problem.definition)
    options = Options.of(args.hw)
    by_uuid = {w.uuid: w for w in problem.workloads}
    for uuid in args.workloads:
        workload = by_uuid[uuid]
        on_cpu = OnCpu()
        inputs = capture_definition.make_inputs(problem.definition, workload, namespace, on_cpu)
        module, tensors = capture_definition.reference_module(
            problem.definition, namespace, inputs, on_cpu
        )
        captured = captured_call(module, tensors, options, uuid, specialise=True)
        lowered = stages.lower(captured, options.lowering)
        golden = captured.golden(stages.recorded(lowered.result))
        roles = ("input", "weight")
        feed = {n: golden[n] for n, role, _ in lowered.program.tensors if role in roles}
        began = time.process_time()
        ir.run(lowered.program, feed)
        print(f"{uuid}: ir.run {time.process_time() - began:.2f} s CPU")


if __name__ == "__main__":
    main()
