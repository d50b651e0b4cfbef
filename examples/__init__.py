"""Runnable example agents and eval sets used by the README."""
