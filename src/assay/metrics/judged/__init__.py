"""LLM-judged metrics (SPEC §4.4), one module per family; importing registers them.

- ADK (`adk.py`): final_response_match_v2, rubric_based_final_response_quality_v1,
  rubric_based_tool_use_quality_v1, hallucinations_v1, safety_v1,
  per_turn_user_simulator_quality_v1; (`multi_turn.py`)
  rubric_based_multi_turn_trajectory_quality_v1
- Vertex-hosted in ADK, judged here (`vertex_hosted.py`): multi_turn_task_success_v1,
  multi_turn_trajectory_quality_v1, multi_turn_tool_use_quality_v1,
  response_evaluation_score
- Databricks (`databricks.py`): correctness, relevance_to_query, groundedness, safety,
  chunk_relevance, context_sufficiency, guideline_adherence
- CES (`ces.py`): semantic_similarity, hallucination
- CES scenarios (`scenario.py`): scenario_rubrics, scenario_expectations,
  all_expectations_satisfied, user_goal_satisfaction, task_completed; and
  (`simulator_quality.py`) ADK's per_turn_user_simulator_quality_v1

Every one accepts `judge_model_options {judge_model, num_samples, temperature, ...}`;
without a judge client attached they report no score with `NO_JUDGE_MESSAGE`.
"""

from assay.judges.types import JudgeModelOptions
from assay.metrics.judged.adk import (
    AdkJudgedOptions,
    CriterionRubric,
    FinalResponseMatchV2,
    HallucinationsOptions,
    HallucinationsV1,
    RubricBasedFinalResponseQualityV1,
    RubricBasedToolUseQualityV1,
    RubricsOptions,
    SafetyV1,
    UserSimulatorQualityOptions,
)
from assay.metrics.judged.base import (
    NO_JUDGE_MESSAGE,
    JudgeClient,
    JudgedMetric,
    JudgedOptions,
    JudgeSource,
    judges_in_context,
)
from assay.metrics.judged.ces import (
    Hallucination,
    HallucinationOptions,
    SemanticSimilarity,
    SemanticSimilarityOptions,
)
from assay.metrics.judged.databricks import (
    ChunkRelevance,
    ContextSufficiency,
    Correctness,
    Groundedness,
    GuidelineAdherence,
    GuidelineOptions,
    RelevanceToQuery,
    Safety,
    rating_of,
)
from assay.metrics.judged.multi_turn import RubricBasedMultiTurnTrajectoryQualityV1
from assay.metrics.judged.scenario import (
    SCENARIO_METRIC_NAMES,
    AllExpectationsSatisfied,
    ScenarioExpectations,
    ScenarioRubrics,
    TaskCompleted,
    UserGoalSatisfaction,
)
from assay.metrics.judged.simulator_quality import PerTurnUserSimulatorQualityV1
from assay.metrics.judged.vertex_hosted import (
    MultiTurnTaskSuccessV1,
    MultiTurnToolUseQualityV1,
    MultiTurnTrajectoryQualityV1,
    ResponseEvaluationScore,
)

JUDGED_METRIC_NAMES: tuple[str, ...] = (
    "final_response_match_v2",
    "rubric_based_final_response_quality_v1",
    "rubric_based_tool_use_quality_v1",
    "hallucinations_v1",
    "safety_v1",
    "per_turn_user_simulator_quality_v1",
    "rubric_based_multi_turn_trajectory_quality_v1",
    "multi_turn_task_success_v1",
    "multi_turn_trajectory_quality_v1",
    "multi_turn_tool_use_quality_v1",
    "response_evaluation_score",
    "correctness",
    "relevance_to_query",
    "groundedness",
    "safety",
    "chunk_relevance",
    "context_sufficiency",
    "guideline_adherence",
    "semantic_similarity",
    "hallucination",
    "user_goal_satisfaction",
    "task_completed",
)

__all__ = [
    "JUDGED_METRIC_NAMES",
    "NO_JUDGE_MESSAGE",
    "SCENARIO_METRIC_NAMES",
    "AdkJudgedOptions",
    "AllExpectationsSatisfied",
    "ChunkRelevance",
    "ContextSufficiency",
    "Correctness",
    "CriterionRubric",
    "FinalResponseMatchV2",
    "Groundedness",
    "GuidelineAdherence",
    "GuidelineOptions",
    "Hallucination",
    "HallucinationOptions",
    "HallucinationsOptions",
    "HallucinationsV1",
    "JudgeClient",
    "JudgeModelOptions",
    "JudgeSource",
    "JudgedMetric",
    "JudgedOptions",
    "MultiTurnTaskSuccessV1",
    "MultiTurnToolUseQualityV1",
    "MultiTurnTrajectoryQualityV1",
    "PerTurnUserSimulatorQualityV1",
    "RelevanceToQuery",
    "ResponseEvaluationScore",
    "RubricBasedFinalResponseQualityV1",
    "RubricBasedMultiTurnTrajectoryQualityV1",
    "RubricBasedToolUseQualityV1",
    "RubricsOptions",
    "Safety",
    "SafetyV1",
    "ScenarioExpectations",
    "ScenarioRubrics",
    "SemanticSimilarity",
    "SemanticSimilarityOptions",
    "TaskCompleted",
    "UserGoalSatisfaction",
    "UserSimulatorQualityOptions",
    "judges_in_context",
    "rating_of",
]
