"""A new Keras model built and fitted on a tf.data dataset, run after run, in one process.

A hyperparameter search, a cross-validation or a benchmark often trains model
after model in one loop: build, compile, `fit` on the same `tf.data`
dataset, drop the model, start again. Each model brings its layers,
variables, optimizer slots and the train function Keras traces for it (with
the dataset's iterator and distribution wrappers it is traced over). When
something process-wide still refers to a dropped model, none of that is
freed, and every run adds one more model. What holds it was not traced here;
on Keras 3, `clear_session()` does not release it.

- tensorflow/tensorflow#37505 (March 2020, TF 2.1.0, Python 3.7, Windows
  Server 2016): memory grows with consecutive training runs of `fit` in a
  loop. A user found it flat on tf-nightly (Sep. 2020) only when both
  `gc.collect()` and `tf.keras.backend.clear_session()` were called between
  runs; other users said it was fixed between 2.3 and 2.4. Closed, and
  reopened as #50379 (June 2021) by a user who still saw it.
- tensorflow/tensorflow#61791 (Sep. 2023, TF 2.11 to 2.13 and a 2.15
  nightly, Python 3.9 and 3.10): memory grows steadily with `fit` in a loop,
  `clear_session()` does not help, and the same code was flat on TF 2.9.2.
  Closed as stale.

A plain loop here (3 warm-ups, 12 repetitions of two models, each a 2-layer
dense net fitted one epoch on 8 batches of 64 × 32 float32, Python 3.11)
left 93 Python objects per repetition on TF 2.13.1 (Keras 2.13; held memory
flat), and 12,609 objects and 8,875 KiB per repetition on TF 2.21.0 (Keras
3.15). On 2.21.0 calling `tf.keras.backend.clear_session()` before each
model did not help (12,693 objects, 7,852 KiB per repetition). One model
built once, its initial weights restored before each run, stayed flat on
both (1.1 and 9.5 KiB per repetition, no objects). Through leakbench (one
model per repetition) the leak read 46 objects per repetition on 2.13.1 and
6,304 objects and 4,416 KiB of held memory on 2.21.0.

One repetition is MODELS_PER_REPETITION runs, each one epoch over the
dataset of NUM_EXAMPLES examples of FEATURES float32 values. The measurement
should show Python objects growing with every run, and on Keras 3 held
memory too.

Source: tensorflow/tensorflow#37505 (and #61791).
"""
import numpy as np
import tensorflow as tf

TITLE = "one Keras model for every run, its initial weights restored before each fit"
SOURCE = "tensorflow/tensorflow#37505"
REPETITION = "MODELS_PER_REPETITION runs, each one epoch of fit over the dataset"
KIND = "growth"
SIZE_PARAM = "models_per_repetition"
PARAMS = {"models_per_repetition": 1}

NUM_EXAMPLES = 512
FEATURES = 32                      # float32 values per example
HIDDEN_UNITS = 64
BATCH_SIZE = 64


def build_model():
    model = tf.keras.Sequential([
        tf.keras.Input((FEATURES,)),
        tf.keras.layers.Dense(HIDDEN_UNITS, activation="relu"),
        tf.keras.layers.Dense(1),
    ])
    model.compile(optimizer="adam", loss="mse")
    return model


def setup(models_per_repetition):
    rng = np.random.default_rng(0)
    x = rng.random((NUM_EXAMPLES, FEATURES), np.float32)
    y = rng.random((NUM_EXAMPLES, 1), np.float32)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH_SIZE)
    # Built once: one set of layers, variables and train function for every
    # run; its initial weights are kept to start each run from them.
    model = build_model()
    return {"ds": ds, "runs": models_per_repetition, "model": model, "initial": model.get_weights()}


def repetition(state):
    for _ in range(state["runs"]):
        # The initial weights again: each run starts from them without a new model. (The
        # optimizer's moments carry over; where a run must not see them, assign zeros to
        # model.optimizer.variables too: still no new objects.)
        state["model"].set_weights(state["initial"])
        state["model"].fit(state["ds"], epochs=1, verbose=0)
