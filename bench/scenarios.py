"""Scenario throughput: simulated conversations per minute against the ideal.

    python bench/scenarios.py                          # 200 scenarios x 5 runs, 100 ms, 32
    python bench/scenarios.py --scenarios 50 --runs 2 --turns 4 --mode direct

Both sides of every conversation are models on assay's OpenAI-compatible stand-in
(`assay.testing.JudgeServer`, in a child process so its threads do not compete with
the run for the GIL) on 127.0.0.1, each reply after `--latency` seconds:

- the agent: a `CallableAgent` that sends the conversation so far to the stand-in's
  chat-completions endpoint with httpx (one shared connection pool) and answers with
  the reply;
- the simulated user: assay's `UserSimulator` (`openai:` backend, the real `openai`
  SDK), scripted to write `--turns - 1` messages after the scenario's starting prompt
  and then the stop signal.

`--mode engine` runs the scenarios through `assay.engine.arun` with
`RunOptions(simulator=..., concurrency=C, runs=R)` (one deterministic scenario metric,
so scoring costs next to nothing); `--mode direct` drives `assay.simulation.simulate`
under an asyncio semaphore of C, without the engine.

The ideal: a conversation of T user turns makes T agent calls and T simulator calls
(T - 1 messages and the stop), one after another, so it lasts at least 2 T L seconds
and C of them in flight give C / (2 T L) conversations per second. Prints the rate,
its ratio to the ideal, and peak memory (RSS high-water mark of this process, and the
growth of RSS during the run). Timings are never asserted; the script exits non-zero
only when conversations did not end as scripted.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import resource
import sys
import time
from dataclasses import dataclass
from typing import Any

import httpx
import psutil

from _standin import ServerProcess
from assay.agents.base import SessionOptions
from assay.agents.callable import CallableAgent
from assay.core.cases import EvalCase, EvalSet, Scenario, Turn
from assay.engine import RunOptions, arun
from assay.metrics.registry import build_metric
from assay.simulation import SimulationResult, SimulatorOptions, UserSimulator, simulate
from assay.testing import StandinReply, StandinRequest

_USER_LINE = re.compile(r"^user: ", re.MULTILINE)
_SIMULATOR_MARK = "You play a human user"


def server_script(turns: int, latency: float) -> Any:
    """Replies for both sides: the simulated user stops after `turns` user messages."""

    def script(request: StandinRequest) -> StandinReply:
        if _SIMULATOR_MARK in request.system:
            said = len(_USER_LINE.findall(request.user))
            text = "</finished>" if said >= turns else f"Message {said + 1}, please go on."
        else:
            text = "Sure, done. Anything else?"
        return StandinReply(text=text, delay=latency)

    return script


def http_agent(client: httpx.AsyncClient) -> CallableAgent:
    """An agent that is one chat-completions call per turn, over the shared `client`."""

    async def agent(text: str, history: list[Turn]) -> str:
        messages: list[dict[str, str]] = []
        for turn in history:
            messages.append({"role": "user", "content": turn.user_input.text or ""})
            messages.append({"role": "assistant", "content": turn.final_response or ""})
        messages.append({"role": "user", "content": text})
        reply = await client.post(
            "/chat/completions", json={"model": "agent", "messages": messages}
        )
        reply.raise_for_status()
        content: str = reply.json()["choices"][0]["message"]["content"]
        return content

    return CallableAgent(agent, name="http-agent")


def scenarios(count: int, turns: int) -> EvalSet:
    cases = [
        EvalCase(
            id=f"scenario-{i}",
            scenario=Scenario(
                task=f"Get help with request {i}",
                starting_prompt=f"Hello, I need help with request {i}.",
                conversation_plan="Ask for help, answer the agent, stop when done.",
                max_turns=turns + 2,
            ),
        )
        for i in range(count)
    ]
    return EvalSet(id="bench-scenarios", cases=cases)


@dataclass
class Figures:
    conversations: int
    seconds: float
    turns: int
    requests: int

    def report(self, label: str, concurrency: int, latency: float, per_conversation: int) -> None:
        rate = self.conversations / self.seconds * 60
        ideal = concurrency / (2 * per_conversation * latency) * 60
        print(
            f"{label}: {self.conversations} conversations ({self.turns} turns,"
            f" {self.requests} model calls) in {self.seconds:.2f} s ="
            f" {rate:,.0f} conversations/min; ideal {ideal:,.0f}/min"
            f" (C={concurrency}, {per_conversation} user turns, {latency * 1000:.0f} ms);"
            f" ratio {rate / ideal:.2f}"
        )


async def run_engine(evalset: EvalSet, agent: CallableAgent, args: argparse.Namespace,
                     base_url: str) -> tuple[int, int]:  # fmt: skip
    options = RunOptions(
        runs=args.runs,
        concurrency=args.concurrency,
        timeout_s=120.0,
        simulator=SimulatorOptions(model="openai:user", base_url=base_url),
    )
    result = await arun([evalset], [build_metric("all_expectations_satisfied")], agent=agent,
                        options=options)  # fmt: skip
    bad = [c for c in result.cases if c.error or c.status.value != "PASSED"]
    if bad:
        sys.exit(f"{len(bad)} case runs did not pass; first: {bad[0]!r} {bad[0].error}")
    return len(result.cases), sum(len(c.invocations) for c in result.cases)


async def run_direct(evalset: EvalSet, agent: CallableAgent, args: argparse.Namespace,
                     base_url: str) -> tuple[int, int]:  # fmt: skip
    simulator = UserSimulator(SimulatorOptions(model="openai:user", base_url=base_url,
                                               concurrency=args.concurrency))  # fmt: skip
    gate = asyncio.Semaphore(args.concurrency)

    async def one(case: EvalCase) -> SimulationResult:
        async with gate:
            return await simulate(agent, case, SessionOptions.for_case(case), simulator)

    try:
        jobs = [one(case) for case in evalset.cases for _ in range(args.runs)]
        results = await asyncio.gather(*jobs)
    finally:
        await simulator.aclose()
    bad = [r for r in results if r.stopped_by != "stop_signal" or len(r.turns) != args.turns]
    if bad:
        sys.exit(f"{len(bad)} conversations did not end as scripted: {bad[0].error}")
    return len(results), sum(len(r.turns) for r in results)


async def measure(args: argparse.Namespace, mode: str, server: ServerProcess) -> Figures:
    evalset = scenarios(args.scenarios, args.turns)
    limits = httpx.Limits(max_connections=args.concurrency * 2, max_keepalive_connections=None)
    async with httpx.AsyncClient(base_url=server.base_url, limits=limits, timeout=60) as client:
        agent = http_agent(client)
        before = server.requests()
        started = time.perf_counter()
        runner = run_engine if mode == "engine" else run_direct
        conversations, turns = await runner(evalset, agent, args, server.base_url)
        seconds = time.perf_counter() - started
    return Figures(conversations, seconds, turns, server.requests() - before)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--turns", type=int, default=3, help="user turns per conversation")
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per model reply")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--mode", choices=["engine", "direct", "both"], default="both")
    args = parser.parse_args()
    process = psutil.Process()
    modes = ["engine", "direct"] if args.mode == "both" else [args.mode]
    with ServerProcess(server_script, args.turns, args.latency) as server:
        for mode in modes:
            rss_before = process.memory_info().rss
            cpu_before = process.cpu_times()
            figures = asyncio.run(measure(args, mode, server))
            cpu_after = process.cpu_times()
            rss_after = process.memory_info().rss
            figures.report(mode, args.concurrency, args.latency, args.turns)
            cpu = (cpu_after.user - cpu_before.user) + (cpu_after.system - cpu_before.system)
            print(
                f"  CPU: this process {cpu:.1f} s over {figures.seconds:.1f} s"
                f" ({cpu / figures.seconds:.0%} of one core);"
                f" {cpu / figures.requests * 1000:.2f} ms per model call"
            )
            peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(
                f"  memory: peak RSS {peak_mib:,.0f} MiB; RSS grew"
                f" {(rss_after - rss_before) / 2**20:,.1f} MiB during the run"
            )


if __name__ == "__main__":
    main()
