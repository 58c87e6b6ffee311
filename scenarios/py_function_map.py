"""A map through tf.py_function, once per element.

`tf.py_function` runs eager Python inside the pipeline: its inputs arrive as
EagerTensors and, so that gradients can flow through it, each call goes
through the eager function machinery with a tape cache. `tf.numpy_function`
runs the same Python on NumPy arrays with none of that. A pipeline that needs
no gradient through its Python step pays for py_function's machinery at every
element, and on some releases it kept a little of it every call.

- tensorflow/tensorflow#35010 (Dec. 2019, TF 2.0.0, Python 3.6.3, macOS):
  memory grows linearly with the number of calls of a Keras layer that calls
  `py_function` in eager mode. A later comment (TF 2.4) traced the growth to
  py_function's tape cache and found `numpy_function` free of it. Closed.
- tensorflow/tensorflow#61344 (July 2023, TF 2.13.0, Python 3.8, Ubuntu 20.04
  and Colab): iterating a dataset whose `map` calls `py_function` grows memory
  without bound, past 30 GB in a `model.fit` that needed under 3 GB for its
  first epoch. In Oct. 2024 the reporter measured 2.13, 2.15 and 2.17 and
  found the leak gone somewhere between 2.13 and 2.15.0. Closed as stale.

A plain loop here (10 epochs of 2,000 elements) grew 0.41 MB per epoch on TF
2.13.1 and 0.09 MB on 2.21.0. REPORTED states the thread's claim; what each
release does is in the committed results (results/records/tf-<v>.jsonl).

One repetition is one epoch of NUM_ELEMENTS elements, one py_function call
each. Where the leak exists the measurement should show the heap (and, with
enough calls, RSS) growing with every repetition.

Source: tensorflow/tensorflow#61344 (and #35010).
"""
import tensorflow as tf

TITLE = "map through tf.py_function, one call per element"
SOURCE = "tensorflow/tensorflow#61344"
REPORTED = {
    "issue": "tensorflow/tensorflow#61344",
    "leaks_on": ["2.13.0"],
    "fixed_in": "2.15.0",
    "note": "the reporter's later measurement: gone somewhere between 2.13 and 2.15.0 (2.17 also free of "
            "it); #35010 reported the same growth on 2.0.0 from py_function's tape cache",
}
REPETITION = "one epoch over the dataset"
KIND = "growth"
SIZE_PARAM = "num_elements"
PARAMS = {"num_elements": 2000}

ELEMENT_BYTES = 1024               # float32: 256 values
BATCH_SIZE = 50


def augment(x):
    return x * 2.0


def setup(num_elements):
    ds = tf.data.Dataset.range(num_elements)
    ds = ds.map(lambda i: tf.fill([ELEMENT_BYTES // 4], tf.cast(i, tf.float32)))
    ds = ds.map(lambda x: tf.py_function(augment, [x], tf.float32))
    return ds.batch(BATCH_SIZE)


def repetition(ds):
    for _ in ds:
        pass
