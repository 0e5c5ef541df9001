"""Errors meant for users: one base class, caught once at the CLI boundary."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INVALID = 2
EXIT_LOCKED = 3
EXIT_CHANGES_PENDING = 4


class FsrError(Exception):
    """An error whose message is written for the user; exit code travels with it."""

    exit_code = EXIT_FAILED


class UnknownJob(FsrError):
    """A command named a job the store does not record."""

    exit_code = EXIT_INVALID


def printable(text: str) -> str:
    """`text` with every character that is not printable (newlines, tabs, terminal escapes,
    zero-width and other invisible characters, lone surrogates) written as an escape: one
    problem stays one line, and what it shows is what is there."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


@dataclass(frozen=True, order=True)
class Problem:
    """One problem in one input file, named by file and field."""

    file: str
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.field}" if self.field else self.file
        return printable(f"{where}: {self.message}")


def _reading_order(problem: Problem) -> tuple[str, list[Any], str]:
    """By file, then field with its numbers as numbers (line 9 before line 10, tables[2]
    before tables[10]), then message."""
    parts: list[Any] = [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", problem.field)]
    return problem.file, parts, problem.message


class InvalidInput(FsrError):
    """Every problem found in the inputs, reported at once before anything is touched."""

    exit_code = EXIT_INVALID

    def __init__(self, problems: list[Problem], hints: list[str] | None = None):
        self.problems = sorted(set(problems), key=_reading_order)
        #: What to do about them beyond what each says; each said once, after them.
        self.hints = list(dict.fromkeys(hints or ()))
        super().__init__("\n".join(str(p) for p in self.problems))


class StoreError(FsrError):
    """The manifest store could not be read or written."""


class StoreMissing(FsrError):
    """A command that only reads or stops was given a store folder that does not exist: a
    typo, not a store without jobs. Nothing is created."""

    exit_code = EXIT_INVALID


class LockTimeout(FsrError):
    exit_code = EXIT_LOCKED
