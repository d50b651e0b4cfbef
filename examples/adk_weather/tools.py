"""The weather agent's tools: a fixed table, so evaluations are repeatable."""

from __future__ import annotations

from typing import Any

_WEATHER = {
    "paris": ("Paris", "sunny", 21),
    "london": ("London", "cloudy", 15),
    "tokyo": ("Tokyo", "rainy", 18),
    "new york": ("New York", "windy", 12),
}
_TIMEZONES = {
    "paris": ("Paris", "Europe/Paris", "+02:00"),
    "london": ("London", "Europe/London", "+01:00"),
    "tokyo": ("Tokyo", "Asia/Tokyo", "+09:00"),
    "new york": ("New York", "America/New_York", "-04:00"),
}


def get_weather(city: str) -> dict[str, Any]:
    """Return the current weather in a city: condition and temperature in Celsius.

    Args:
        city: The city's name, e.g. "Paris".
    """
    found = _WEATHER.get(city.strip().lower())
    if found is None:
        return {"error": f"no weather data for {city}"}
    name, condition, celsius = found
    return {"city": name, "condition": condition, "temperature_c": celsius}


def get_timezone(city: str) -> dict[str, Any]:
    """Return the time zone of a city and its current offset from UTC.

    Args:
        city: The city's name, e.g. "Tokyo".
    """
    found = _TIMEZONES.get(city.strip().lower())
    if found is None:
        return {"error": f"no time zone data for {city}"}
    name, zone, offset = found
    return {"city": name, "timezone": zone, "utc_offset": offset}
