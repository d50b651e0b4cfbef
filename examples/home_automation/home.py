"""The home the agent controls: devices, thermostats and energy meters, in memory.

Every tool takes the session's home (a plain JSON-like dict, so it can live in the
session state) and returns a JSON object; failures come back as `{"error": ...}`, the
way tool errors reach an LLM agent, rather than as exceptions.
"""

from __future__ import annotations

import copy
from typing import Any

Home = dict[str, Any]

MIN_TEMPERATURE_C = 10
MAX_TEMPERATURE_C = 30

_DEFAULT_HOME: Home = {
    "devices": {
        "device_1": {"name": "Living Room Light", "location": "Living Room", "status": "ON"},
        "device_2": {"name": "Bedroom Lamp", "location": "Bedroom", "status": "ON"},
        "device_3": {"name": "Kitchen Light", "location": "Kitchen", "status": "OFF"},
        "device_4": {"name": "Living Room TV", "location": "Living Room", "status": "ON"},
        "device_5": {"name": "Bedroom Fan", "location": "Bedroom", "status": "OFF"},
        "device_6": {"name": "Heat Pump", "location": "Utility Room", "status": "ON"},
    },
    "temperatures": {"Living Room": 21, "Bedroom": 19, "Kitchen": 20},
    # kWh per device: today, and the last seven days.
    "energy": {
        "today": {
            "device_1": 0.4,
            "device_2": 0.2,
            "device_3": 0.3,
            "device_4": 0.9,
            "device_5": 0.4,
            "device_6": 5.2,
        },
        "week": {
            "device_1": 2.6,
            "device_2": 1.5,
            "device_3": 2.1,
            "device_4": 6.3,
            "device_5": 3.3,
            "device_6": 35.8,
        },
    },
}

LOCATIONS = ("Living Room", "Bedroom", "Kitchen", "Utility Room")
STATUSES = ("ON", "OFF")


def new_home() -> Home:
    """A fresh copy of the default home (each session gets its own)."""
    return copy.deepcopy(_DEFAULT_HOME)


def _location(home: Home, location: str) -> str | None:
    for known in LOCATIONS:
        if known.lower() == location.strip().lower():
            return known
    return None


def list_devices(home: Home, location: str | None = None) -> dict[str, Any]:
    """Devices (id, name, status), optionally only those in one location."""
    where = None
    if location is not None:
        where = _location(home, location)
        if where is None:
            return {"error": f"unknown location {location!r}"}
    devices = [
        {"device_id": device_id, "name": d["name"], "status": d["status"]}
        for device_id, d in home["devices"].items()
        if where is None or d["location"] == where
    ]
    return {"location": where, "devices": devices}


def get_device_info(home: Home, device_id: str) -> dict[str, Any]:
    """One device's name, location and status."""
    device = home["devices"].get(device_id)
    if device is None:
        return {"error": f"device {device_id} not found"}
    return {"device_id": device_id, **device}


def set_device_info(home: Home, device_id: str, status: str) -> dict[str, Any]:
    """Switch a device ON or OFF."""
    device = home["devices"].get(device_id)
    if device is None:
        return {"error": f"device {device_id} not found"}
    if status not in STATUSES:
        return {"error": f"status must be ON or OFF, got {status!r}"}
    device["status"] = status
    return {"device_id": device_id, "status": status}


def get_temperature(home: Home, location: str) -> dict[str, Any]:
    """The thermostat setting of a room, in °C."""
    where = _location(home, location)
    if where is None or where not in home["temperatures"]:
        return {"error": f"no thermostat in {location!r}"}
    return {"location": where, "temperature": home["temperatures"][where]}


def set_temperature(home: Home, location: str, temperature: float) -> dict[str, Any]:
    """Set a room's thermostat, in °C (10 to 30)."""
    where = _location(home, location)
    if where is None or where not in home["temperatures"]:
        return {"error": f"no thermostat in {location!r}"}
    if not MIN_TEMPERATURE_C <= temperature <= MAX_TEMPERATURE_C:
        return {
            "error": f"temperature must be between {MIN_TEMPERATURE_C} and "
            f"{MAX_TEMPERATURE_C} °C, got {temperature}"
        }
    home["temperatures"][where] = temperature
    return {"location": where, "temperature": temperature}


def get_energy_report(
    home: Home, period: str = "today", location: str | None = None
) -> dict[str, Any]:
    """kWh used in a period ("today" or "week"), in total and by device."""
    usage = home["energy"].get(period)
    if usage is None:
        return {"error": f"period must be 'today' or 'week', got {period!r}"}
    where = None
    if location is not None:
        where = _location(home, location)
        if where is None:
            return {"error": f"unknown location {location!r}"}
    by_device = {
        home["devices"][device_id]["name"]: kwh
        for device_id, kwh in usage.items()
        if where is None or home["devices"][device_id]["location"] == where
    }
    top = max(by_device, key=lambda name: by_device[name])
    return {
        "period": period,
        "location": where,
        "total_kwh": round(sum(by_device.values()), 1),
        "by_device": by_device,
        "top_device": top,
    }


TOOLS = {
    fn.__name__: fn
    for fn in (
        list_devices,
        get_device_info,
        set_device_info,
        get_temperature,
        set_temperature,
        get_energy_report,
    )
}
