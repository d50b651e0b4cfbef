"""`assay cases generate FILE --agent SPEC --model MODEL --count N`: cases from the agent's
own definition (`assay.cases.generate`), written as a new ADK, CES or Vertex file, or
added to an existing eval set in its own format through `assay.cases.write_cases` (the
other cases keep their text; a case id the file has is refused unless `--update`).

Prints what was refused and why (invented tools, arguments that break a tool's schema,
near-duplicates) and a coverage table of tools and personas. `--dry-run` prints the
prompt of the first request and the cost estimate, and calls nothing.

Exit codes: 0 written (or dry run); 2 a usage or input error, a generated id the file
has already (without `--update`), or no case kept (nothing is written).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from assay.cli.cases import cases_app
from assay.cli.common import stdout_console, user_errors

if TYPE_CHECKING:
    from rich.console import Console

    from assay.cases.generate_cases import GenerationPlan, GenerationResult
    from assay.core.cases import EvalCase


@cases_app.command("generate")
def generate_command(
    file: Annotated[
        Path,
        typer.Argument(
            help="The eval set file: a new file, or an existing one the cases are added to."
        ),
    ],
    agent: Annotated[
        str,
        typer.Option(
            "--agent",
            help="The agent's definition: a description file (.json/.yaml), an ADK agent "
            "folder, or MODULE:ATTR naming an ADK agent or an OpenAIToolsAgent.",
        ),
    ],
    model: Annotated[
        str,
        typer.Option(
            "--model",
            help="The model that writes the cases: openai:NAME (OPENAI_BASE_URL for any "
            "compatible server), gemini-NAME, anthropic:NAME.",
        ),
    ],
    count: Annotated[int, typer.Option("--count", help="How many cases to ask for.")] = 10,
    scenarios: Annotated[
        bool,
        typer.Option(
            "--scenarios",
            help="Conversation scenarios (persona, plan, stop condition) instead of "
            "golden single-turn cases.",
        ),
    ] = False,
    personas: Annotated[
        Path | None,
        typer.Option(
            "--personas",
            help="Personas for --scenarios (JSON/YAML, CES or ADK shape); default: "
            "NOVICE, EXPERT, EVALUATOR.",
        ),
    ] = None,
    focus: Annotated[
        str | None, typer.Option("--focus", help="What the cases should concentrate on.")
    ] = None,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="A new file's format: adk (default), ces or vertex. An existing file "
            "keeps its own.",
        ),
    ] = None,
    embeddings: Annotated[
        str | None,
        typer.Option(
            "--embeddings",
            help="Base URL of an OpenAI-compatible embeddings endpoint: also remove "
            "near-duplicates by meaning.",
        ),
    ] = None,
    embedding_model: Annotated[
        str | None,
        typer.Option("--embedding-model", help="The embeddings model (with --embeddings)."),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Print the prompt and the cost estimate; call nothing."),
    ] = False,
    overwrite: Annotated[
        bool,
        typer.Option("--overwrite", help="Replace FILE with the generated cases only."),
    ] = False,
    update: Annotated[
        bool,
        typer.Option("--update", help="Adding to FILE: replace the cases it has with the same id."),
    ] = False,
) -> None:
    """Generate eval cases from the agent's definition (instruction, sub-agents, tools).

    Cases calling a tool the agent does not have, or with arguments its schema rejects,
    are refused; near-duplicates are removed; both are listed with the reason. See
    docs/authoring.md.
    """
    with user_errors():
        from assay.cases.generate_cases import generate, plan
        from assay.errors import ConfigError

        if overwrite and update:
            raise ConfigError("give --overwrite (replace the file) or --update (add to it)")
        target_fmt = _target_format(file, fmt, adding=file.exists() and not overwrite)
        out = stdout_console()
        if dry_run:
            _show_plan(out, plan(agent, model=model, count=count, scenarios=scenarios,
                                 personas=personas, focus=focus))  # fmt: skip
            return
        result = generate(
            agent,
            model=model,
            count=count,
            scenarios=scenarios,
            personas=personas,
            focus=focus,
            embeddings=embeddings,
            embedding_model=embedding_model,
        )
        _show_result(out, result, model)
        if file.exists() and not overwrite:
            _add(out, file, result.cases_as(target_fmt), update=update)
        else:
            _write_new(out, file, result, target_fmt, overwrite=overwrite)


def _target_format(file: Path, fmt: str | None, *, adding: bool) -> str:
    """The format the cases are written in: an existing file's own, else `--format`."""
    from assay.cases.generate_write import FORMATS
    from assay.errors import ConfigError

    if fmt is not None and fmt not in FORMATS:
        raise ConfigError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if not adding:
        return fmt or "adk"
    from assay.cases.target import read_target

    own = read_target(file).fmt  # refuses what cannot be edited before any model call
    if fmt is not None and fmt != own:
        raise ConfigError(
            f"--format {fmt}: {file} is {own} (cases are added in the file's own format; "
            "--overwrite replaces the file)"
        )
    return own


