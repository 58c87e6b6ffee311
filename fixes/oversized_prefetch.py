"""A large prefetch buffer of large, unbatched elements.

`prefetch(BUFFER_SIZE)` keeps up to BUFFER_SIZE elements ready ahead of the
consumer. Put before `batch()`, each buffered element is one large record, and
the buffer holds BUFFER_SIZE × ELEMENT_BYTES: sized by a guess, with no memory
budget, it costs memory in proportion to the guess.

One repetition is one epoch; a training step of STEP_SECONDS per batch lets
the buffer fill, as a real model would, and so does the first step of each
epoch, slower (FIRST_STEP_SECONDS, as a real first step is). Without that
pause the buffer fills only as far as the producer outruns the consumer: at
4 × buffer_size (512 of 1,024 elements) that needs the producer twice as fast,
which two loaded cores did not always give, and the peak's exponent read 0.58
in one run and 0.46 in the next. The measurement should show the peak above
baseline rising with buffer_size.

Seed source: chaining/parallelism. See the tf.data performance guide,
"Prefetching" (https://www.tensorflow.org/guide/data_performance#prefetching).
"""
import time

import tensorflow as tf

TITLE = "batch first, then prefetch two batches"
SOURCE = "chaining/parallelism"
REPETITION = "one epoch over the dataset"
KIND = "peak"
SIZE_PARAM = "buffer_size"
PARAMS = {"buffer_size": 128}

ELEMENT_BYTES = 256 * 1024         # one float32 record of 65,536 values
NUM_ELEMENTS = 1024
BATCH_SIZE = 8
STEP_SECONDS = 0.002               # stands in for the model's training step
FIRST_STEP_SECONDS = 0.2           # the epoch's first step: the buffer fills meanwhile
PREFETCH_BATCHES = 2               # one batch in the step, one ready behind it


def setup(buffer_size):
    ds = tf.data.Dataset.range(NUM_ELEMENTS)
    ds = ds.map(lambda i: tf.fill([ELEMENT_BYTES // 4], tf.cast(i, tf.float32)))
    # Batch first, then prefetch two batches (4 MiB): buffer_size no longer sets
    # the memory. Not AUTOTUNE: its buffer grows with each run's timing (within
    # tf.data's RAM budget), and over 10 runs its peak rise spread from -24 to
    # +49 MiB, 1.5 x the bar where a fix must stay under 0.5 x (docs/repeatability.md).
    return ds.batch(BATCH_SIZE).prefetch(PREFETCH_BATCHES)


def repetition(ds):
    for step, _ in enumerate(ds):
        time.sleep(FIRST_STEP_SECONDS if step == 0 else STEP_SECONDS)
