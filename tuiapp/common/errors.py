"""The one error every layer may raise for bad input: the CLI prints it as one line, exit 2."""


# Ctrl-C: the shell's 128 + SIGINT, so a script can tell "stopped by the user" from a failure.
EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """Bad input from the user: one line on stderr, exit code 2, never a traceback."""
