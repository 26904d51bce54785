"""nvidia-smi's GPU state (gpustate.py): the CSV parsed a GPU a line, a field
this nvidia-smi refuses left out with a note, no nvidia-smi said so."""

from __future__ import annotations

from typing import Sequence

from gpuconform.core.gpustate import parse_csv, query


def test_one_dict_a_gpu() -> None:
    rows = parse_csv(["index", "clocks.max.sm"], "0, 1980\n1, 1980\n\n")
    assert rows == [{"index": "0", "clocks.max.sm": "1980"},
                    {"index": "1", "clocks.max.sm": "1980"}]
    assert parse_csv(["index", "uuid"], "0\n") == []  # a short line is not a GPU's


def _smi(known: set[str]):  # type: ignore[no-untyped-def]
    def run(args: Sequence[str]) -> tuple[int, str, str]:
        fields = args[1].split("=", 1)[1].split(",")
        bad = [f for f in fields if f not in known]
        if bad:
            return 2, "", f'Field "{bad[0]}" is not a valid field to query.\n'
        return 0, "".join(", ".join(f"{f}-{g}" for f in fields) + "\n" for g in (0, 1)), ""
    return run


def test_all_fields_at_once_when_nvidia_smi_knows_them() -> None:
    gpus, notes = query(_smi({"index", "power.limit"}), fields=("index", "power.limit"))
    assert gpus == [{"index": "index-0", "power.limit": "power.limit-0"},
                    {"index": "index-1", "power.limit": "power.limit-1"}] and notes == []


def test_a_field_it_refuses_is_left_out_and_named() -> None:
    gpus, notes = query(_smi({"index", "power.limit"}),
                        fields=("index", "clocks.nope", "power.limit"))
    assert [sorted(g) for g in gpus] == [["index", "power.limit"]] * 2
    assert notes == ['clocks.nope: Field "clocks.nope" is not a valid field to query.']


def test_no_index_no_state() -> None:
    gpus, notes = query(_smi(set()), fields=("index",))
    assert gpus == [] and notes[0].startswith("nvidia-smi --query-gpu: exit 2: ")


def test_a_hung_nvidia_smi_is_not_asked_again_field_by_field() -> None:
    calls: list[Sequence[str]] = []

    def hung(args: Sequence[str]) -> tuple[int, str, str]:
        calls.append(args)
        return -1, "", "TimeoutExpired: Command 'nvidia-smi' timed out after 20 seconds"

    gpus, notes = query(hung, fields=("index", "power.limit"))
    assert gpus == [] and len(calls) == 1
    assert notes == ["nvidia-smi --query-gpu: TimeoutExpired: Command 'nvidia-smi' timed out "
                     "after 20 seconds"]
