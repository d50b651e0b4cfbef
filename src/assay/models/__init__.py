"""Talking to models, below everything that calls one (judges, the simulated user, the
OpenAI-tools and HTTP agents): how calls are paced and retried (`policy`) and how a
model API's HTTP answers are read (`http`: retryable statuses, Retry-After, error
bodies). Nothing here knows what a judge, a metric or an agent is.
"""
