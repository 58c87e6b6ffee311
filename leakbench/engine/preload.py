"""Whether the dynamic loader will find the libraries LD_PRELOAD names, asked the loader's way.

ld.so(8): LD_PRELOAD lists shared objects separated by spaces or colons. One with a slash is
that file. A bare name (a soname: `libtcmalloc_minimal.so.4`) is searched for as a DT_NEEDED
library is: in LD_LIBRARY_PATH's directories, then in the loader's cache (/etc/ld.so.cache, what
`ldconfig -p` prints), then in the default directories (/lib, /usr/lib; lib64 on some systems).
So a scenario's ENV names the soname, and finds the library on any distribution and
architecture whose package installs it (the run paths of the executable itself are not read).

A library the loader does not find is no error in the child: ld.so warns on stderr and the
process runs on glibc's malloc, so the measurement would be of the wrong allocator. The parent
looks first, the loader's way, and a library the machine lacks makes the record read `skipped`
(leakbench.measure), with `missing`'s line as the reason, as a GPU the machine lacks does. A
library built for another machine (ELF class or machine unlike the interpreter's) counts as
missing: the loader skips it too.

Nothing is loaded into this process (replacing malloc in a running process is unsafe): the
library's ELF header is read as a file, never dlopen'ed.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import sysconfig

from leakbench.contract_rules import ELF_MAGIC, elf_header, preloads

# where ldconfig lives when PATH (a user's, without the sbin directories) does not name it
LDCONFIG_DIRS = ("/sbin", "/usr/sbin")
LDCONFIG_TIMEOUT_SECONDS = 10.0
# glibc's default directories (after the multiarch ones: default_dirs)
DEFAULT_DIRS = ("/lib64", "/usr/lib64", "/lib", "/usr/lib")
# how to get the libraries some pairs preload, by soname
PACKAGES = {
    "libtcmalloc_minimal.so.4": "Debian, Ubuntu: apt-get install libtcmalloc-minimal4; "
    "Fedora: dnf install gperftools-libs",
    "libjemalloc.so.2": "Debian, Ubuntu: apt-get install libjemalloc2; "
    "Fedora: dnf install jemalloc",
}


def missing(env: dict) -> str | None:
    """None if the dynamic loader will find every library `env`'s LD_PRELOAD names, else one
    line naming the first it will not and how to get it. `env`: the variables added to the
    child's environment (LD_LIBRARY_PATH from there, else from this process's)."""
    libraries = preloads(env.get("LD_PRELOAD", ""))
    if not libraries:
        return None
    search = env.get("LD_LIBRARY_PATH", os.environ.get("LD_LIBRARY_PATH", ""))
    cache: dict[str, list[str]] | None = None
    for lib in libraries:
        if "/" in lib:
            if not os.path.exists(lib):
                return f"LD_PRELOAD names {lib}, which does not exist; {_how(lib)}"
            if not fits(lib):
                known = f"; {_how(lib)}" if os.path.basename(lib) in PACKAGES else ""
                return (
                    f"LD_PRELOAD names {lib}, which is not a shared library for this machine "
                    f"({platform.machine()}){known}"
                )
            continue
        if cache is None:
            cache = loader_cache()
        if not any(fits(p) for p in candidates(lib, search, cache)):
            where = (
                "the dynamic loader does not find it (ldconfig -p, LD_LIBRARY_PATH, "
                "its default directories)"
                if cache
                else f"it is in neither LD_LIBRARY_PATH nor {', '.join(default_dirs())}, and "
                + (
                    "ldconfig was not found to read the loader's cache"
                    if ldconfig() is None
                    else "ldconfig -p listed no cache to look in"
                )
            )
            return f"LD_PRELOAD names {lib}, which is not installed: {where}; {_how(lib)}"
    return None


def candidates(soname: str, search: str, cache: dict[str, list[str]]) -> list[str]:
    """The files the loader would try for a bare `soname`, in its order: LD_LIBRARY_PATH's
    directories (`search`, colon- or semicolon-separated), the cache's entries, the default
    directories."""
    dirs = [d for d in search.replace(";", ":").split(":") if d]
    return [
        *(os.path.join(d, soname) for d in dirs),
        *cache.get(soname, []),
        *(os.path.join(d, soname) for d in default_dirs()),
    ]


def loader_cache() -> dict[str, list[str]]:
    """soname -> paths, from `ldconfig -p` (the loader's cache, every architecture's entries);
    {} where ldconfig is not found, fails, or prints no cache (musl's does nothing)."""
    found = ldconfig()
    if found is None:
        return {}
    try:
        done = subprocess.run(
            [found, "-p"],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=LDCONFIG_TIMEOUT_SECONDS,
            env={**os.environ, "LC_ALL": "C", "LANG": "C"},
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return {}
    return parse_cache(done.stdout) if done.returncode == 0 else {}


def ldconfig() -> str | None:
    """Where ldconfig is: on PATH, else in LDCONFIG_DIRS; None if nowhere."""
    return shutil.which(
        "ldconfig", path=os.pathsep.join([os.environ.get("PATH", ""), *LDCONFIG_DIRS])
    )


def parse_cache(text: str) -> dict[str, list[str]]:
    """`ldconfig -p`'s lines ("\\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6")
    as soname -> paths, in the cache's order."""
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        entry, arrow, path = line.partition(" => ")
        if arrow and entry.strip():
            found.setdefault(entry.split()[0], []).append(path.strip())
    return found


def default_dirs() -> list[str]:
    """The directories the loader searches after its cache (`ld.so --help` lists them): Debian's
    multiarch ones for this interpreter (/lib/x86_64-linux-gnu), then glibc's defaults."""
    triplet = sysconfig.get_config_var("MULTIARCH")
    multiarch = [f"/lib/{triplet}", f"/usr/lib/{triplet}"] if triplet else []
    return [*multiarch, *DEFAULT_DIRS]


def fits(path: str) -> bool:
    """True if `path` is a file whose ELF class, byte order and machine are the interpreter's (the
    measured child's): the loader skips any other. True for any file where the interpreter's own
    header cannot be read; False where the library's cannot."""
    mine = _elf_kind(sys.executable)
    theirs = _elf_kind(path)
    return theirs is not None and (mine is None or theirs == mine)


def _elf_kind(path: str) -> tuple[int, int, bytes] | None:
    """(class, byte order, e_machine bytes) from a regular file's ELF header; None if it is not
    a regular file (a FIFO is never opened), cannot be read, or is not ELF."""
    try:
        head = elf_header(path)
    except (OSError, ValueError):  # ValueError: a NUL in the name
        return None
    if head is None or len(head) < 20 or head[:4] != ELF_MAGIC:
        return None
    return head[4], head[5], head[18:20]


def _how(lib: str) -> str:
    """How to get `lib`, in a few words: its packages where PACKAGES knows them."""
    name = os.path.basename(lib)
    return f"install it ({PACKAGES[name]})" if name in PACKAGES else "install the package with it"
