"""The stand-in case generator for the home-automation agent (docs/authoring.md).

Five good cases a model could write from `definition.json`, then the four the stand-in
adds that `assay cases generate` must refuse (an invented tool, broken arguments, two
near-duplicates). Run it with::

    python -m assay.testing.judge_server --port 8012 \
        --script examples.home_automation.standin_generate:script
"""

from __future__ import annotations

from assay.testing.standin_generator import generator_script

CASES = [
    {
        "id": "switch_off_bedroom_lamp",
        "user_goal": "Turn a device off by its id",
        "opening_message": "Turn off device_2.",
        "expected_tool_calls": [
            {"name": "set_device_info", "args": {"device_id": "device_2", "status": "OFF"}}
        ],
        "expected_outcome": "The bedroom lamp (device_2) is off and the reply says so.",
        "rubrics": ["The reply names the device that was switched off."],
    },
    {
        "id": "kitchen_devices",
        "user_goal": "List the devices of one room",
        "opening_message": "Which devices are in the kitchen?",
        "expected_tool_calls": [{"name": "list_devices", "args": {"location": "Kitchen"}}],
        "expected_outcome": "The reply lists the Kitchen Light and its status.",
    },
    {
        "id": "bedroom_temperature",
        "user_goal": "Read a room's thermostat",
        "opening_message": "What is the temperature in the bedroom?",
        "expected_tool_calls": [{"name": "get_temperature", "args": {"location": "Bedroom"}}],
        "expected_outcome": "The reply gives the bedroom's thermostat setting in Celsius.",
    },
    {
        "id": "warm_living_room",
        "user_goal": "Set a room's thermostat",
        "opening_message": "Set the living room to 22 degrees.",
        "expected_tool_calls": [
            {"name": "set_temperature", "args": {"location": "Living Room", "temperature": 22}}
        ],
        "expected_outcome": "The living room thermostat is set to 22 degrees Celsius.",
    },
    {
        "id": "kitchen_light_status",
        "user_goal": "Ask whether a device is on",
        "opening_message": "Is the kitchen light on?",
        "expected_tool_calls": [{"name": "get_device_info", "args": {"device_id": "device_3"}}],
        "expected_outcome": "The reply says the kitchen light is off.",
    },
]

script = generator_script(CASES)
