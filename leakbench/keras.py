"""LeakWatch: a Keras callback that watches your own `model.fit` for leaks, by the engine's rules.

    from leakbench.keras import LeakWatch

    watch = LeakWatch()                          # one sample per epoch
    model.fit(ds, epochs=200, callbacks=[watch])
    print(watch.result.text())                  # also logged at the end of training

A thin adapter over leakbench.watch.Watch: the callback counts epochs (every_epochs), training
steps (every_steps) or calls of fit, evaluate and predict it is passed to (every_calls), and
the Watch samples (leakbench.online) and judges (leakbench.analysis.judge.sequential). Pass
the same LeakWatch to every call of a loop (a model fitted per fold, `fit` per batch, `predict`
in a loop): it keeps its samples across calls, and one sample is then `every_calls` calls.

Keras is imported when LeakWatch is first looked up, not with leakbench: the base class is Keras
3's `keras.callbacks.Callback`, or `tf.keras.callbacks.Callback` where the installed Keras is 2
(TensorFlow up to 2.15). A leak is logged (logger "leakbench.watch", a warning) as soon as it is
decided, printed where verbose, and stops training where stop_on_leak.
"""

from __future__ import annotations

from typing import Any

from leakbench.online import WatchResult
from leakbench.watch import BUDGET, Watch

UNITS = {"every_epochs": "epoch", "every_steps": "step", "every_calls": "call"}


def _base() -> type:
    """Keras's Callback class: Keras 3's, else tf.keras's (Keras 2)."""
    import keras  # type: ignore[import-untyped]

    if int(keras.__version__.split(".")[0]) >= 3:
        return keras.callbacks.Callback
    import tensorflow as tf

    return tf.keras.callbacks.Callback


class _Hooks:
    """LeakWatch's hooks on Keras's Callback, defined without Keras (_define's class takes them
    first): each steps or starts its Watch by what it counts (see the module docstring)."""

    counts: str  # "epoch", "step" or "call": what one unit of work is (UNITS)
    stop_on_leak: bool
    verbose: int
    result: WatchResult | None
    watch: Watch
    _in_fit: bool

    def _leak(self, found: WatchResult) -> None:
        self.result = found
        if self.verbose:
            print(found.text())
        model: Any = getattr(self, "model", None)
        if self.stop_on_leak and model is not None:
            model.stop_training = True

    def _call_ended(self) -> None:
        if self.counts == "call":
            self.watch.step()

    def on_train_begin(self, logs=None):
        self._in_fit = True
        self.watch.start()

    def on_train_batch_end(self, batch, logs=None):
        if self.counts == "step":
            self.watch.step()

    def on_epoch_end(self, epoch, logs=None):
        if self.counts == "epoch":
            self.watch.step()

    def on_train_end(self, logs=None):
        self._in_fit = False
        self._call_ended()
        self.result = self.watch.result()
        if self.verbose:
            print(self.result.text())

    def on_test_begin(self, logs=None):
        if not self._in_fit:  # a validation pass inside fit is part of its epoch
            self.watch.start()

    def on_test_end(self, logs=None):
        if not self._in_fit:
            self._call_ended()

    def on_predict_begin(self, logs=None):
        self.watch.start()

    def on_predict_end(self, logs=None):
        self._call_ended()


def _define() -> type:
    """LeakWatch, on Keras's Callback (see the module docstring)."""

    class LeakWatch(_Hooks, _base()):  # type: ignore[misc]
        """Watch the training it is passed to (see the module docstring).

        every_epochs, every_steps, every_calls: one sample per this many epochs, training steps
        or calls of fit/evaluate/predict; give one (default: every_epochs=1). warmup, reps,
        budget, objects, causes: as leakbench.watch.Watch (warm-up samples skipped, 3; samples
        before the first look, 12; the share of the time sampling may take, 1 %: the cheap
        reads every epoch, a full collection as often as it allows). stop_on_leak: set
        model.stop_training once a leak is decided. verbose: 1 prints a leak when decided and
        the report at the end of each fit; 0 leaves both to the log. `result`: the
        WatchResult as of the last end of training (or the leak), None before.
        """

        def __init__(
            self,
            every_epochs: int | None = None,
            every_steps: int | None = None,
            every_calls: int | None = None,
            *,
            warmup: int | None = None,
            reps: int | None = None,
            budget: float | None = BUDGET,
            objects: bool = True,
            stop_on_leak: bool = False,
            verbose: int = 1,
            causes: bool = True,
        ):
            super().__init__()
            given = {
                k: v
                for k, v in zip(UNITS, (every_epochs, every_steps, every_calls))
                if v is not None
            }
            if len(given) > 1:
                raise ValueError(f"give one of {', '.join(UNITS)}, not {' and '.join(given)}")
            (option, every), *_ = given.items() or {"every_epochs": 1}.items()
            self.counts = UNITS[option]
            self.stop_on_leak, self.verbose = stop_on_leak, verbose
            self.result = None
            self._in_fit = False
            self.watch = Watch(
                every,
                unit=self.counts,
                warmup=warmup,
                reps=reps,
                budget=budget,
                objects=objects,
                on_leak=self._leak,
                causes=causes,
            )

    return LeakWatch


def __getattr__(name: str) -> Any:
    """LeakWatch, defined on first use (Keras is imported then, not with leakbench)."""
    if name == "LeakWatch":
        found = _define()
        globals()[name] = found
        return found
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
