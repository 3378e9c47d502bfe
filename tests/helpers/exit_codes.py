"""The exit codes each command can return (errors.ExitCode), which its --help and its man page
state, and every exit-code test checks."""

from __future__ import annotations

# The exit codes each command can return (errors.ExitCode); its --help and its man page state each.
EXIT_CODES = {
    "dump-log": (0, 1, 2, 3, 4),
    "dump-index": (0, 1, 2, 3, 4),
    "verify-crc": (0, 1, 2, 4),
    "export": (0, 2, 3, 4, 6),
    "recover": (0, 1, 2, 3, 4, 5, 6),
    "roll": (0, 1, 2, 3, 4, 5, 6),
    "repair": (0, 1, 2, 3, 4, 5, 6),
    "erase": (0, 1, 2, 3, 4, 5, 6),
    "retain": (0, 1, 2, 3, 4, 5, 6, 7),
    "compact": (0, 1, 2, 3, 4, 5, 6, 7),
    "delete-records": (0, 1, 2, 3, 4, 5, 6, 7),
    "transactions": (0, 1, 2, 3, 4),
    "quarantine": (0, 2, 3, 4, 5, 6),
    "completion": (0, 2),
    "describe": (0, 2, 3, 4),
    "get-offsets": (0, 2, 3, 4),
    "doctor": (0, 1, 2, 4, 8),
    "consumer-groups": (0, 2, 3, 4),
    "metadata": (0, 2, 3, 4),
    "compare-replicas": (0, 1, 2, 3, 4),
    "move-partition": (0, 1, 2, 3, 4, 5, 6),
    "schemas": (0, 1, 2, 3, 4),
}
