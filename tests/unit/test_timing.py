from loadlib.records.build import gaps_ms, tpot_ms


def test_tpot_definition():
    assert tpot_ms(1100.0, 100.0, 11) == 100.0
    assert tpot_ms(1100.0, 100.0, 1) is None
    assert tpot_ms(None, 100.0, 5) is None


def test_gaps():
    assert gaps_ms([1.0, 3.0, 6.0]) == (2.0, 3.0)
    assert gaps_ms([5.0]) == ()
