"""bxctl memory forget --help says how each kind of ID counts: the owner who reads it never takes
memory.md:1 for the second entry (an entry's number counts from 1, a note's from 0)."""

import re

from typer.testing import CliRunner

from bxctl.cli import app

runner = CliRunner()


def test_forget_help_says_where_each_kind_of_id_counts_from():
    result = runner.invoke(app, ["memory", "forget", "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    # The help is boxed and wrapped: its words, without the frame.
    words = " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.output).split())
    assert "note:N or session:<ID>:N as search prints them (counted from 0)" in words
    assert "memory.md:N or user.md:N as stats or block prints them (counted from 1" in words
    assert "memory.md:1 is the first entry" in words
    assert "\N{SQUARED ID}" not in result.output  # ":ID:" is not drawn as an emoji
