"""The format-neutral data model (SPEC §1).

Every input format converts to these classes and back. Field names are snake_case;
format modules own the mapping to their own key styles.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ToolCall(_Model):
    """A call the agent made (or is expected to make) to a tool."""

    id: str | None = None
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class ToolResponse(_Model):
    """What a tool returned; `response` may hold `output` and/or `error` keys.

    `latency_s` is how long the tool took, when an agent run measured it.
    """

    id: str | None = None
    name: str
    response: Any = None
    latency_s: float | None = None


class AgentMessage(_Model):
    """An intermediate natural-language response from an agent or sub-agent."""

    author: str | None = None
    text: str


class AgentTransfer(_Model):
    target_agent: str


class Chunk(_Model):
    """A retrieved (or expected) document chunk."""

    doc_uri: str | None = None
    content: str | None = None


class Retrieval(_Model):
    chunks: list[Chunk] = Field(default_factory=list)


STEP_KINDS = (
    "tool_call",
    "tool_response",
    "agent_message",
    "agent_transfer",
    "variables_update",
    "retrieval",
)


class Step(_Model):
    """One ordered event inside a turn; exactly one field is set."""

    tool_call: ToolCall | None = None
    tool_response: ToolResponse | None = None
    agent_message: AgentMessage | None = None
    agent_transfer: AgentTransfer | None = None
    variables_update: dict[str, Any] | None = None
    retrieval: Retrieval | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Step:
        set_kinds = [k for k in STEP_KINDS if getattr(self, k) is not None]
        if len(set_kinds) != 1:
            raise ValueError(
                f"a step holds exactly one of {', '.join(STEP_KINDS)}; got {set_kinds or 'none'}"
            )
        return self

    @property
    def kind(self) -> str:
        for k in STEP_KINDS:
            if getattr(self, k) is not None:
                return k
        raise AssertionError("unreachable: validated step has no kind")


class Blob(_Model):
    mime_type: str
    data: str  # base64


class UserInput(_Model):
    """What the user (or client) sent for one turn."""

    text: str | None = None
    dtmf: str | None = None
    blobs: list[Blob] = Field(default_factory=list)
    event: str | None = None
    variables: dict[str, Any] | None = None
    tool_responses: list[ToolResponse] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"text": value}
        return value


class Usage(_Model):
    """Tokens one invocation's model calls spent, summed over the calls.

    `input_tokens` and `output_tokens` are always set. The breakdown (what Gemini and
    ADK report, `None` when no call reported it) nests: input = prompt + tool-use
    prompt tokens, with cached tokens a subset; output = candidates + reasoning tokens.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    prompt_tokens: int | None = None
    tool_use_tokens: int | None = None
    cached_tokens: int | None = None
    candidates_tokens: int | None = None
    reasoning_tokens: int | None = None


class RubricType(StrEnum):
    FINAL_RESPONSE_QUALITY = "FINAL_RESPONSE_QUALITY"
    TOOL_USE_QUALITY = "TOOL_USE_QUALITY"
    #: rubrics of rubric_based_multi_turn_trajectory_quality_v1 (ADK 2.13)
    TRAJECTORY_QUALITY = "TRAJECTORY_QUALITY"


class Rubric(_Model):
    """A rubric: `text` is None where the file gave empty content (ADK allows
    `rubric_content: {}`); `type` is ADK's free-form type designator (`RubricType`
    names the ones assay's metrics select by)."""

    id: str
    text: str | None = None
    type: RubricType | str | None = None

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: RubricType | str | None) -> RubricType | str | None:
        # A type assay's metrics select by is the enum member; others stay as given.
        if isinstance(value, str) and value in RubricType.__members__.values():
            return RubricType(value)
        return value


class Expectation(_Model):
    """A CES golden expectation attached to a turn; exactly one check is set."""

    note: str | None = None
    tool_call: ToolCall | None = None
    tool_response: ToolResponse | None = None
    agent_response: str | None = None
    agent_transfer: str | None = None
    updated_variables: dict[str, Any] | None = None
    mock_tool_response: ToolResponse | None = None


class Grounding(_Model):
    """Grounding metadata one agent event carried (ADK's `grounding_metadata`: e.g. the
    search queries and sources of a grounded answer), shown to judges as ADK shows it."""

    #: the event's index among the invocation's events
    step: int
    author: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    #: how many of the turn's steps came before the event's own (which follow it)
    first_step: int | None = None