def _add(out: Console, file: Path, cases: list[EvalCase], *, update: bool) -> None:
    from assay.cases.api import write_cases
    from assay.errors import InputError

    if not cases:
        raise InputError("no case was kept, so nothing was written", file=str(file))
    edit = write_cases(file, cases, update=update)
    parts = [f"{label} {', '.join(ids)}" for label, ids in
             (("added", edit.added), ("updated", edit.updated), ("unchanged", edit.unchanged))
             if ids]  # fmt: skip
    out.print(
        f"wrote {file}: {'; '.join(parts)} ({edit.fmt}; read back by "
        f"{', '.join(edit.validated_with) or 'no reader: nothing changed'})",
        markup=False,
        soft_wrap=True,
    )


def _write_new(
    out: Console, file: Path, result: GenerationResult, fmt: str, *, overwrite: bool
) -> None:
    from assay.cases.generate_write import write_generated

    readers = write_generated(
        result.cases_as(fmt),
        file,
        fmt,
        # Only an ADK eval set has a place for the set's name.
        name=f"{result.agent.name}: generated cases" if fmt == "adk" else None,
        overwrite=overwrite,
    )
    n = len(result.cases)
    out.print(
        f"wrote {file} ({n} case{'s' if n != 1 else ''}, {fmt}; read back by {', '.join(readers)})",
        markup=False,
        soft_wrap=True,
    )


def _show_plan(out: Console, planned: GenerationPlan) -> None:
    for message in planned.messages:
        out.print(f"--- {message['role']} ---", markup=False)
        out.print(message["content"], markup=False, soft_wrap=True)
    out.print("---", markup=False)
    sizes = planned.sizes
    more = f" (the first of {len(sizes)} requests shown)" if len(sizes) > 1 else ""
    out.print(f"estimate: {planned.estimate.show()}{more}", markup=False, soft_wrap=True)
    out.print("dry run: nothing was called or written", markup=False)


def _show_result(out: Console, result: GenerationResult, model: str) -> None:
    noun = "request" if result.requests == 1 else "requests"
    out.print(
        f"{model}: {result.proposed} cases proposed in {result.requests} {noun}, "
        f"{len(result.cases)} kept, {len(result.refusals)} refused",
        markup=False,
        soft_wrap=True,
    )
    if result.refusals:
        out.print("refused:", markup=False)
        for refusal in result.refusals:
            out.print(f"  {refusal.show()}", markup=False, soft_wrap=True)
    rows = result.coverage.rows()
    width = max([len(name) for _, name, _ in rows] + [4])
    out.print("coverage:", markup=False)
    out.print(f"  {'kind':<8} {'name':<{width}} cases", markup=False)
    for kind, name, n in rows:
        out.print(f"  {kind:<8} {name:<{width}} {n}", markup=False)
    cov = result.coverage
    if cov.untouched_tools:
        out.print(f"never touched: {', '.join(cov.untouched_tools)}", markup=False)
    if cov.unused_personas:
        out.print(f"personas unused: {', '.join(cov.unused_personas)}", markup=False)
