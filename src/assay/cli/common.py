"""What the `assay` command modules share: consoles, the error guard, the app factory,
common options and their parsing.

Every command module imports this one and nothing else of `assay.cli`; `assay.cli`
(the package) mounts the command modules, so there is no import circle.
"""

from __future__ import annotations

import dataclasses
import gc
import inspect
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn, TypeVar, get_type_hints

import typer
from rich.console import Console
from rich.text import Text

from assay.errors import AssayError, AssayWarning, ConfigError, InputError, UnknownFormatError

if TYPE_CHECKING:
    from assay.core.cases import EvalSet

Options = TypeVar("Options")


def options_command(
    options: type[Options],
) -> Callable[[Callable[[Options], None]], Callable[..., None]]:
    """Make `command(opts)` a typer command whose parameters are the fields of the frozen
    dataclass `options`, in order: each field's annotation (typer's `Annotated[...,
    typer.Option(...)]` included) and default become a parameter's, so the command's
    flags, help and defaults are the fields' and adding an option is adding a field.
    The command gets its options gathered in one `options` object."""
    if not dataclasses.is_dataclass(options):
        raise TypeError(f"{options.__name__} is not a dataclass")
    parameters = _field_parameters(options)

    def decorate(command: Callable[[Options], None]) -> Callable[..., None]:
        def typer_command(**values: object) -> None:
            command(options(**values))

        return _as_command(typer_command, command, parameters)

    return decorate


def grouped_options(command: Callable[..., None]) -> Callable[..., None]:
    """Make `command` a typer command in which each parameter annotated with a frozen
    dataclass of options stands for that dataclass's fields, in its place: their flags,
    help and defaults are the fields' (as `options_command` makes them), and the
    command gets them gathered in one object. Options several commands share are so
    declared once, wherever each command lists them."""
    hints = get_type_hints(command, include_extras=True)
    parameters: list[inspect.Parameter] = []
    groups: dict[str, tuple[type, list[str]]] = {}
    for parameter in inspect.signature(command).parameters.values():
        hint = hints.get(parameter.name)
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            fields = _field_parameters(hint)
            groups[parameter.name] = (hint, [field.name for field in fields])
            parameters += fields
        else:
            parameters.append(parameter.replace(annotation=hint))
    names = [p.name for p in parameters]
    if len(set(names)) != len(names):
        raise TypeError(f"{command.__name__}: an option group repeats a parameter's name")

    def typer_command(**values: object) -> None:
        for name, (options, fields) in groups.items():
            values[name] = options(**{field: values.pop(field) for field in fields})
        command(**values)

    return _as_command(typer_command, command, parameters)


def _field_parameters(options: type) -> list[inspect.Parameter]:
    """The fields of the dataclass `options` as the parameters of a typer command."""
    hints = get_type_hints(options, include_extras=True)
    return [
        inspect.Parameter(
            field.name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=inspect.Parameter.empty if field.default is dataclasses.MISSING
            else field.default,
            annotation=hints[field.name],
        )
        for field in dataclasses.fields(options)
    ]  # fmt: skip


def _as_command(
    typer_command: Callable[..., None],
    command: Callable[..., None],
    parameters: list[inspect.Parameter],
) -> Callable[..., None]:
    """`typer_command` named and documented as `command`, with `parameters` for typer."""
    typer_command.__name__ = command.__name__
    typer_command.__qualname__ = command.__qualname__
    typer_command.__module__ = command.__module__
    typer_command.__doc__ = command.__doc__
    typer_command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    typer_command.__annotations__ = {p.name: p.annotation for p in parameters}
    return typer_command


