"""A home-automation agent (plain Python, offline) and its ADK eval set."""
