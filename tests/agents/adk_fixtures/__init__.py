"""ADK test fixtures: a scripted model registered with ADK and a small agent package."""