StoreOption = Annotated[
    str | None, typer.Option("--store", help="Store URL (default .assay/assay.db).")
]
RunArgument = Annotated[
    str,
    typer.Argument(
        help="A run id, a unique prefix of one, 'latest' or 'latest~N' (N runs before).",
        show_default=False,
    ),
]
# Case selection and CI gates of `assay eval` (see assay.engine.selection, report.gates).
CaseOption = Annotated[
    list[str] | None,
    typer.Option("--case", help="Only this case id (glob, or SET/ID; repeatable)."),
]
TagOption = Annotated[
    list[str] | None, typer.Option("--tag", help="Only cases with this tag (repeatable).")
]
LimitOption = Annotated[int | None, typer.Option("--limit", help="Only the first N cases.")]
SampleOption = Annotated[
    int | None, typer.Option("--sample", help="N cases drawn at random (see --seed).")
]
SeedOption = Annotated[int, typer.Option("--seed", help="Seed of --sample.")]
NameOption = Annotated[str | None, typer.Option("--name", help="A label for the stored run.")]
MinPassRateOption = Annotated[
    float | None,
    typer.Option(
        "--min-pass-rate", help="Gate: exit 0 when at least this share of case runs passed (0-1)."
    ),
]
MinMeanOption = Annotated[
    list[str] | None,
    typer.Option(
        "--min-mean", help="Gate: METRIC=MIN, the metric's mean must reach MIN (repeatable)."
    ),
]
HtmlOption = Annotated[
    Path | None,
    typer.Option("--html", help="Write the self-contained HTML report (one file, no network)."),
]
FromOption = Annotated[
    str | None, typer.Option("--from", help="Input format (detected when not given).")
]
MapOption = Annotated[
    list[str] | None, typer.Option("--map", help="Column mapping SRC=DST (repeatable).")
]


def command_app(name: str, help: str) -> typer.Typer:
    """A Typer app (or command group) with assay's settings: help when run bare."""
    return typer.Typer(
        name=name,
        help=help,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_show_locals=False,
    )


def stdout_console() -> Console:
    # Logs and CI have no terminal width; a wider default keeps metric columns readable.
    if sys.stdout.isatty() or "COLUMNS" in os.environ:
        return Console()
    return Console(width=120)


def stderr_console() -> Console:
    return Console(stderr=True)


@contextmanager
def user_errors() -> Iterator[None]:
    """Show assay's own errors as one red line and exit with their code, no traceback."""
    try:
        yield
    except AssayError as exc:
        stderr_console().print(Text(f"error: {exc}", style="bold red"), soft_wrap=True)
        raise typer.Exit(exc.exit_code) from None
    except RecursionError:
        # A value nested deeper than any parser or model walk allows (the parsers report
        # their own; this is for anything deeper in the chain that recurses on input).
        message = "error: the input is nested too deeply to process (thousands of levels)"
        stderr_console().print(Text(message, style="bold red"), soft_wrap=True)
        raise typer.Exit(2) from None


EXIT_INTERRUPTED = 130
STARTING_INTERRUPTED = (
    "interrupted while assay was starting: nothing was run or written; run the same command again"
)


def output_file(raw: str | Path, *, folder_name: str | None = None, what: str = "output") -> Path:
    """The file to write for an output argument, its folders created.

    A target that is a folder (it exists as one, or is written with a trailing `/`)
    takes `folder_name` inside it, or is refused (exit 2) when the command has no
    default name; a missing parent folder is created; a parent that is a file is
    refused with the path named.
    """
    # A Path drops a trailing "/": take the argument as typed to see it.
    target = Path(raw)
    if target.is_dir() or str(raw).endswith(("/", os.sep)):
        if folder_name is None:
            raise ConfigError(f"{what} {str(raw)!r} is a folder: give a file name in it")
        target = target / folder_name
    parent = target.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ConfigError(
            f"cannot write {what} {str(target)!r}: a part of {str(parent)!r} is a file,"
            " not a folder"
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"cannot create the folder {str(parent)!r} for {what}: {exc.strerror}"
        ) from None
    return target


