"""A run's life above the engine and the store: plan, resume, record, finish.

The engine scores; the store keeps; this package ties them into one run that can be
interrupted and resumed (`resume`), for the CLI, the Python API and the service.
"""
