"""The plan lines `selp eval/topk/explain --engine spark` print on stderr."""

from selp.engines.result import plan_line


def test_a_goal_directed_step_prints_its_bound_positions_without_a_stratum() -> None:
    step = {"relations": ["path", "path@v0"], "mode": "goal-directed", "demand": {"path": [0, 1]}, "dropped_rules": 0}
    assert plan_line(step) == "  plan: [path, path@v0] goal-directed: constants bound at path position(s) 0, 1"


def test_a_component_step_names_its_stratum_and_reason() -> None:
    step = {"stratum": 2, "relations": ["far"], "mode": "global rounds", "reason": "nonlinear"}
    assert plan_line(step) == "  plan: stratum 2 [far] global rounds: nonlinear"


def test_a_goal_directed_partition_local_step_says_what_its_partitions_hold() -> None:
    step = {"stratum": 0, "relations": ["path"], "mode": "partition-local", "position": 1, "partitions": 4,
            "keyed": [], "broadcast": ["edge"], "note": "demanded values of position 1 only, guards dropped from the recursive rules"}
    assert plan_line(step) == ("  plan: stratum 0 [path] partition-local on position 1 (4 partitions; broadcast edge):"
                               " demanded values of position 1 only, guards dropped from the recursive rules")