FORMAT_DESCRIPTIONS: dict[str, str] = {
    "adk": "Google ADK eval set (*.evalset.json): golden conversations or scenarios",
    "adk-legacy": "ADK legacy test file (*.test.json): queries with expected tool use",
    "adk-config": "ADK test_config.json / eval_config.json criteria (assay convert only)",
    "vertex": "Vertex AI eval rows (JSON, JSONL, CSV): prompt, response, trajectories",
    "mlflow": "Databricks / MLflow rows: request, response, expected_response, context",
    "ces": "Google CES Evaluation resources (JSON or YAML): goldens or scenarios",
    "trace": "Recorded conversations (JSONL of assay Turns), scored without an agent",
    "otel": "OpenTelemetry traces (OTLP JSON; GenAI semconv / ADK, OpenInference), read only",
    "mlflow-trace": "MLflow traces (Trace.to_json, search_traces rows), read only",
}


def parse_mapping(items: Sequence[str] | None) -> dict[str, str] | None:
    """`--map SRC=DST` flags (also comma-separated) as a column mapping."""
    if not items:
        return None
    mapping: dict[str, str] = {}
    for item in items:
        for pair in item.split(","):
            src, sep, dst = pair.partition("=")
            if not sep or not src.strip() or not dst.strip():
                raise ConfigError(
                    f"--map {pair!r}: expected SRC=DST (a column of the file = the assay "
                    "field), e.g. --map question=request"
                )
            mapping[src.strip()] = dst.strip()
    return mapping


def parse_metric_flags(items: Sequence[str]) -> dict[str, float | None]:
    """`--metric NAME` / `--metric NAME=THRESHOLD` flags as {name: threshold or None}."""
    wanted: dict[str, float | None] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not name:
            raise ConfigError(f"--metric {item!r}: expected NAME or NAME=THRESHOLD")
        threshold: float | None = None
        if sep:
            try:
                threshold = float(raw)
            except ValueError:
                raise ConfigError(
                    f"--metric {item!r}: the threshold must be a number, e.g. {name}=0.8"
                ) from None
        wanted[name] = threshold
    return wanted


def check_format(name: str, *, eval_set: bool) -> None:
    from assay.formats import EVAL_SET_FORMATS, FORMAT_MODULES

    valid = EVAL_SET_FORMATS if eval_set else tuple(FORMAT_MODULES)
    if name not in valid:
        raise UnknownFormatError(f"unknown format {name!r}; valid formats are: {', '.join(valid)}")


def check_distinct_ids(evalsets: Sequence[EvalSet], files: Sequence[Path]) -> None:
    check_distinct_set_ids([e.id for e in evalsets], files)


def check_distinct_set_ids(ids: Sequence[str], files: Sequence[Path]) -> None:
    # Checked before a run is stored, so an input error leaves no ERROR run behind.
    seen: dict[str, Path] = {}
    for set_id, path in zip(ids, files, strict=True):
        if set_id in seen:
            raise InputError(
                f"eval set id {set_id!r} is also the id of {seen[set_id]}; "
                "give each file a distinct eval set id",
                file=str(path),
            )
        seen[set_id] = path


@contextmanager
def gc_paused(pause: bool) -> Iterator[None]:
    """Pause the cyclic GC while scoring recorded data (which makes no cycles).

    Scoring 100k rows allocates millions of small objects; each full collection would
    walk them all. Agent runs keep the GC on: adapters and asyncio make real cycles.
    What the block made is frozen before the collector is back (`gc.freeze`): the
    allocations counted while it was off would make its first pass a full one over
    every result, a wait of about half a second after a judged run of a few thousand
    cases, just before the program exits (`frozen_heap_released` unfreezes it when the
    command runs inside another program).
    """
    if not pause or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


class _Process:
    program = False
    """True in the `assay` program itself (`assay.cli.main`), which exits after one
    command; False when a command runs inside another program (typer's CliRunner, a
    test, a notebook)."""


def as_program() -> None:
    """Mark this process as the `assay` program (see `frozen_heap_released`)."""
    _Process.program = True


