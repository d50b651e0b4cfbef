"""Request bodies shared by the service tests (CES camelCase JSON)."""

from __future__ import annotations

from typing import Any


def golden(
    display_name: str, *, tags: list[str] | None = None, tool: str = "get_weather"
) -> dict[str, Any]:
    """A one-turn golden evaluation expecting a call of `tool` and a reply."""
    return {
        "displayName": display_name,
        "description": "weather question",
        "tags": tags or [],
        "golden": {
            "turns": [
                {
                    "steps": [
                        {"userInput": {"text": "Weather in Paris?"}},
                        {"expectation": {"toolCall": {"tool": tool, "args": {"city": "Paris"}}}},
                        {"expectation": {"agentResponse": {"chunks": [{"text": "Sunny."}]}}},
                    ]
                }
            ]
        },
    }


def scenario(display_name: str) -> dict[str, Any]:
    """A scenario evaluation (simulated user)."""
    return {
        "displayName": display_name,
        "scenario": {
            "task": "Book a table for two tonight",
            "maxTurns": 6,
            "rubrics": ["The agent confirms the booking time"],
        },
    }


def persona(display_name: str) -> dict[str, Any]:
    return {
        "displayName": display_name,
        "description": "in a hurry",
        "personality": "Answers in three words or fewer.",
        "speechConfig": {"speakingRate": 1.4, "voiceId": "en-US-Wavenet-D"},
    }


def error_of(response: Any) -> dict[str, Any]:
    """The `error` object of a status-shaped reply (asserting the shape)."""
    body = response.json()
    assert set(body) == {"error"}, body
    error: dict[str, Any] = body["error"]
    assert set(error) == {"code", "status", "message", "details"}, error
    assert error["code"] == response.status_code
    assert "Traceback" not in response.text
    return error
