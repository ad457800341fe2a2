"""The parameter model decides from the machine's facts (issue 20): the measured register tiles
of the CPUs this project has met are reproduced from their MachineModels, never their names,
and every choice carries the numbers behind it."""

import pytest

from polyopt.schedules.blis_schedule import (MachineModel, _accumulators_needed, _register_tile,
                                             _row_need, default_blis_params)

ZEN3 = MachineModel(256, 16, 32 << 10, 512 << 10, l1d_ways=8, fma_latency=4, fma_per_cycle=2)
ZEN4 = MachineModel(512, 32, 32 << 10, 1 << 20, l1d_ways=8, fma_latency=4, fma_per_cycle=1,
                    full_width_fma=False, embedded_broadcast=True)
ZEN5 = MachineModel(512, 32, 48 << 10, 1 << 20, l1d_ways=12, fma_latency=4, fma_per_cycle=2,
                    embedded_broadcast=True)
XEON_AMX = MachineModel(512, 32, 48 << 10, 2 << 20, 504 << 20, l1d_ways=12, l2_ways=16,
                        fma_latency=4, fma_per_cycle=2, embedded_broadcast=True)


@pytest.mark.parametrize("machine,elem,measured", [
    (ZEN5, 8, {(4, 32)}), (ZEN5, 4, {(4, 64)}),               # 1.11x / 1.04x OpenBLAS
    (ZEN3, 8, {(6, 8), (4, 12)}), (ZEN3, 4, {(4, 24), (6, 16)}),
    (ZEN4, 8, {(3, 32), (4, 32)}), (ZEN4, 4, {(3, 64), (4, 64)}),
])
def test_model_reproduces_the_measured_tiles(machine, elem, measured):
    t = _register_tile(machine, elem)
    assert (t.m_r, t.n_r) in measured
    assert t.form == "row"


@pytest.mark.parametrize("machine", [ZEN3, ZEN4, ZEN5, XEON_AMX, MachineModel()])
@pytest.mark.parametrize("elem", [4, 8])
def test_tile_fits_the_registers_and_covers_the_latency(machine, elem):
    t = _register_tile(machine, elem)
    vecs = t.n_r // machine.lanes(elem)
    assert t.m_r * vecs >= _accumulators_needed(machine)
    folded = machine.embedded_broadcast and vecs == 1
    assert _row_need(t.m_r, vecs, t.order, folded) <= machine.num_vector_registers


def test_more_l1_ways_allow_more_rows_of_c():
    assert _register_tile(ZEN4, 8).m_r < _register_tile(ZEN5, 8).m_r


def test_blocking_follows_the_caches_and_says_why():
    p4 = default_blis_params(2088, 2048, 2048, 8, ZEN4)
    p5 = default_blis_params(2088, 2048, 2048, 8, ZEN5)
    # B's K_C x N_R micro-panel in 2/3 of L1's ways: a larger L1 gives a deeper K_C
    assert p4.K_C * p4.N_R * 8 <= 0.67 * ZEN4.l1d_bytes
    assert p5.K_C * p5.N_R * 8 <= 0.67 * ZEN5.l1d_bytes
    assert p5.K_C > p4.K_C
    text = p4.explain()
    assert "form row" in text
    assert f"{p4.M_R}x{p4.N_R}: {p4.M_R * p4.N_R // 8} accumulators >= latency 4 x 1" in text
    assert f"K_C {p4.K_C}: B's micro-panel {p4.K_C}x{p4.N_R}" in text
    assert "5 of 8 L1 ways" in text
    assert f"M_C {p4.M_C}: A's block" in text


def test_given_form_and_tile_are_kept_and_said():
    p = default_blis_params(500, 500, 500, 8, ZEN4, {"register_form": "col", "M_R": 16,
                                                     "N_R": 14})
    assert (p.register_form, p.M_R, p.N_R) == ("col", 16, 14)
    assert p.reasons[0].startswith("form col (given")
    assert "16x14 given by the op" in p.reasons


def test_explain_cli_prints_the_reasons():
    from polyopt.cli import _explain_matmul
    out = _explain_matmul(1000, 1000, 1000, "f32", {})
    assert out.startswith("model's choice for 1000x1000x1000 f32: M_C=")
    assert "accumulators >=" in out and "K_C " in out
