"""Keras `model.fit` called on each new NumPy batch, as an online-training loop does.

`fit` is made for a dataset: called on NumPy arrays, it wraps them in a
`tf.data` pipeline (a data adapter that slices and batches the arrays through
mapped functions), builds a data handler, an iterator and callbacks, and
runs its epochs. A loop that trains on each batch as it arrives (from a
simulator, a queue, a stream) with `fit(x, y)` builds that pipeline anew at
every call, and on some releases part of what each new pipeline registers is
never released: memory grows with every call. `train_on_batch` runs one
step on the arrays it is given, with no dataset built.

tensorflow/tensorflow#33030 (Oct. 2019, TF 2.0), "Memory leak on TF 2.0 with
model.predict or/and model.fit with keras": memory grows as `fit` or
`predict` is called again and again. Users kept reporting it there into
Dec. 2022 (TF 2.11, Python 3.10, with `predict`), where
`clear_session()` after each call or a direct model call stopped it; the
`predict` docstring advises against calling it in a loop. Closed. In
tensorflow/tensorflow#44711 a Keras maintainer explained the cause for
`fit`, `evaluate` and `predict` alike: NumPy inputs become `tf.data`
datasets, copied, at every call.

A plain loop here (3 warm-ups, 12 repetitions of 4 `fit` calls of one epoch
on a 256 × 32 float32 batch, Python 3.11) kept 1,053 KiB per repetition on
TF 2.13.1 (RSS less malloc's free bytes; malloc in use +1,088), about
260 KiB per call, with no Python objects left; `train_on_batch` on the same
arrays kept 3.9. Through leakbench it read leak on TF 2.12.1 to 2.14.1
(held +858 to +1,086 KiB per repetition) and no-leak from 2.15.1 on (2.15.1:
+21.6). REPORTED states the thread's claim; what each release does is in the
committed results (results/records/).

One repetition is FITS_PER_REPETITION calls of `fit` on one batch of
BATCH_SIZE rows of FEATURES float32 values. Where the leak exists the
measurement should show held memory growing by a few hundred KiB per call.

Source: tensorflow/tensorflow#33030 (and #44711).
"""
import numpy as np
import tensorflow as tf

TITLE = "model.fit called on each new NumPy batch"
SOURCE = "tensorflow/tensorflow#33030"
REPORTED = {
    "issue": "tensorflow/tensorflow#33030",
    "leaks_on": ["2.0.0", "2.11.0"],
    "fixed_in": None,
    "note": "predict or fit called again and again on NumPy inputs; reported on 2.0 and, with predict, on "
            "2.11 (Python 3.10). #44711: NumPy inputs to fit, evaluate and predict become a tf.data dataset "
            "per call. Closed.",
}
REPETITION = "FITS_PER_REPETITION calls of model.fit on one NumPy batch"
KIND = "growth"
SIZE_PARAM = "fits_per_repetition"
PARAMS = {"fits_per_repetition": 4}

BATCH_SIZE = 256                   # rows per call
FEATURES = 32                      # float32 values per row: a 32 KiB batch
HIDDEN_UNITS = 64


def setup(fits_per_repetition):
    model = tf.keras.Sequential([
        tf.keras.Input((FEATURES,)),
        tf.keras.layers.Dense(HIDDEN_UNITS, activation="relu"),
        tf.keras.layers.Dense(1),
    ])
    model.compile(optimizer="adam", loss="mse")
    rng = np.random.default_rng(0)
    x = rng.random((BATCH_SIZE, FEATURES), np.float32)
    y = rng.random((BATCH_SIZE, 1), np.float32)
    return {"model": model, "x": x, "y": y, "calls": fits_per_repetition}


def repetition(state):
    for _ in range(state["calls"]):
        state["model"].fit(state["x"], state["y"], batch_size=BATCH_SIZE, epochs=1, verbose=0)