class Turn(_Model):
    """One invocation: a user input and everything the agent did in reply."""

    id: str | None = None
    user_input: UserInput = Field(default_factory=UserInput)
    steps: list[Step] = Field(default_factory=list)
    final_response: str | None = None
    latency_s: float | None = None
    #: of `latency_s`, seconds with a model call in flight / inside tools (ADK's
    #: `model_duration`, `tool_duration`); None when not measured
    model_latency_s: float | None = None
    tool_latency_s: float | None = None
    #: model (inference) calls the invocation made; None when not recorded
    model_calls: int | None = None
    usage: Usage | None = None
    error: str | None = None
    expectations: list[Expectation] = Field(default_factory=list)
    rubrics: list[Rubric] = Field(default_factory=list)
    created_at: float | None = None
    #: the grounding metadata of the invocation's events; None when none had any
    grounding: list[Grounding] | None = None

    def tool_calls(self) -> list[ToolCall]:
        return [s.tool_call for s in self.steps if s.tool_call is not None]

    def tool_responses(self) -> list[ToolResponse]:
        return [s.tool_response for s in self.steps if s.tool_response is not None]

    def agent_messages(self) -> list[AgentMessage]:
        return [s.agent_message for s in self.steps if s.agent_message is not None]

    def retrieved_chunks(self) -> list[Chunk]:
        return [c for s in self.steps if s.retrieval is not None for c in s.retrieval.chunks]


class SessionInput(_Model):
    app_name: str | None = None
    user_id: str | None = None
    state: dict[str, Any] = Field(default_factory=dict)


class Persona(_Model):
    id: str
    display_name: str | None = None
    description: str | None = None
    personality: str | None = None


class UserFact(_Model):
    name: str
    value: str


class ToolExpectation(_Model):
    expected_tool_call: ToolCall
    mock_tool_response: ToolResponse | None = None


class ScenarioExpectation(_Model):
    """Exactly one of a tool expectation or an expected agent response."""

    note: str | None = None
    tool_expectation: ToolExpectation | None = None
    agent_response: str | None = None


class UserGoalBehavior(StrEnum):
    USER_GOAL_SATISFIED = "USER_GOAL_SATISFIED"
    USER_GOAL_REJECTED = "USER_GOAL_REJECTED"
    USER_GOAL_IGNORED = "USER_GOAL_IGNORED"


class Initiator(StrEnum):
    USER = "USER"
    AGENT = "AGENT"


class Scenario(_Model):
    task: str | None = None
    starting_prompt: str | None = None
    conversation_plan: str | None = None
    user_facts: list[UserFact] = Field(default_factory=list)
    persona: Persona | str | None = None  # an object or a preset id such as "NOVICE"
    max_turns: int | None = None
    rubrics: list[Rubric] = Field(default_factory=list)
    expectations: list[ScenarioExpectation] = Field(default_factory=list)
    variable_overrides: dict[str, Any] = Field(default_factory=dict)
    user_goal_behavior: UserGoalBehavior = UserGoalBehavior.USER_GOAL_SATISFIED
    initiator: Initiator = Initiator.USER


class EvalCase(_Model):
    """One thing to evaluate: a golden conversation, a scenario, or a recorded row.

    `reference` holds the expected turns (a golden conversation, or a single expected
    turn for row formats); `actual` holds turns an agent already produced (Vertex rows
    with responses, MLflow rows, recorded traces), scored without running an agent.
    """

    id: str
    tags: list[str] = Field(default_factory=list)
    description: str | None = None
    session_input: SessionInput | None = None
    reference: list[Turn] | None = None
    actual: list[Turn] | None = None
    scenario: Scenario | None = None
    rubrics: list[Rubric] = Field(default_factory=list)
    expected_response: str | None = None
    expected_facts: list[str] | None = None
    expected_retrieved_context: list[Chunk] | None = None
    guidelines: list[str] | dict[str, list[str]] | None = None
    final_session_state: dict[str, Any] | None = None
    created_at: float | None = None
    # Fields of the source format the model has no place for, kept for round trips.
    metadata: dict[str, Any] = Field(default_factory=dict)

    def user_turns(self) -> list[Turn]:
        """The turns whose user inputs drive an agent run (reference, else actual)."""
        return list(self.reference or self.actual or [])


class EvalSet(_Model):
    id: str
    name: str | None = None
    description: str | None = None
    cases: list[EvalCase] = Field(default_factory=list)
    created_at: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
