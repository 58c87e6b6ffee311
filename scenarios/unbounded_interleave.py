"""Parallel interleave over every input at once, each input buffering.

`interleave(cycle_length=NUM_INPUTS, num_parallel_calls=AUTOTUNE)` opens every
input at the same time, and each inner pipeline here keeps its own prefetch
buffer of INNER_BUFFER elements. Memory is then NUM_INPUTS × INNER_BUFFER ×
ELEMENT_BYTES, plus interleave's own per-input buffers: it grows with the
number of files, which is what grows when the data set does.

One repetition is one epoch; a training step of STEP_SECONDS per batch lets
the buffers fill, as a real model would. The measurement should show the peak
above baseline rising with num_inputs.

Seed source: chaining/parallelism. See the tf.data performance guide,
"Parallelizing data extraction" (https://www.tensorflow.org/guide/data_performance).
"""
import time

import tensorflow as tf

TITLE = "interleave with cycle_length = number of inputs and AUTOTUNE"
SOURCE = "chaining/parallelism"
REPETITION = "one epoch over all inputs"
KIND = "peak"
SIZE_PARAM = "num_inputs"
PARAMS = {"num_inputs": 16}
# A fixed mmap threshold: glibc's dynamic one rises after the first 256 KiB tensor is freed, and
# later tensors come from arenas that keep what was freed resident, so the peak read 28-204 MiB of
# malloc's free bytes on top of the pipeline's own (the fix's rise 16 -> 64 inputs spread over
# -39 to +116 MiB on TF 2.21; with the threshold fixed, +5 to +13). Both variants, so the pair
# differs only in its pipeline.
ENV = {"MALLOC_MMAP_THRESHOLD_": "131072"}

ELEMENT_BYTES = 256 * 1024         # one float32 record of 65,536 values
ELEMENTS_PER_INPUT = 24
INNER_BUFFER = 16                  # each input's own prefetch buffer
STEP_SECONDS = 0.002               # stands in for the model's training step


def read_input(i):
    """One input "file": ELEMENTS_PER_INPUT records, prefetched."""
    records = tf.data.Dataset.range(ELEMENTS_PER_INPUT)
    records = records.map(lambda j: tf.fill([ELEMENT_BYTES // 4], tf.cast(i + j, tf.float32)))
    return records.prefetch(INNER_BUFFER)


def setup(num_inputs):
    ds = tf.data.Dataset.range(num_inputs)
    ds = ds.interleave(read_input, cycle_length=num_inputs, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(8)


def repetition(ds):
    for _ in ds:
        time.sleep(STEP_SECONDS)
