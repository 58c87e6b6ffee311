"""Publishing leakbench records to other tools (asv's pages)."""
