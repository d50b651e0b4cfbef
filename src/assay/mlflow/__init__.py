"""assay for MLflow users: `assay.mlflow.scorers` are assay's judges as MLflow scorers.

`mlflow.genai.evaluate(data, scorers=[scorers.correctness(judge="openai:gpt-4o")])`
scores with assay's judge prompts, voting and caching, and returns MLflow `Feedback`s
with the judge's rationale. Needs `pip install -e '.[mlflow]'`.
"""
