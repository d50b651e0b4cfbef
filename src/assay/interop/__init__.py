"""Where assay meets the tools users already run: ADK eval history and AgentEvaluator,
MLflow logging and scorers. Each module imports its third-party library lazily."""
