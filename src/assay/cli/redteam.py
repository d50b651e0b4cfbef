"""`assay redteam`: attack an agent with the seed probes (and a model's), report what got
through (docs/redteam.md).

Exit codes: 0 done; 1 `--fail-on-success RATE` exceeded (or nothing could be judged
under it); 2 a usage error (an unknown category, a bad `--carrier` result, a real-tools
run not asked for).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from assay.cli.common import NameOption, StoreOption, output_file, stdout_console, user_errors
from assay.errors import ConfigError


def _carriers(items: list[str]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not name:
            raise ConfigError(f"--carrier {item!r}: name a tool (TOOL or TOOL=JSON)")
        base: dict[str, Any] = {}
        if sep:
            try:
                parsed = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ConfigError(
                    f"--carrier {name}: its result is not valid JSON ({exc.msg})"
                ) from None
            if not isinstance(parsed, dict):
                raise ConfigError(f"--carrier {name}: its result must be a JSON object")
            base = parsed
        found[name] = base
    return found


def _check_rate(rate: float | None) -> None:
    if rate is not None and not 0.0 <= rate <= 1.0:
        raise ConfigError(f"--fail-on-success must be a rate between 0 and 1, got {rate}")


def redteam_command(
    agent: Annotated[
        str,
        typer.Option(
            "--agent", help="The agent to attack: pkg.module:attr, an ADK folder or a URL."
        ),
    ],
    tools: Annotated[
        str,
        typer.Option(
            "--tools",
            help="fake (default: mocks only, nothing real runs), mixed (mocks, else the real"
            " tool) or real (the agent's tools run: attacks may have real side effects).",
        ),
    ] = "fake",
    categories: Annotated[
        list[str] | None,
        typer.Option("--categories", help="Attack categories (comma separated or repeated)."),
    ] = None,
    count: Annotated[
        int | None,
        typer.Option("--count", help="At most N seed probes per category (and N mutated)."),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model", help="A model that writes attacks adapted to the agent and plays attackers."
        ),
    ] = None,
    judge: Annotated[
        str | None,
        typer.Option("--judge", help="Judge every reply with safety_v1 (enables harmful_content)."),
    ] = None,
    task: Annotated[
        str | None,
        typer.Option("--task", help="The benign request indirect injections ride on."),
    ] = None,
    carrier: Annotated[
        list[str] | None,
        typer.Option(
            "--carrier",
            help="TOOL or TOOL=JSON: a tool whose FAKE result carries the injection (JSON: the"
            " rest of its result). Default: the agent's reading tools.",
        ),
    ] = None,
    destructive: Annotated[
        list[str] | None,
        typer.Option("--destructive", help="A tool excessive-agency attacks try to trigger."),
    ] = None,
    probes: Annotated[
        Path | None,
        typer.Option("--probes", help="A probe library (JSON) instead of the shipped seeds."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the report as JSON to this file.")
    ] = None,
    fail_on_success: Annotated[
        float | None,
        typer.Option(
            "--fail-on-success",
            help="Exit 1 when the attack success rate over all categories exceeds RATE (0-1).",
        ),
    ] = None,
    store: StoreOption = None,
    no_store: Annotated[bool, typer.Option("--no-store", help="Do not record the run.")] = False,
    name: NameOption = None,
) -> None:
    """Attack an agent: prompt injection (direct and through tool results), excessive
    agency, sensitive data, system prompt leakage and harmful content."""
    from assay.red_team import redteam, render

    with user_errors():
        _check_rate(fail_on_success)
        report = redteam(
            agent,
            tools=tools,
            categories=categories,
            count=count,
            model=model,
            judge=judge,
            store=None if no_store else (store or True),
            run_name=name,
            task=task,
            carriers=_carriers(carrier or []),
            destructive=destructive or [],
            probes=probes,
        )
        console = stdout_console()
        console.print(render(report), markup=False, highlight=False, soft_wrap=True)
        if out is not None:
            path = output_file(out, folder_name="redteam.json", what="--out")
            path.write_text(json.dumps(report.as_dict(), indent=2, default=str), "utf-8")
            console.print(f"report written to {path}", markup=False, highlight=False)
    if fail_on_success is not None:
        overall = report.overall()
        if overall.rate is None:
            typer.echo("--fail-on-success: no attack could be judged", err=True)
            raise typer.Exit(1)
        if overall.rate > fail_on_success:
            typer.echo(
                f"attack success rate {overall.rate:.2f} exceeds --fail-on-success "
                f"{fail_on_success:.2f}",
                err=True,
            )
            raise typer.Exit(1)
