"""seff's arithmetic (``contribs/seff/seff``): CPU seconds summed the way seff sums its steps, its
time and size formats, and the percentages, on numbers worked out by hand."""

from __future__ import annotations

import pytest

from yanflow_tui.efficiency import Efficiency, cpu_seconds, kbytes2str, time2str


def test_cpu_seconds_sums_seconds_then_rounds_the_microseconds_once():
    # seff: tot_cpu_sec summed, plus int(sum(usec) / 1e6 + 0.5): 0.6 s + 0.6 s is one more second, not two
    assert cpu_seconds([(3, 600_000), (4, 600_000)]) == 7 + 1
    assert cpu_seconds([(26, 584_901)]) == 27
    assert cpu_seconds([(1, 400_000)]) == 1
    assert cpu_seconds([]) == 0


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "00:00:00"), (72, "00:01:12"), (3661, "01:01:01"), (90061, "1-01:01:01")]
)
def test_time2str(seconds, text):
    assert time2str(seconds) == text


@pytest.mark.parametrize(
    ("kbytes", "text"),
    [(0, "0.00 MB"), (512, "512.00 KB"), (96792, "94.52 MB"), (307200, "300.00 MB"), (3 * 1024**2, "3.00 GB")],
)
def test_kbytes2str(kbytes, text):
    assert kbytes2str(kbytes) == text


def test_percentages_and_lines_as_seff_prints_them():
    eff = Efficiency(
        "COMPLETED", cores=2, nodes=1, cpu_seconds=27, elapsed_seconds=36, memory_used_kb=96792, memory_kb=300 * 1024,
        time_limit_seconds=240,
    )  # fmt: skip
    assert eff.core_walltime == 72
    assert f"{eff.cpu_percent:.2f}" == f"{27 / 72 * 100:.2f}" == "37.50"
    assert f"{eff.memory_percent:.2f}" == "31.51"
    assert eff.time_percent == 15.0
    assert dict(eff.lines()) == {
        "CPU Utilized": "00:00:27",
        "CPU Efficiency": "37.50% of 00:01:12 core-walltime",
        "Job Wall-clock time": "00:00:36 (15.00% of 00:04:00 time limit)",
        "Memory Utilized": "94.52 MB",
        "Memory Efficiency": "31.51% of 300.00 MB (300.00 MB/node)",
    }
    assert eff.as_json()["cpu_efficiency_percent"] == 37.5


def test_nothing_to_divide_by_is_zero_percent_and_per_core_memory_says_so():
    eff = Efficiency(
        "RUNNING", cores=4, nodes=2, cpu_seconds=0, elapsed_seconds=0, memory_used_kb=0, memory_kb=0,
        memory_per_cpu=True, running=True,
    )  # fmt: skip
    assert eff.cpu_percent == 0.0 and eff.memory_percent == 0.0 and eff.time_percent is None
    rows = dict(eff.lines())
    assert rows["Memory Efficiency"].endswith("/core)") and "no limit" in rows["Job Wall-clock time"]
    assert "sstat" in rows["Efficiency note"]
