"""A tf.function retraced at every call by a Python number argument.

`tf.function` traces a new concrete function for every distinct Python value
it is called with (Python scalars are part of the trace's signature). A
learning rate computed as a Python float changes at every step, so every call
traces anew: a new graph, a new concrete function in the function's cache,
and the time to trace it. TensorFlow warns after a few retraces; the memory
keeps growing (5.0 MB per 50 retraces in a plain loop here).

One repetition is one epoch of NUM_BATCHES steps. The measurement should show
RSS and Python objects growing with every repetition.

Seed source: stateful functions. See "Better performance with tf.function",
"Rules of tracing" (https://www.tensorflow.org/guide/function#rules_of_tracing).
"""
import tensorflow as tf

TITLE = "tf.function called with a variable: one trace for every value"
SOURCE = "stateful functions"
REPETITION = "one epoch of NUM_BATCHES training steps"
KIND = "growth"
SIZE_PARAM = "num_batches"
PARAMS = {"num_batches": 10}

BATCH_SIZE = 32
FEATURES = 64


@tf.function
def train_step(batch, learning_rate):
    return tf.reduce_mean(batch) * learning_rate


def setup(num_batches):
    ds = tf.data.Dataset.range(num_batches * BATCH_SIZE)
    ds = ds.map(lambda i: tf.fill([FEATURES], tf.cast(i, tf.float32))).batch(BATCH_SIZE)
    return ds, tf.Variable(0.1, dtype=tf.float32, trainable=False)


def repetition(state):
    ds, learning_rate = state
    for batch in ds:
        # The same schedule, 0.1 * 0.999 ** step, kept in a variable and decayed by a
        # TensorFlow op. Not tf.constant(a new Python float) at every step: TensorFlow
        # keeps every Python scalar it converts in a process-wide cache that is never
        # emptied (TFE_TensorHandleCache), ~0.6 KiB a value (docs/measurements.md).
        learning_rate.assign(learning_rate * 0.999)
        # A tensor argument is traced by dtype and shape, not value: one trace
        # serves every step (so would input_signature or reduce_retracing=True).
        train_step(batch, learning_rate)
