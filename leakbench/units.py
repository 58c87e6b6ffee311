"""Binary byte units, one definition for the package: KiB, MiB and GiB in bytes (ints)."""

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30
