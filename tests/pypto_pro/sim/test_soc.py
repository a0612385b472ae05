"""SoC tables: loading, aliases, overrides, sources and the spec's headline numbers."""
from __future__ import annotations

import pytest

from pypto_pro.ir.types import MemorySpace
from pypto_pro.soc import SoC, list_socs, soc


def test_every_table_loads_with_a_source_for_every_number():
    assert list_socs() == ["Ascend910B1", "Ascend950DT_9581", "Ascend950PR_9579",
                           "Ascend950PR_9589"]
    for name in list_socs():
        table = soc(name)
        assert isinstance(table, SoC)
        assert all(source.strip() for source in table.sources.values())
        assert "buffers.Vec" in table.sources and "clock_mhz" in table.sources


def test_default_is_950pr_9589_with_ini_numbers():
    table = soc()
    assert table.name == "Ascend950PR_9589"
    assert (table.aic_cores, table.aiv_cores, table.clock_mhz) == (32, 64, 1650)
    assert table.buffer_size(MemorySpace.Vec) == 253952
    assert table.buffer_size("Acc") == 262144
    assert table.buffer_size(MemorySpace.Scaling) == 4096 + 2048
    assert table.alignment(MemorySpace.Left) == 512 and table.alignment(MemorySpace.Acc) == 64
    assert table.sources["buffers.Vec"] == "INI950 [AICoreSpec] ub_size"
    # GM paths run at the L2-side rates; HBM (shared by the chip) bounds only the misses
    assert table.mte_rates["gm_to_l1"] == 100 and table.mte_rates["gm_to_ub"] == 100
    assert (table.l2_bytes, table.l2_line_bytes, table.l2_miss_extra_cycles) == (
        128 << 20, 512, 150)
    assert table.sources["l2_bytes"].startswith("INI950 [SoCInfo] l2_size")


def test_aliases_and_other_skus():
    assert soc("950PR") is soc("Ascend950PR_9589")
    dt = soc("950DT")
    assert dt.name == "Ascend950DT_9581" and dt.hbm_bytes_per_s == 4.0e12
    assert dt.mte_rates["gm_to_l1"] == 100
    a2 = soc("910B1")
    assert (a2.aic_cores, a2.clock_mhz, a2.buffer_size(MemorySpace.Vec)) == (24, 1850, 196608)
    assert a2.buffer_size(MemorySpace.ScaleLeft) == 0
    assert a2.l2_bytes == 192 << 20 and a2.mte_rates["l1_to_l0b"] == 128
    assert soc("Ascend950PR_9579").aic_cores == 28


def test_overrides_replace_numbers_and_mark_the_source():
    fast = soc("Ascend950DT_9581", clock_mhz=1700, buffers={"Vec": 262144})
    assert fast.clock_mhz == 1700 and fast.clock_hz == 1.7e9
    assert fast.buffer_size(MemorySpace.Vec) == 262144
    assert fast.buffer_size(MemorySpace.Mat) == 524288
    assert fast.sources["clock_mhz"] == "override" and fast.sources["buffers.Vec"] == "override"
    assert soc("950DT").clock_mhz == 1650  # the cached table is untouched


def test_bad_names_and_overrides_raise():
    with pytest.raises(ValueError, match="Ascend950PR_9589"):
        soc("Ascend960")
    with pytest.raises(TypeError, match="clock_ghz"):
        soc(clock_ghz=2)
    with pytest.raises(TypeError, match="Vecc"):
        soc(buffers={"Vecc": 1})


def test_derived_chip_peaks_match_the_spec():
    for name, tflops in (("950PR", 432.5), ("910B1", 363.7)):
        table = soc(name)
        peak = table.aic_cores * 2 * table.cube_macs_per_cycle["FP16"] * table.clock_hz / 1e12
        assert peak == pytest.approx(tflops, abs=0.1)
    dt = soc("950DT")
    # the INI per-core ddr rate (80 B/c) is the chip HBM share: 80 x 32 x 1.65 GHz = 4.2 TB/s
    assert 80 * dt.aic_cores * dt.clock_hz == pytest.approx(dt.hbm_bytes_per_s, rel=0.06)
    assert "80 B/c x 32 AIC" in dt.sources["hbm_bytes_per_s"]
