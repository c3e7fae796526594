"""Issue 53: every command's number options go through one parser (cli.common.whole_number):
'²', '𐩀', '１', '+5', '5_000', ' 5' and 5,000-digit values end in one sentence that names the
option's meaning, never argparse's "invalid head_arg value" or a 5,000-digit echo."""
from __future__ import annotations

import argparse

import pytest

from attnscope.cli.common import device, int_in, whole_number
from attnscope.cli.intervene import head_arg, knockout_arg
from attnscope.cli.entry import build_parser

HOSTILE = ["²", "𐩀", "١", "１", "+5", "5_000", " 5", "5 ", "1e3", "", "-1", "9" * 5000]


@pytest.mark.parametrize("value", HOSTILE)
def test_the_one_parser_refuses_what_is_not_ascii_digits_in_range(value):
    with pytest.raises(argparse.ArgumentTypeError) as err:
        whole_number(value, "a position", 0, 10_000)
    said = str(err.value)
    assert "a position" in said and len(said) < 200 and "\n" not in said


def test_the_one_parser_reads_plain_digits_and_a_minus_only_where_allowed():
    assert whole_number("0042", "x", 0, 100) == 42
    assert whole_number("-3", "x", -5, 5) == -3
    with pytest.raises(argparse.ArgumentTypeError, match="from 0 to 100, got 101"):
        whole_number("101", "x", 0, 100)


@pytest.mark.parametrize("value", HOSTILE)
def test_int_in_and_heads_and_knockouts_use_it(value):
    for parse, text in ((int_in(0, 2**63 - 1), value), (head_arg, f"1.{value}"), (head_arg, f"cross:{value}.0"),
                        (knockout_arg, f"{value}:0@all"), (knockout_arg, f"0:0@1-{value}")):
        with pytest.raises(argparse.ArgumentTypeError) as err:
            parse(text)
        assert len(str(err.value)) < 200, parse


def test_a_cuda_index_in_other_digits_is_refused():
    for value in ("cuda:²", "cuda:" + "9" * 5000):
        with pytest.raises(argparse.ArgumentTypeError) as err:
            device(value)
        assert len(str(err.value)) < 200


@pytest.mark.parametrize("argv", [["intervene", "gpt", "--text", "a b", "--ablate", "1.²"],
                                  ["intervene", "gpt", "--text", "a b", "--ablate", "1." + "9" * 5000],
                                  ["translate", "translator", "--text", "a", "--beam-width", "²"],
                                  ["train", "gpt", "--out", "/tmp/x.safetensors", "--steps", "9" * 5000],
                                  ["export", "gpt", "--text", "a", "--layer", "１"]])
def test_the_commands_say_one_sentence_about_the_value(argv, capsys):
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args(argv)
    assert done.value.code == 2
    said = capsys.readouterr().err.strip()
    assert "\n" not in said and len(said) < 300, said
    assert "invalid" not in said and "head_arg" not in said and "9" * 50 not in said
