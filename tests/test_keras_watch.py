"""leakbench.keras.LeakWatch: the engine's verdict from inside the user's own `fit`/`predict`.

Without TensorFlow: leakbench imports without Keras (LeakWatch is defined on first use). With
it (`tf`): the suite's Keras pairs written as a user would, LeakWatch passed to their calls,
each in a capped, timed child (tests/watched.py), read what `leakbench run` committed for the
same release (results/records/vm/tf-<version>.jsonl).
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from watched import assert_reads_as_run


def test_leakbench_and_its_keras_module_import_without_keras():
    code = (
        "import sys, leakbench.keras, leakbench.watch\n"
        "assert 'keras' not in sys.modules and 'tensorflow' not in sys.modules, 'imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


@pytest.mark.tf
def test_leakwatch_is_a_keras_callback_and_takes_one_unit():
    import keras

    from leakbench.keras import LeakWatch

    assert isinstance(LeakWatch(), keras.callbacks.Callback)
    assert LeakWatch(every_steps=50).watch.every == 50
    with pytest.raises(ValueError, match="give one of"):
        LeakWatch(every_epochs=1, every_steps=10)


PAIRS = ["fit_models_in_loop", "fit_per_batch", "predict_in_loop"]


@pytest.mark.tf
@pytest.mark.parametrize("variant", ["leaky", "fixed"])
@pytest.mark.parametrize("pair", PAIRS)
def test_leakwatch_reads_what_leakbench_run_reads(pair, variant, tmp_path):
    assert_reads_as_run("keras", pair, variant, tmp_path)
