"""Errors meant for users: one base class, caught once at the CLI boundary."""

from __future__ import annotations

from dataclasses import dataclass

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INVALID = 2
EXIT_LOCKED = 3
EXIT_CHANGES_PENDING = 4


class FsrError(Exception):
    """An error whose message is written for the user; exit code travels with it."""

    exit_code = EXIT_FAILED


@dataclass(frozen=True, order=True)
class Problem:
    """One problem in one input file, named by file and field."""

    file: str
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.field}" if self.field else self.file
        return f"{where}: {self.message}"


class InvalidInput(FsrError):
    """Every problem found in the inputs, reported at once before anything is touched."""

    exit_code = EXIT_INVALID

    def __init__(self, problems: list[Problem]):
        self.problems = sorted(set(problems))
        super().__init__("\n".join(str(p) for p in self.problems))


class StoreError(FsrError):
    """The manifest store could not be read or written."""


class LockTimeout(FsrError):
    exit_code = EXIT_LOCKED
