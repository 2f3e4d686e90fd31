"""The exceptions of epimine: one base class, one subclass per kind of failure.

Each carries the message the command line prints after ``error:``, naming the file, row,
column or setting at fault::

    try:
        epimine.import_articles(df, out="corpus")
    except epimine.InputError as e:
        print(e)   # polars DataFrame: no column `text` (name it with --text-column or ...)

Ctrl-C raises Python's own ``KeyboardInterrupt`` (the run stays resumable).
"""

__all__ = [
    "EpimineError",
    "InputError",
    "StorageError",
    "ClusterError",
    "LLMError",
    "PartialRunWarning",
]


class EpimineError(Exception):
    """Base class of every epimine error; raised itself for what fits no subclass (the
    encoder failing, a worker failing, an internal error)."""


class InputError(EpimineError, ValueError):
    """What was given is wrong: a path that is not there, a missing column, a column of the
    wrong type, bad rows, an unknown or invalid setting, a model that is not found, a folder
    that is not a finished run."""


class StorageError(EpimineError):
    """Reading or writing failed: a disk, an object store (S3), an output folder that cannot
    be used."""


class ClusterError(EpimineError):
    """The layout of workers could not be set up."""


class LLMError(EpimineError):
    """The LLM stage could not start (no API key, a bad ``[llm]`` setting). An event whose LLM
    answers fail falls back to the no-LLM episodes instead (a :class:`PartialRunWarning`)."""


class PartialRunWarning(UserWarning):
    """A run finished, but some key events were skipped or fell back to no-LLM episodes (the
    command line's exit code 3); each is listed, with why, in ``Run.manifest["events"]``."""
