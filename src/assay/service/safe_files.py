"""Files a client names, opened only inside the server's files root (`--files-root`).

Every path goes through three steps, for reading and for writing:

1. checked as text: absolute, no NUL, at most `max_path_chars` characters and no
   component longer than `max_name_bytes` (else INVALID_ARGUMENT naming the field, where
   the operating system would answer with an error assay used to turn into a 500);
2. resolved (symlinks and `..` followed, a symlink loop refused) and checked to lie
   inside the root;
3. opened by walking the resolved path from the root one component at a time
   (`openat` relative to the folder opened before, `O_NOFOLLOW` on each), so a
   component swapped for a symlink after step 2 makes the open fail instead of leading
   out: there is no window between the check and the use.

A file is read only if it is a regular file (`O_NONBLOCK`, so a FIFO cannot hang the
request) no larger than the limit. A file is written as a new file beside its target
and renamed over it: a symlink or a hard link planted at the target is replaced, never
written through.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from assay.service.errors import FailedPrecondition, InvalidArgument
from assay.service.settings import DEFAULT_LIMITS, ServiceLimits

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class FilesRoot:
    """The folder the service reads and writes client-named files in (resolved)."""

    root: Path
    limits: ServiceLimits = DEFAULT_LIMITS

    def check_text(self, text: str, field: str) -> str:
        """`text` if it is a path the file system can be asked about (else 400)."""
        if "\x00" in text:
            raise InvalidArgument.field(field, "the path contains a NUL character")
        if len(text) > self.limits.max_path_chars:
            raise InvalidArgument.field(
                field,
                f"the path is {len(text)} characters long; the limit is "
                f"{self.limits.max_path_chars}",
            )
        for part in text.split("/"):
            size = len(part.encode("utf-8", "surrogateescape"))
            if size > self.limits.max_name_bytes:
                raise InvalidArgument.field(
                    field,
                    f"a component of the path is {size} bytes long ({part[:40]!r}...); "
                    f"the limit is {self.limits.max_name_bytes}",
                )
        if not text.startswith("/"):
            raise InvalidArgument.field(field, f"{text!r} is not an absolute path")
        return text

    def resolve(self, text: str, field: str, shown: str) -> Path:
        """The real path `text` names (symlinks followed), inside the root (else 400)."""
        self.check_text(text, field)
        try:
            real = os.path.realpath(text, strict=True)
        except FileNotFoundError:
            # Not there yet (an export's folder): resolved as far as it exists.
            real = os.path.realpath(text)
        except OSError as exc:
            raise _refused(field, shown, exc) from None
        path = Path(real)
        if not path.is_relative_to(self.root):
            raise InvalidArgument.field(
                field, f"{shown!r} is outside the server's files root {self.root}"
            )
        self.check_text(real, field)
        return path

    def _parts(self, path: Path) -> tuple[str, ...]:
        return path.relative_to(self.root).parts

    def _open_folder(self, parts: tuple[str, ...], field: str, shown: str, create: bool) -> int:
        """A descriptor of the folder root/parts, walked without following a symlink."""
        fd = os.open(self.root, _DIR_FLAGS)
        try:
            for part in parts:
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o777, dir_fd=fd)
                inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = inner
        except OSError as exc:
            os.close(fd)
            raise _refused(field, shown, exc) from None
        return fd

    def kind(self, path: Path, field: str, shown: str) -> str:
        """ "dir", "file", "other" or "missing": what `path` (resolved) is, not followed."""
        parts = self._parts(path)
        if not parts:
            return "dir"
        fd = self._open_folder(parts[:-1], field, shown, create=False)
        try:
            info = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return "missing"
        except OSError as exc:
            raise _refused(field, shown, exc) from None
        finally:
            os.close(fd)
        if stat.S_ISDIR(info.st_mode):
            return "dir"
        return "file" if stat.S_ISREG(info.st_mode) else "other"

    def read_bytes(self, path: Path, field: str, shown: str) -> bytes:
        """The content of the regular file `path` (resolved), at most the size limit."""
        parts = self._parts(path)
        if not parts:
            raise InvalidArgument.field(field, f"{shown!r} is a folder")
        folder = self._open_folder(parts[:-1], field, shown, create=False)
        try:
            fd = os.open(parts[-1], _READ_FLAGS, dir_fd=folder)
        except OSError as exc:
            raise _refused(field, shown, exc) from None
        finally:
            os.close(folder)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise InvalidArgument.field(field, f"{shown!r} is not a regular file")
            limit = self.limits.max_document_bytes
            if info.st_size > limit:
                raise _too_big(field, shown, limit)
            os.set_blocking(fd, True)
            content = handle.read(limit + 1)
        if len(content) > limit:  # it grew while it was read
            raise _too_big(field, shown, limit)
        return content

    def write_bytes(self, folder: Path, name: str, content: bytes, field: str, shown: str) -> Path:
        """Write `content` as `name` in `folder` (resolved; created if missing).

        Written to a new file and renamed over `name`, so whatever stood there (a
        symlink, a hard link to a file elsewhere) is replaced, not written through.
        """
        self.check_text(str(folder / name), field)
        fd = self._open_folder(self._parts(folder), field, shown, create=True)
        temporary = f".{name}.{secrets.token_hex(6)}.partial"
        try:
            try:
                existing = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                existing = None
            if existing is not None and stat.S_ISDIR(existing.st_mode):
                raise InvalidArgument.field(field, f"{shown!r}: {name} is a folder")
            out = os.open(temporary, _CREATE_FLAGS, 0o666, dir_fd=fd)
            try:
                with os.fdopen(out, "wb") as handle:
                    handle.write(content)
                os.replace(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException:
                _discard(temporary, fd)
                raise
        except OSError as exc:
            raise FailedPrecondition(
                f"{field}: cannot write {folder / name}: {exc.strerror or exc}"
            ) from None
        finally:
            os.close(fd)
        return folder / name


def _discard(name: str, folder_fd: int) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=folder_fd)


def _too_big(field: str, shown: str, limit: int) -> InvalidArgument:
    return InvalidArgument.field(
        field, f"{shown!r} is larger than the limit of {limit} bytes (max_document_bytes)"
    )


_REASONS = {
    errno.ELOOP: "leads through a symbolic link loop (or a link that changed while it was opened)",
    errno.ENAMETOOLONG: "is too long for the file system",
    errno.ENOTDIR: "has a part that is not a folder (or a symbolic link where one was)",
    errno.ENOENT: "does not exist on the server",
    errno.EACCES: "cannot be opened by the server (permission denied)",
    errno.EPERM: "cannot be opened by the server (permission denied)",
}


def _refused(field: str, shown: str, exc: OSError) -> InvalidArgument:
    reason = _REASONS.get(exc.errno or 0, exc.strerror or "cannot be opened")
    return InvalidArgument.field(field, f"{shown!r} {reason}")
