"""sanitize.clean: untrusted text loses every escape sequence and control character."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from yanflow_tui.sanitize import clean, plain

ESC = "\x1b"


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("plain text", "plain text"),
        ("\x1b[31mred\x1b[0m", "red"),
        ("\x1b[1;38;5;196mbold\x1b[m", "bold"),
        ("\x1b[2J\x1b[Hcleared", "cleared"),  # erase screen, cursor home
        ("a\x1b[10Ab", "ab"),  # cursor up
        ("\x1b[?1049hswap\x1b[?1049l", "swap"),  # alternate screen (private CSI)
        ("\x1b]0;evil title\x07after", "after"),  # OSC terminated by BEL
        ("\x1b]0;evil title\x1b\\after", "after"),  # OSC terminated by ST
        ("\x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\", "link"),  # OSC 8 hyperlink
        ("\x1b]52;c;ZXZpbA==\x07x", "x"),  # OSC 52 clipboard write
        ("\x1bP1$qm\x1b\\x", "x"),  # DCS
        ("\x1b_apc\x1b\\x", "x"),  # APC
        ("\x9b31mred", "red"),  # 8-bit CSI
        ("a\x1bMb", "ab"),  # reverse index (ESC + one byte)
        ("a\x1b7b\x1b8c", "abc"),  # save / restore cursor
        ("a\x1bcb", "ab"),  # full reset (RIS)
        ("a\x1b(B\x1b[mb", "ab"),  # charset designation, as tput sgr0 prints it
        ("a\x1b)0b", "ab"),
        ("a\x1b#8b", "ab"),  # DEC screen alignment test
        ("lone escape at end\x1b", "lone escape at end"),
        ("\x1b[", ""),  # an unfinished CSI at the end
        ("bell\x07 back\x08space nul\x00 del\x7f", "bell backspace nul del"),
        ("c1\x85\x8d\x90\x9c\x9d\x9f", "c1"),
        ("tab\there", "tab here"),
        ("one\ntwo\r\nthree\rfour", "one two three four"),
        ("", ""),
        ("ünïcödé ✓ 中文", "ünïcödé ✓ 中文"),
    ],
)
def test_clean(raw, expected):
    assert clean(raw) == expected


def test_keep_newlines():
    assert clean("a\x1b[1m\nb\r\nc\x07", keep_newlines=True) == "a\nb\nc"


def test_none_like_input():
    assert clean(None) == ""  # type: ignore[arg-type]


def test_plain_is_text_without_markup():
    text = plain("[bold]not markup[/bold] \x1b[31mred")
    assert text.plain == "[bold]not markup[/bold] red"
    assert text.spans == []


def is_control(ch: str) -> bool:
    code = ord(ch)
    return code < 0x20 or 0x7F <= code <= 0x9F


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.text(
        alphabet=st.sampled_from(
            [
                ESC,
                "[",
                "]",
                "\\",
                "\x07",
                "\x9b",
                "\x9c",
                "P",
                "_",
                "(",
                "B",
                ";",
                "0",
                "1",
                "m",
                "a",
                " ",
                "\n",
                "\r",
                "\t",
                "\x00",
                "\x85",
                "\x7f",
                "é",
            ]
        ),
        max_size=40,
    )
)
def test_no_control_character_survives(raw):
    for keep in (False, True):
        out = clean(raw, keep_newlines=keep)
        bad = [ch for ch in out if is_control(ch) and not (keep and ch == "\n")]
        assert bad == [], (raw, out)


@settings(max_examples=200, deadline=None, database=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs")), max_size=40))
def test_printable_text_is_unchanged(raw):
    assert clean(raw) == raw


def test_bidi_overrides_and_zero_width_characters_are_removed():
    from yanflow_tui.sanitize import clean

    assert clean("safe\u202ekcatta\u202c\u200b\u2066x\u2069\ufeff") == "safekcattax"


def test_osc_ended_by_8bit_string_terminator_keeps_the_rest():
    from yanflow_tui.sanitize import clean

    assert clean("a\x1b]0;title\x9cvisible") == "avisible"


def test_the_fast_path_changes_nothing_the_slow_path_would():
    import re

    from hypothesis import given
    from hypothesis import strategies as st

    from yanflow_tui import sanitize

    @given(st.text())
    def check(text):
        slow = sanitize._CONTROL.sub("", re.sub(r"\r\n|[\n\r]", " ", sanitize._ANSI.sub("", text).replace("\t", " ")))
        assert sanitize.clean(text) == slow

    check()


def test_bytes_that_were_not_utf8_show_escaped():
    assert clean(os.fsdecode(b"caf\xe9\x1b[31m.bin")) == "caf\\xe9.bin"
    assert clean("\ud800x") == "\\ud800x"
