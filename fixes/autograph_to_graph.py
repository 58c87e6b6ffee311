"""An epoch function converted with tf.autograph.to_graph, called every epoch.

`tf.autograph.to_graph` rewrites a Python function's control flow into
TensorFlow ops, but what it returns is still a plain Python function, not a
`tf.function`: nothing caches a trace. Called eagerly, its `for batch in
dataset` loop becomes a dataset loop whose body is traced into a new graph
function at every call, and the runtime keeps each one. A training loop that
calls the converted epoch function once per epoch grows by one traced loop
body per epoch (a plain loop here, TF 2.21: about 150–220 KiB per call of the
glibc malloc heap, and ~200 more Python objects, Operations and
SymbolicTensors among them, whatever the number of batches).

tensorflow/tensorflow#29996 (June 2019, TF 2.0.0-beta0, Python 3.6.8, macOS)
reports exactly this: an epoch function over a batched `from_tensor_slices`
dataset, converted with `to_graph` and called 5,000 times, grows RSS steadily,
while the same function decorated with `@tf.function` does not. A TF team
member reproduced it on Colab with 2.0 beta; the thread is closed.

One repetition is EPOCHS_PER_REPETITION epochs (one call of the epoch
function each) over NUM_ROWS rows. The measurement should show memray's heap
and Python objects growing with every repetition; RSS follows more slowly.

Source: tensorflow/tensorflow#29996.
"""
import numpy as np
import tensorflow as tf

TITLE = "epoch function as a tf.function: traced once, reused every epoch"
SOURCE = "tensorflow/tensorflow#29996"
REPETITION = "EPOCHS_PER_REPETITION epochs, one call of the epoch function each"
KIND = "growth"
SIZE_PARAM = "epochs_per_repetition"
PARAMS = {"epochs_per_repetition": 2}

NUM_ROWS = 1024
BATCH_SIZE = 32                    # 32 steps per epoch
LEARNING_RATE = 0.01


def train_epoch(weights, dataset):
    for x, y in dataset:
        error = tf.reduce_sum(weights * x, axis=1) - y
        gradient = tf.reduce_mean(error[:, None] * x, axis=0)
        weights.assign_sub(LEARNING_RATE * gradient)


# tf.function converts the same code with AutoGraph, traces it once (the
# dataset loop included) and reuses that trace at every call.
train_epoch = tf.function(train_epoch)


def setup(epochs_per_repetition):
    x = np.random.default_rng(0).normal(0.0, 1.0, [NUM_ROWS, 2])
    y = x @ np.array([2.0, -1.0])
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH_SIZE)
    return tf.Variable([0.0, 0.0], dtype=tf.float64), ds, epochs_per_repetition


def repetition(state):
    weights, ds, epochs = state
    for _ in range(epochs):
        train_epoch(weights, ds)
