"""One number convention for every sink: unknown is n/a (never 0), memory binary, rates decimal."""

from tuiapp.common.numfmt import NA, gib, mem, num, rate


def test_unknown_is_na_and_never_zero():
    for value in (None, "12", [], True):
        assert num(value) == NA and gib(value) == NA and mem(value) == NA and rate(value) == NA
    assert num(0.0) == "0.00" and gib(0) == "0.0" and rate(0) == "0 B/s"


def test_specs_units_and_scales():
    assert num(89.513) == "89.51" and num(9.24, "+.1f", "%") == "+9.2%" and num(3, "", " MHz") == "3 MHz"
    assert gib(74.9 * 2**30) == "74.9" and gib(96 * 2**30, 0) == "96"
    assert mem(25.9 * 2**20) == "25.9 MiB" and mem(1.2 * 2**30) == "1.2 GiB" and mem(512) == "512 B"


def test_rates_are_decimal_and_round_up_to_the_next_unit():
    assert rate(14.5e9) == "14.5 GB/s" and rate(999_800) == "1.0 MB/s" and rate(950e3) == "950.0 kB/s"
    assert rate(14.5e9, compact=True) == "14.5G" and rate(99.97e6, compact=True) == "100M"
    assert rate(950e3, compact=True) == "950k" and rate(12, compact=True) == "12B"
