"""A from_generator closure capturing each fold's data, a new dataset per fold.

Cross-validation builds one dataset per fold. Here each fold's features are
loaded into a NumPy array and a generator defined inside `build_dataset`
yields its rows: the generator is a closure, and the array is one of its
cells. `Dataset.from_generator` wraps the generator in Python functions
(`numpy_function`s that start, step and finalize it) and, in eager mode,
TensorFlow ties those functions' lifetime to the process-wide default graph
(`_py_funcs_used_in_graph` in script_ops.py): dropping the dataset does not
free them, so the closure and the fold's array stay for the life of the
process. One fold's data more per fold.

tensorflow/tensorflow#57690 (Sept. 2022, TF 2.10.0, Python 3.10.4, Ubuntu
22.04) reports it with an object whose `__del__` is never called after three
folds, each building a `from_generator` dataset over a generator that
captures it, and names cross-validation as where it hurts; the thread closed
as stale. In a plain loop here (TF 2.21, Python 3.11) each 8 MiB fold stayed:
+8.2 MB of RSS and of the malloc heap per fold. The fix builds the dataset
once, in setup, over a generator that loads the current fold (read from the
state) when each epoch starts: the fold is freed when its epoch ends, and no
dataset is built per fold, so nothing stays per fold. Passing the fold number
through `args=` to a module-level generator, an earlier fix, freed the fold
but still built a dataset per fold, and each left its generator state and
wrapper functions behind (tensorflow/tensorflow#37653; see
generator_per_step): 31 Python objects and a few KiB per fold here.

One repetition is one fold: load ROWS_PER_FOLD rows of ROW_BYTES, build the
dataset, one epoch over it. The measurement should show RSS, the malloc heap
and memray's heap growing by about ROWS_PER_FOLD × ROW_BYTES per repetition.

Source: tensorflow/tensorflow#57690.
"""
import numpy as np
import tensorflow as tf

TITLE = "one from_generator dataset for all folds, each epoch loading the current fold"
SOURCE = "tensorflow/tensorflow#57690"
REPORTED = {
    "issue": "tensorflow/tensorflow#57690",
    "leaks_on": ["2.10.0"],
    "fixed_in": None,
    "note": "closed as stale; measured here on every release 2.12.1-2.21.0, and gone from the "
            "2.23 nightly, with generator_per_step's leak (#37653): the generator state no longer "
            "lives in the process-wide graph",
}
REPETITION = "one cross-validation fold: load, build the dataset, one epoch"
KIND = "growth"
SIZE_PARAM = "rows_per_fold"
PARAMS = {"rows_per_fold": 1024}

ROW_BYTES = 8 * 1024               # float64: 1,024 values; 8 MiB per fold of 1,024 rows
BATCH_SIZE = 64


def load_fold(fold, rows_per_fold):
    """Stands in for reading one fold's features from disk."""
    return np.full([rows_per_fold, ROW_BYTES // 8], fold, np.float64)


def build_dataset(state):
    def rows():
        # The current fold, loaded when an epoch starts and freed when it ends:
        # the closure holds the state (a fold number), never a fold's array.
        yield from load_fold(state["fold"], state["rows_per_fold"])

    return tf.data.Dataset.from_generator(
        rows, output_signature=tf.TensorSpec([ROW_BYTES // 8], tf.float64))


def setup(rows_per_fold):
    state = {"fold": 0, "rows_per_fold": rows_per_fold}
    state["ds"] = build_dataset(state)  # one dataset for all folds: none built, so none kept, per fold
    return state


def repetition(state):
    state["fold"] += 1
    ds = state["ds"]  # a new epoch of the same dataset reads the new fold
    for _ in ds.batch(BATCH_SIZE):
        pass
