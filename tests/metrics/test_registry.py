"""The metric registry: names → classes, criteria → validated options."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from assay.errors import ConfigError
from assay.metrics import registry
from assay.metrics.base import Metric, MetricOptions
from assay.metrics.registry import build_metric, get_metric_class, metric_names, register

NAMES = metric_names()


def _required_options(name: str) -> list[str]:
    fields = get_metric_class(name).options_model.model_fields
    # A trailing-underscore field (`schema_`) is written, and reported, by its alias.
    return [
        f.alias if n.endswith("_") and f.alias else n for n, f in fields.items() if f.is_required()
    ]


def test_names_are_sorted_unique_and_include_the_adk_defaults() -> None:
    assert sorted(set(NAMES)) == NAMES
    for name in ("tool_trajectory_avg_score", "response_match_score"):
        assert name in NAMES


@pytest.mark.parametrize("name", NAMES)
def test_every_metric_builds_without_options(name: str) -> None:
    required = _required_options(name)
    if required:
        with pytest.raises(ConfigError) as info:
            build_metric(name)
        message = str(info.value)
        assert f"metric {name!r}" in message
        for option in required:
            assert f"{option}: Field required" in message
        return
    metric = build_metric(name)
    cls = get_metric_class(name)
    assert type(metric) is cls
    assert metric.name == name
    assert isinstance(metric.options, cls.options_model)
    if cls.informational:
        assert metric.threshold is None
    elif cls.default_threshold is not None:
        assert metric.threshold == cls.default_threshold


def test_some_metric_has_required_options() -> None:
    # Keeps the branch above exercised: trajectory_single_tool_use needs a tool name.
    assert _required_options("trajectory_single_tool_use") == ["tool_name"]
    metric = build_metric("trajectory_single_tool_use", {"tool_name": "search"})
    assert metric.name == "trajectory_single_tool_use"


@pytest.mark.parametrize("name", NAMES)
def test_bare_threshold(name: str) -> None:
    cls = get_metric_class(name)
    if required := _required_options(name):
        # A bare threshold cannot supply the other required options.
        with pytest.raises(ConfigError, match=f"{required[0]}: Field required"):
            build_metric(name, 0.25)
        return
    if cls.informational:
        # Informational metrics never pass or fail, so a threshold is a config mistake.
        with pytest.raises(ConfigError, match=f"metric {name!r}"):
            build_metric(name, 0.25)
        return
    # Thresholds inside the metric's score range (outside it they are refused).
    low, high = cls.score_range or (0.0, 1.0)
    quarter, half = low + 0.25 * (min(high, low + 1) - low), low + 0.5 * (min(high, low + 1) - low)
    assert build_metric(name, quarter).threshold == quarter
    assert build_metric(name, 1).threshold == 1.0
    assert build_metric(name, {"threshold": half}).threshold == half


def test_unknown_name_says_the_closest_and_where_the_names_are() -> None:
    with pytest.raises(ConfigError) as info:
        build_metric("tool_trajectory_score")
    message = str(info.value)
    assert message == (
        "unknown metric 'tool_trajectory_score' (did you mean 'tool_trajectory_avg_score'?);"
        f" `assay metrics` lists the {len(metric_names())} metrics"
    )
    # not every name on one line
    assert "response_match_score" not in message
    with pytest.raises(ConfigError, match=r"^unknown metric 'nope'; `assay metrics` lists"):
        get_metric_class("nope")


def test_unknown_name_looks_among_custom_names_too() -> None:
    with pytest.raises(ConfigError) as info:
        build_metric("my_custon", custom={"my_custom": _CustomMetric})
    assert "(did you mean 'my_custom'?)" in str(info.value)


def test_a_criterion_from_a_config_file_names_it() -> None:
    with pytest.raises(ConfigError) as info:
        build_metric("response_match_scor", 0.5, where="cfg.json: criteria.response_match_scor")
    assert str(info.value).startswith(
        "cfg.json: criteria.response_match_scor: unknown metric 'response_match_scor'"
        " (did you mean 'response_match_score'?)"
    )


def test_unknown_option_names_metric_key_and_valid_options() -> None:
    with pytest.raises(ConfigError) as info:
        build_metric("tool_trajectory_avg_score", {"threshold": 1.0, "treshold": 0.5})
    message = str(info.value)
    assert "bad options for metric 'tool_trajectory_avg_score'" in message
    assert "treshold: Extra inputs are not permitted (did you mean 'threshold'?)" in message
    assert "Valid options:" in message
    for option in ("threshold", "match_type", "matchType", "ignore_args"):
        assert option in message.split("Valid options:")[1]


@pytest.mark.parametrize(
    ("criterion", "key"),
    [
        ({"threshold": "high"}, "threshold"),
        ({"ignore_args": [1]}, "ignore_args"),
        ({"matchType": "SOMETIMES"}, "matchType"),
    ],
)
def test_option_of_wrong_type_names_metric_and_key(criterion: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        build_metric("tool_trajectory_avg_score", criterion)
    message = str(info.value)
    assert message.startswith("bad options for metric 'tool_trajectory_avg_score': ")
    assert f"{key}: " in message
    assert "Valid options: " in message


def test_nested_option_error_has_a_path() -> None:
    with pytest.raises(ConfigError) as info:
        build_metric("final_response_match_v2", {"judge_model_options": {"judge_model": 3}})
    assert "judge_model_options.judge_model" in str(info.value)


def test_snake_and_camel_options_are_the_same() -> None:
    name = "tool_trajectory_avg_score"
    snake = build_metric(name, {"threshold": 0.5, "match_type": "IN_ORDER", "ignore_args": True})
    camel = build_metric(name, {"threshold": 0.5, "matchType": "IN_ORDER", "ignoreArgs": True})
    assert snake.options == camel.options
    assert snake.threshold == camel.threshold == 0.5


@pytest.mark.parametrize("criterion", [True, False, {"threshold": True}])
def test_boolean_criterion_is_rejected(criterion: Any) -> None:
    with pytest.raises(ConfigError, match="'response_match_score'"):
        build_metric("response_match_score", criterion)


@pytest.mark.parametrize("criterion", ["0.8", [0.8]])
def test_criterion_must_be_number_or_object(criterion: Any) -> None:
    with pytest.raises(ConfigError, match=r"must be a number \(threshold\) or an object"):
        build_metric("response_match_score", criterion)


def test_criterion_mapping_is_not_modified() -> None:
    criterion = {"threshold": 0.5, "matchType": "ANY_ORDER"}
    build_metric("tool_trajectory_avg_score", criterion)
    assert criterion == {"threshold": 0.5, "matchType": "ANY_ORDER"}


# ----------------------------------------------------------------------------- custom


class _CustomMetric(Metric):
    name = "my_custom"


@pytest.mark.parametrize(
    ("criterion", "threshold"),
    [(None, None), (0.3, 0.3), (1, 1.0), ({"threshold": 0.7}, 0.7), ({}, None)],
)
def test_custom_factory_takes_the_threshold(criterion: Any, threshold: float | None) -> None:
    metric = build_metric("my_custom", criterion, custom={"my_custom": _CustomMetric})
    assert isinstance(metric, _CustomMetric)
    assert metric.threshold == threshold


@pytest.mark.parametrize("criterion", [True, {"threshold": False}, {"threshold": "x"}, "0.5"])
def test_custom_factory_rejects_non_numeric_thresholds(criterion: Any) -> None:
    with pytest.raises(ConfigError, match="'my_custom'"):
        build_metric("my_custom", criterion, custom={"my_custom": _CustomMetric})


# ----------------------------------------------------------------------------- register


class _Opts(MetricOptions):
    flavour: str = "plain"


@pytest.fixture
def scratch_registry(monkeypatch: pytest.MonkeyPatch) -> dict[str, type[Metric]]:
    registry.metric_names()  # every built-in registered in the real table first
    table = dict(registry._REGISTRY)
    monkeypatch.setattr(registry, "_REGISTRY", table)
    return table


def test_register_makes_a_metric_buildable(scratch_registry: dict[str, type[Metric]]) -> None:
    @register
    class Flavoured(Metric):
        name = "_test_flavoured"
        options_model: ClassVar[type[MetricOptions]] = _Opts
        default_threshold = 0.4

    assert "_test_flavoured" in metric_names()
    metric = build_metric("_test_flavoured", {"flavour": "spicy"})
    assert isinstance(metric, Flavoured)
    assert isinstance(metric.options, _Opts) and metric.options.flavour == "spicy"
    assert metric.threshold == 0.4
    # Registering the same class again is harmless.
    assert register(Flavoured) is Flavoured


def test_register_rejects_a_second_class_under_a_taken_name(
    scratch_registry: dict[str, type[Metric]],
) -> None:
    class Impostor(Metric):
        name = "response_match_score"

    with pytest.raises(ConfigError, match="'response_match_score' is registered twice"):
        register(Impostor)
    assert scratch_registry["response_match_score"] is not Impostor


def test_foreign_criterion_key_is_ignored_with_one_warning() -> None:
    # Seen in a public project's test_config.json; ADK's BaseCriterion allows extra keys.
    from assay.errors import AssayWarning

    with pytest.warns(AssayWarning, match=r"final_response_match_v2.*'criteria'") as caught:
        metric = build_metric(
            "final_response_match_v2", {"threshold": 0.5, "criteria": "Semantic Similarity"}
        )
    assert len(caught) == 1
    assert metric.threshold == 0.5


def test_misspelt_option_is_still_refused_not_ignored() -> None:
    # "treshold" is close to "threshold": ignoring it would silently keep the default.
    with pytest.raises(ConfigError, match="treshold"):
        build_metric("response_match_score", {"treshold": 0.5})
