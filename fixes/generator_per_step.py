"""A new from_generator dataset at every step, iterated once and dropped.

Some training loops wrap each step's fresh examples (from a simulator, a
queue, a replay buffer) in a new `Dataset.from_generator` and drop it after
one pass. Each call of `from_generator` makes a `_GeneratorState` for the
generator and traces three `numpy_function`s that start, step and finalize
it. In eager mode script_ops.py ties each such function's lifetime to the
process-wide default graph (`_py_funcs_used_in_graph`), which is never
destroyed: dropping the dataset frees its tensors, but the generator state,
the three wrappers and their cells, dicts and closures stay for the life of
the process, however small the generator.

tensorflow/tensorflow#37653 (March 2020, TF 2.1.0, Python 3.6.6, Ubuntu
18.04), "Memory Leak in tf.data.Dataset.from_generator": the same day a TF
engineer counted what 100 iterations left behind: +100 `_GeneratorState`,
+700 cells, +600 dicts, +500 functions, +500 tuples, +300 KeyedRefs, one
generator state and its wrappers per dataset. The thread, later labelled
TF 2.7 and "awaiting response", is closed. tensorflow/tensorflow#123530
(opened July 2026, merged), for the same leak reported again as #123269
(TF 2.20.0), keeps these references with the function graph being traced
rather than the default graph; TF 2.21.0's script_ops.py does not have it.

In a plain loop here (TF 2.21.0, Python 3.11) each dataset left 33 Python
objects behind: one `_GeneratorState`, 6 functions and a method (among them
the three wrappers the default graph keeps), about 7 cells, 6 tuples,
5 dicts and 3 KeyedRefs. That is about 3 KiB, mostly in Python's own object
allocator: over 12 repetitions RSS did not move and the malloc heap grew
5.5 KiB/repetition, about what four epochs over any dataset cost on TF 2.21
(4 KiB). The fix builds the dataset once: a generator that reads the
current step when each epoch starts serves every step, and the count stays
flat.

One repetition is STEPS_PER_REPETITION steps, each building a dataset over
NUM_ELEMENTS elements of ELEMENT_BYTES, one batch through it, and dropping
it. The measurement should show Python objects growing by about 33 per step,
every repetition; bytes grow too slowly to see in a short run.

Source: tensorflow/tensorflow#37653.
"""
import numpy as np
import tensorflow as tf

TITLE = "one from_generator dataset for every step, its generator reading the step from state"
SOURCE = "tensorflow/tensorflow#37653"
REPORTED = {
    "issue": "tensorflow/tensorflow#37653",
    "leaks_on": ["2.1.0", "2.20.0"],
    "fixed_in": None,
    "note": "reported on 2.1.0 (#37653, closed unfixed) and again on 2.20.0 (#123269); #123530 (merged "
            "July 2026) ties the wrappers to the traced function's graph; no release held it by 2.21.0",
}
REPETITION = "STEPS_PER_REPETITION training steps, one from_generator epoch of one batch each"
KIND = "growth"
SIZE_PARAM = "steps_per_repetition"
PARAMS = {"steps_per_repetition": 4}

NUM_ELEMENTS = 32                  # examples per step
ELEMENT_BYTES = 4 * 1024           # float32: 1,024 values
BATCH_SIZE = NUM_ELEMENTS          # a step's examples in one batch


def step_examples(step):
    """Stands in for the examples collected for one step."""
    for i in range(NUM_ELEMENTS):
        yield np.full(ELEMENT_BYTES // 4, step + i, np.float32)


def setup(steps_per_repetition):
    state = {"step": 0, "steps": steps_per_repetition}
    # Built once: TensorFlow calls the generator anew at each epoch, and it
    # reads the current step from the state then.
    state["ds"] = tf.data.Dataset.from_generator(
        lambda: step_examples(state["step"]),
        output_signature=tf.TensorSpec([ELEMENT_BYTES // 4], tf.float32))
    return state


def repetition(state):
    for _ in range(state["steps"]):
        state["step"] += 1
        ds = state["ds"]  # the same dataset: no new generator state or wrappers per step
        for _ in ds.batch(BATCH_SIZE):
            pass
