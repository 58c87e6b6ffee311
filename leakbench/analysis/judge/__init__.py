"""The judge: every rule from a run's measurements to a record's verdict and the number it rests on.

Read protocol.py first: it is the verdict's protocol from top to bottom (the first run's
reading, whether to measure again and how long, what a longer look decides, the decision with
its number). The rules it applies are verdict.py's (a first run's signals and word), looks.py's
(a confirmation's and an extension's) and decision.py's (which number decided). The engine
(leakbench.measure) asks protocol.next_look what to run next and hands each run to protocol.take.
"""
