"""The pacing policy of judge calls: `assay.models.policy`, shared with every other
caller of models (the simulated user, the HTTP agent), re-exported here."""

from assay.models.policy import AdaptiveLimiter, Clock, Permit, RetryPolicy, Sleep

__all__ = ["AdaptiveLimiter", "Clock", "Permit", "RetryPolicy", "Sleep"]
