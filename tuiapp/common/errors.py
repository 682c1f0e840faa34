"""The one error every layer may raise for bad input: the CLI prints it as one line, exit 2."""


class UsageError(Exception):
    """Bad input from the user: one line on stderr, exit code 2, never a traceback."""
