"""A repetition that raises: the run must end `error` with the exception text."""
TITLE = "a repetition that raises"
SOURCE = "stateful functions"
REPETITION = "raise"
KIND = "growth"
SIZE_PARAM = "code"
PARAMS = {"code": 42}


def setup(code):
    return code


def repetition(code):
    raise RuntimeError(f"scenario exploded with code {code}")
