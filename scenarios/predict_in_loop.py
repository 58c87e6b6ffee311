"""Keras `model.predict` on a NumPy batch, called again and again in a loop.

`predict` is made for a whole dataset: it wraps its NumPy input in a
`tf.data` pipeline (a data adapter that slices the arrays through mapped
functions), builds a data handler and an iterator over it, and runs its
predict function over the batches. Called once per small batch, every call
builds that pipeline anew, and on some releases part of what each new
pipeline registers is never released: memory grows with every call.

tensorflow/tensorflow#44711 (Nov. 2020, TF 2.3): memory grows when
`model.predict` is called in a loop on NumPy inputs, and `gc.collect()` brings
it back. A Keras maintainer answered that `predict` should not be used in a
loop: its NumPy inputs are converted to `tf.data` datasets, copying the data,
and reference cycles may hold it; call the model directly,
`model(x, training=False)`, wrapped in a `tf.function` if speed matters. The
thread closed without a fix. The same advice is in `predict`'s docstring.

A plain loop here (3 warm-ups, 12 repetitions of 20 `predict` calls on a
256 × 32 float32 batch, Python 3.11) kept 5,157 KiB per repetition on TF
2.13.1 (RSS less malloc's free bytes; malloc in use +5,049), about 250 KiB
per call, with no Python objects left; on TF 2.21.0 (Keras 3) it kept 18.6
KiB per repetition (p = 0.42): flat. Through leakbench (4 calls per
repetition) it read leak on TF 2.12.1 to 2.14.1 (held +782 to +1,014 KiB per
repetition) and no-leak from 2.15.1 on. REPORTED states the thread's claim;
what each release does is in the committed results (results/records/).

One repetition is PREDICTS_PER_REPETITION `predict` calls on the same batch
of BATCH_SIZE rows of FEATURES float32 values. Where the leak exists the
measurement should show held memory growing by a few hundred KiB per call.

Source: tensorflow/tensorflow#44711.
"""
import numpy as np
import tensorflow as tf

TITLE = "model.predict on a NumPy batch, called in a loop"
SOURCE = "tensorflow/tensorflow#44711"
REPORTED = {
    "issue": "tensorflow/tensorflow#44711",
    "leaks_on": ["2.3.0"],
    "fixed_in": None,
    "note": "predict in a loop on NumPy inputs, which predict turns into a tf.data dataset per call; "
            "gc.collect() gave the memory back there. The maintainer's advice: call the model directly. "
            "Closed without a fix.",
}
REPETITION = "PREDICTS_PER_REPETITION calls of model.predict on one NumPy batch"
KIND = "growth"
SIZE_PARAM = "predicts_per_repetition"
PARAMS = {"predicts_per_repetition": 4}

BATCH_SIZE = 256                   # rows per call
FEATURES = 32                      # float32 values per row: a 32 KiB batch
HIDDEN_UNITS = 64


def setup(predicts_per_repetition):
    model = tf.keras.Sequential([
        tf.keras.Input((FEATURES,)),
        tf.keras.layers.Dense(HIDDEN_UNITS, activation="relu"),
        tf.keras.layers.Dense(1),
    ])
    batch = np.random.default_rng(0).random((BATCH_SIZE, FEATURES), np.float32)
    return {"model": model, "batch": batch, "calls": predicts_per_repetition}


def repetition(state):
    for _ in range(state["calls"]):
        state["model"].predict(state["batch"], verbose=0)
