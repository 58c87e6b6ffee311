"""The measured child process: the measurement protocol, in one place.

Run as `python -m leakbench.engine.child CONFIG_JSON`; the runner starts it in a
fresh process (never a fork of a process that imported TensorFlow) and reads
one JSON message per line from the file descriptor CONFIG_JSON["fd"]:

    {"phase": P}                      entering phase P (import, setup, warm-up,
                                      repetitions, heap, teardown)
    {"device": {...}, "versions": {...}}  after the import: the device measured
                                      (a GPU TensorFlow sees, or why none) and versions
    {"skipped": "..."}                the scenario REQUIRES a GPU and TensorFlow sees
                                      none: nothing is measured; the child exits 0
    {"sample": {...}, "rep": i}       probes after measured repetition i
    {"progress": P, "rep": i}         warm-up or heap repetition i done (P: warm-up, heap)
    {"progress": P}                   evidence reading P begins (stages, reference chain)
                                      (every message is a sign of progress: the runner's
                                      timeout counts from the last one, leakbench.engine.runner)
    {"result": {...}}                 everything measured, sent before teardown
    {"teardown_seconds": s}           teardown finished
    {"error": "...", "phase": P}      the scenario raised; the child then exits 1

The parent checks every message against the schema of its kind (leakbench.engine.messages) before
it reads it. Each is written whole with os.write on the descriptor it was given, once that
descriptor is still the pipe it was (the measured code may close it, os.closerange, or put
another file in its place, os.dup2): where it is not, the child raises ChannelLost, prints its
traceback on stderr (the parent keeps that output in a file the run's error names) and exits 1,
never writing a message into a file that is not the pipe.

Protocol: import the scenario, iterate one tiny tf.data pipeline (where it
imported TensorFlow: the one-off cost of TensorFlow's first pipeline is not the
scenario's), and freeze what the import made (gc.freeze:
the collector then skips it, which makes each sample's full collection cheap); look for a GPU (only
if the scenario imported TensorFlow; a scenario with REQUIRES = "GPU" and none visible is skipped
here); garbage-collect, sample the import baseline
and reset the kernel's high-water mark; setup(**params); `warmup`
repetitions; reset the GPU allocator's peak (where there is a GPU);
garbage-collect and sample the baseline; `reps` measured
repetitions, each followed by a sample (with the GPU allocator's bytes in
use); read the GPU allocator's peak and the high-water mark, whose
excess over the import baseline is the peak the pipeline cost; trim malloc
and see how much RSS that gives back (fragmentation, not a leak); then, if
`heap_reps` > 0, a heap pass of that many repetitions under memray; then,
outside every sampled series, the memory per tf.data stage (a fresh
iterator's autotune model at 4, 32 and 64 elements: result "stages";
leakbench.engine.buffers) and the reference chain to the Python type that grew
most (result "reference_chain"; leakbench.engine.chain), both read by
leakbench.engine.evidence; then drop the state
(teardown), which can be slow: destroying live tf.data iterators waits for
their thread pools.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
import traceback
from pathlib import Path

import psutil

from leakbench import contract
from leakbench.engine import after_import, evidence, probes, pytypes, supervise
from leakbench.engine import chain as references
from leakbench.engine import gpu as gpu_module
from leakbench.engine import target as check_target
from leakbench.engine.heap import heap_pass


class ChannelLost(Exception):
    """The descriptor of leakbench's message pipe was closed or now names another file: the
    measured code closed it (os.close, os.closerange) or reused it (os.dup2, or an open that got
    its number after it was closed). Nothing more can be told to the parent through it."""


class _Channel:
    """The child's end of the message pipe: descriptor `fd`, as inherited (the pipe's identity,
    st_dev and st_ino, read once)."""

    def __init__(self, fd: int):
        self._fd = fd
        pipe = os.fstat(fd)
        self._pipe = (pipe.st_dev, pipe.st_ino)

    def send(self, **message) -> None:
        """One message, one line, written whole; ChannelLost where the descriptor is no longer
        the pipe."""
        data = (json.dumps(message) + "\n").encode()
        try:
            found = os.fstat(self._fd)
        except OSError as e:
            raise ChannelLost(
                f"leakbench's message pipe (fd {self._fd}) was closed by the measured code "
                f"(os.close, os.closerange): {e.strerror}"
            ) from None
        if (found.st_dev, found.st_ino) != self._pipe:
            raise ChannelLost(
                f"leakbench's message pipe (fd {self._fd}) was replaced by another file: the "
                "measured code reused its descriptor (os.dup2, or an open after closing it)"
            )
        while data:  # a pipe takes a large message in parts
            data = data[os.write(self._fd, data) :]


class _Phases:
    """The child's side of the run as it goes: its channel, the phase it is in (its error report
    names it), and the seconds each step took (the result's "seconds")."""

    def __init__(self, channel: _Channel):
        self.channel = channel
        self.phase = "import"
        self.seconds: dict[str, float] = {}

    def enter(self, name: str) -> float:
        """Enter phase `name` (its message sent); time.perf_counter() at its start."""
        self.phase = name
        self.channel.send(phase=name)
        return time.perf_counter()


def main(config: dict) -> int:
    if "parent" in config:
        supervise.die_with_parent(config["parent"])
    channel = _Channel(config["fd"])
    process = psutil.Process()
    phases = _Phases(channel)
    try:
        return _protocol(config, phases, process)
    except BaseException as err:  # the scenario's own failure is a result, not a crash
        if isinstance(err, ChannelLost):  # nothing can be sent: the traceback goes to stderr
            return _lost()
        tail = "".join(traceback.format_exception_only(type(err), err)).strip()
        if isinstance(err, contract.ContractError):  # a bad check target: its one-line message
            tail = str(err)
        try:
            channel.send(
                error=tail,
                phase=phases.phase,
                exception=type(err).__name__,
                traceback=traceback.format_exc(limit=8),
            )
        except ChannelLost:  # the scenario's failure, then the pipe's, both on stderr
            return _lost()
        return 1


def _protocol(config: dict, phases: _Phases, process: psutil.Process) -> int:
    """The protocol (the module docstring), from the import to the teardown; the exit code."""
    channel, seconds = phases.channel, phases.seconds
    start = phases.enter("import")
    target = config.get("target")  # leakbench check FILE.py:NAME: adapted to the contract
    module = check_target.load(target) if target else contract.load_module(Path(config["path"]))
    # check's extra readings (leakbench.engine.buffers)
    extra: dict | None = {} if config.get("diagnose") else None
    after_import.first_tf_data_use()
    seconds["import"] = time.perf_counter() - start
    # What the import made lives as long as the process: freezing it (out of
    # every later collection) makes a full gc.collect with TensorFlow loaded
    # cheap (docs/measurements.md, "TensorFlow"), and the engine collects
    # before every sample.
    # Objects made from here on (the pipeline's) are collected as usual.
    gc.freeze()
    gpu, no_gpu = gpu_module.Gpu.find()
    channel.send(device=_device(gpu, no_gpu), versions=after_import.versions())
    if getattr(module, "REQUIRES", None) == "GPU" and gpu is None:
        channel.send(skipped=no_gpu)
        return 0

    # The peak is measured against the process before the pipeline exists:
    # a cache filled during warm-up is part of what the pipeline costs.
    import_baseline = probes.sample(process)
    hwm_reset = probes.reset_high_water_mark()
    start = phases.enter("setup")
    state = module.setup(**config["params"])
    seconds["setup"] = time.perf_counter() - start

    start = phases.enter("warm-up")
    for rep in range(config["warmup"]):
        module.repetition(state)
        channel.send(progress="warm-up", rep=rep)
    seconds["warm-up"] = time.perf_counter() - start

    measured, candidates = _repetitions(config, phases, module, state, process, gpu, hwm_reset)
    heap = _heap(config, phases, module, state)
    # Readings outside the samples, after the heap pass (whose memray capture they would enter):
    # memory per tf.data stage on one fresh iterator, then what keeps the type that grew most
    # alive (leakbench.engine.evidence).
    stages = chain = None
    if config.get("evidence", True):  # a longer look (leakbench.analysis.looks) reads none
        stages, chain = evidence.read(
            channel.send, state, measured["python_type_growth"], candidates, module, extra, seconds
        )
    del candidates

    channel.send(
        result={
            "import_baseline": import_baseline,
            **measured,  # baseline, samples, ..., trim
            "malloc_heap_unavailable": probes.malloc_heap_unavailable(),
            "heap": heap,
            "stages": stages,
            "reference_chain": chain,
            "seconds": seconds,
            "versions": after_import.versions(),
            "diagnostics": extra,
            # a check target learns in setup what one repetition of it is
            # (target.Adapted.repetition_text); a scenario module has none here:
            # its REPETITION is read from the file (contract.read_metadata)
            "repetition": getattr(module, "repetition_text", None),
        }
    )

    start = phases.enter("teardown")
    del state
    gc.collect()
    channel.send(teardown_seconds=time.perf_counter() - start)
    return 0


def _repetitions(
    config: dict, phases: _Phases, module, state, process: psutil.Process, gpu, hwm_reset
) -> tuple[dict, list]:
    """The measured repetitions, each sampled, and what is read once they are done: the result's
    fields of them by name, and the instances of the type that grew most (new_instances')."""
    start = phases.enter("repetitions")
    # resets the GPU peak: that of the measured repetitions alone
    gpu_problem = gpu and gpu.start()
    if gpu_problem:
        gpu = None
    # Which objects were there (the reference chain's candidates are the others): taken before
    # the baseline sample, so that the set's own memory is in the baseline and every sample.
    ids_baseline = references.object_ids()
    baseline = probes.sample(process, gpu)
    types_baseline = pytypes.type_counts()  # which types python_objects counts: the evidence
    # and at the middle (pytypes.type_growth: a one-off jump lifts one half only), counted into
    # a dict made here, before the first sample, so that
    # the middle reading adds nothing to the samples
    middle, types_middle = pytypes.middle_reps(config["reps"]), dict(types_baseline)
    samples = []
    for rep in range(config["reps"]):
        module.repetition(state)
        samples.append(probes.sample(process, gpu))
        phases.channel.send(sample=samples[-1], rep=rep)
        if rep + 1 == middle:
            pytypes.type_counts(into=types_middle)
    hwm = probes.high_water_mark_bytes() if hwm_reset else None
    gpu_peak = gpu.peak_bytes() if gpu else None
    type_growth = pytypes.type_growth(
        types_baseline, types_middle if middle else None, pytypes.type_counts(), config["reps"]
    )
    candidates = references.new_instances(type_growth, ids_baseline)
    del ids_baseline
    phases.seconds["repetitions"] = time.perf_counter() - start
    trim = probes.trim_malloc(process)  # after the peak is read: a trim lowers RSS
    measured = {  # in the result's order
        "baseline": baseline,
        "samples": samples,
        "high_water_mark_bytes": hwm,
        "python_type_growth": type_growth,
        "gpu_peak_bytes": gpu_peak,
        "gpu_unavailable": gpu_problem or None,
        "trim": trim,
    }
    return measured, candidates


def _heap(config: dict, phases: _Phases, module, state) -> dict | None:
    """The heap pass (heap.heap_pass), where the config and the scenario ask for one; else None."""
    # a scenario's HEAP_REPS caps the pass (leakbench.contract)
    heap_reps = min(config["heap_reps"], getattr(module, "HEAP_REPS", config["heap_reps"]))
    if heap_reps <= 0:
        return None
    # seconds: "heap" the tracked repetitions, "heap_tracker" memray's start and
    # stop, "heap_analysis" reading the capture back (the last two per pass, not per
    # repetition)
    phases.enter("heap")
    return heap_pass(
        module,
        state,
        heap_reps,
        Path(config["heap_file"]),
        lambda rep: phases.channel.send(progress="heap", rep=rep),
        phases.seconds,
    )


def _lost() -> int:
    """The exception being handled (a ChannelLost) on stderr, whose last line the parent tells
    (leakbench.engine.runner); the child's exit code."""
    try:
        traceback.print_exc()
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr closed too: the parent says the child had no output
        pass
    return 1


def _device(gpu, no_gpu: str | None) -> dict:
    """What the record's environment says about the device measured."""
    if gpu is None:
        return {"device": "CPU", "gpu": None, "gpu_unavailable": no_gpu}
    return {"device": gpu.device, "gpu": gpu.details(), "gpu_unavailable": None}


if __name__ == "__main__":
    sys.exit(main(json.loads(sys.argv[1])))