def run_program(main: Callable[[], object]) -> NoReturn:
    """Run the `assay` program's `main` and leave the process with its exit code.

    The exit does what the interpreter's own does first (wait for the threads that are
    not daemons, run the `atexit` functions, flush stdout and stderr), then ends the
    process without tearing every module and object down one by one, which after a
    large `assay eval` is a noticeable wait for nothing (bench/README.md). An uncaught
    exception, or anything
    not done exactly that way, takes Python's ordinary exit.
    """
    try:
        main()
        code: object = 0
    except KeyboardInterrupt:
        # Ctrl-C while the command line was being built, before any command began.
        stderr_console().print(Text(STARTING_INTERRUPTED, style="bold yellow"), soft_wrap=True)
        code = EXIT_INTERRUPTED
    except SystemExit as stop:
        code = stop.code
        if _interrupted_before_eval(stop):
            message = (
                "interrupted before the evaluation started: nothing was run or written;"
                " run the same command again"
            )
            stderr_console().print(Text(message, style="bold yellow"), soft_wrap=True)
    _exit_fast(code)


def _interrupted_before_eval(stop: SystemExit) -> bool:
    """Whether `assay eval` was stopped by Ctrl-C before its command began (typer turns
    a KeyboardInterrupt it catches into exit 130, silently); an interrupt once the
    command began is the command's to report (`cli.eval`)."""
    first = next((arg for arg in sys.argv[1:] if not arg.startswith("-")), None)
    if stop.code != EXIT_INTERRUPTED or first != "eval":
        return False
    seen: set[int] = set()
    exc: BaseException | None = stop
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc.__cause__, KeyboardInterrupt):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _exit_fast(code: object) -> NoReturn:
    import atexit

    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        raise SystemExit(code)  # a message: Python prints it
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is None or threading.current_thread() is not threading.main_thread():
        raise SystemExit(code)
    shutdown()  # joins the threads that are not daemons, as the interpreter would
    atexit._run_exitfuncs()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        raise SystemExit(code) from None  # e.g. a closed pipe: Python reports it
    os._exit(status)


@contextmanager
def frozen_heap_released() -> Iterator[None]:
    """`assay eval` moves what lives until the end out of the collector's reach
    (`gc.freeze`): in the `assay` program, which exits next, that spares the final
    collection a walk over every result. Inside another program the command returns
    instead, and what it froze would never be collected: it is unfrozen then (unless
    the program had frozen objects of its own before, which stay frozen)."""
    frozen_before = gc.get_freeze_count()
    try:
        yield
    finally:
        if not _Process.program and frozen_before == 0 and gc.get_freeze_count():
            gc.unfreeze()


def show_assay_warnings() -> None:
    """Print assay's warnings as one yellow `warning:` line each, without file and line.

    Other libraries' warnings keep Python's default display.
    """
    import warnings

    default = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], *args: object, **kw: object) -> None:
        if issubclass(category, AssayWarning):
            stderr_console().print(Text(f"warning: {message}", style="yellow"), soft_wrap=True)
        else:
            default(message, category, *args, **kw)  # type: ignore[arg-type]

    warnings.showwarning = show
    warnings.simplefilter("always", AssayWarning)


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (`kill`, a CI job cancelled, a container stopped) stops like Ctrl-C: the
    command's KeyboardInterrupt handling marks the run INTERRUPTED, resumable. While
    asyncio runs, it goes to asyncio's SIGINT handler (cancel at the next await)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return

    def interrupt(signum: int, frame: object) -> None:
        # Inside `asyncio.run` SIGINT's handler is asyncio's: it cancels the run at its
        # next await, and `asyncio.run` then raises KeyboardInterrupt. SIGTERM is
        # handed to it, as Ctrl-C would be: raised wherever the main thread was, the
        # interrupt could land in the middle of a store write or be swallowed by code
        # that catches it (a run stopped this way was seen to finish with exit 0).
        on_sigint = signal.getsignal(signal.SIGINT)
        if callable(on_sigint) and on_sigint is not signal.default_int_handler:
            on_sigint(signal.SIGINT, frame)  # type: ignore[arg-type]
            return
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
