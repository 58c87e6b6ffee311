"""A watched job, run by tests/test_watch.py and tests/test_keras_watch.py in a capped, timed child
(leakbench.engine.supervise, as the engine's children are): never run a leaky one without them.

    python watch_job.py loop  PAIR VARIANT OUT.json [MAX_SAMPLES]
    python watch_job.py keras PAIR VARIANT OUT.json [MAX_SAMPLES]

loop: the pair's file (scenarios/ or fixes/), setup(**PARAMS) once, then repetition(state) in a
plain loop under leakbench.watch.watch(every=1): one sample per repetition, as the engine's.
keras: the pair's Keras work written as a user would, LeakWatch passed to its fit or predict
calls (every_calls = the calls of the engine's repetition); a fix whose work takes no callbacks
(train_on_batch, a direct model call) steps the callback's Watch itself.
Stops at the first decided round (or MAX_SAMPLES samples, MOST by default) and writes the
WatchResult as JSON.
"""

import importlib.util
import json
import os
import sys
from pathlib import Path

from leakbench.engine import supervise
from leakbench.watch import watch

ROOT = Path(__file__).resolve().parents[2]
FOLDER = {"leaky": "scenarios", "fixed": "fixes"}
# A line every this many samples while the watch is undecided (its looks go on sample by sample
# up to MAX_SAMPLES where a rate sits near its bar): tests/watched.py times out on no progress.
PROGRESS_EVERY = 12
# Samples a job may take to decide. A rate near its bar takes the watch many: predict_in_loop's
# leaky side on TensorFlow 2.21 keeps about +9 KiB/rep (bar 13) after a one-off +28 MiB near its
# 10th sample; replayed from each of samples 1-21 of a 300-sample series (one job, budget=None),
# 19 starts decided no-leak at 206-258 samples (docs/watch.md, "Checked against leakbench run").
MOST = 300


def load(pair: str, variant: str):
    path = ROOT / FOLDER[variant] / f"{pair}.py"
    spec = importlib.util.spec_from_file_location(f"watched_{pair}_{variant}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def loop_job(pair: str, variant: str):
    """A custom loop: the pair's repetition, one step each."""
    s = load(pair, variant)
    state = s.setup(**s.PARAMS)
    w = watch(every=1, budget=None, causes=False)

    def step():
        s.repetition(state)
        w.step()

    return w, step


def keras_job(pair: str, variant: str):
    """The pair's Keras work with LeakWatch: (its Watch, one repetition's work)."""
    from leakbench.keras import LeakWatch

    s = load(pair, variant)
    state = s.setup(**s.PARAMS)
    if pair == "fit_models_in_loop":
        lw = LeakWatch(every_calls=state["runs"], budget=None, verbose=0, causes=False)

        def step():
            for _ in range(state["runs"]):
                if variant == "leaky":
                    model = s.build_model()
                else:
                    model = state["model"]
                    model.set_weights(state["initial"])
                model.fit(state["ds"], epochs=1, verbose=0, callbacks=[lw])

    elif pair == "fit_per_batch":
        lw = LeakWatch(every_calls=state["calls"], budget=None, verbose=0, causes=False)

        def step():
            for _ in range(state["calls"]):
                if variant == "leaky":
                    state["model"].fit(
                        state["x"],
                        state["y"],
                        batch_size=s.BATCH_SIZE,
                        epochs=1,
                        verbose=0,
                        callbacks=[lw],
                    )
                else:  # train_on_batch takes no callbacks: the callback's Watch is stepped
                    state["model"].train_on_batch(state["x"], state["y"])
                    lw.watch.step()

    elif pair == "predict_in_loop":
        lw = LeakWatch(every_calls=state["calls"], budget=None, verbose=0, causes=False)

        def step():
            for _ in range(state["calls"]):
                if variant == "leaky":
                    state["model"].predict(state["batch"], verbose=0, callbacks=[lw])
                else:  # a direct call takes no callbacks: the callback's Watch is stepped
                    state["model"](state["batch"], training=False)
                    lw.watch.step()

    else:
        raise SystemExit(f"no Keras job for {pair}")
    return lw.watch, step


def main(kind: str, pair: str, variant: str, out: str, most: str = str(MOST)) -> None:
    supervise.die_with_parent(os.getppid(), reaper=False)  # no leak outlives its supervisor
    # each phase in the log as it starts: a job that hangs shows where (its log is the test's)
    print("building the job", flush=True)
    w, step = (loop_job if kind == "loop" else keras_job)(pair, variant)
    print("watching", flush=True)  # nothing printed per step: the watch measures this process
    with w:
        seen = w.result()  # once a step: a result copies the series in the measured process
        while seen.rounds == 0 and seen.samples < int(most):
            step()
            seen = w.result()
            if seen.samples and seen.samples % PROGRESS_EVERY == 0 and seen.rounds == 0:
                # still undecided: progress for the supervisor's no-progress timeout
                print(f"{seen.samples} samples, undecided: {seen.pending}", flush=True)
    found = seen.as_dict()
    print(
        f"{found['verdict'] or 'undecided'} at {found['samples']} samples; leaving the job",
        flush=True,
    )
    found.pop("series")
    Path(out).write_text(json.dumps(found))


if __name__ == "__main__":
    main(*sys.argv[1:])
