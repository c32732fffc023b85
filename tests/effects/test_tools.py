"""The readers of the analyzers' answers, on answers written by hand, and the promtool installer's checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.effects import promtool
from tests.effects.reachability import connections, differences


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("All connections", "all"),
        ("{protocols:TCP,dst_ports:8082,9443}", "TCP 8082,9443"),
        ("{protocols:TCP, UDP,dst_ports:53}", "TCP 53; UDP 53"),
        ("{protocols:TCP,dst_ports:80,443},{protocols:UDP,dst_ports:53}", "TCP 80,443; UDP 53"),
        ("{protocols:TCP,dst_ports:1-79,80,81-100}", "TCP 1-100"),
        ("{protocols:SCTP}", "SCTP 1-65535"),
    ],
)
def test_connections_in_the_matrix_form(text: str, expected: str) -> None:
    assert connections(text) == expected


def test_a_pair_written_on_several_lines_is_one_entry() -> None:
    assert connections("{protocols:TCP,dst_ports:53,80}", "{protocols:UDP,dst_ports:53}") == "TCP 53,80; UDP 53"
    assert connections("{protocols:TCP,dst_ports:53}", "All connections") == "all"


@pytest.mark.parametrize("text", ["All but {protocols:TCP,dst_ports:22}", "{protocols:TCP,src_ports:80}", "none"])
def test_a_form_the_reader_does_not_know_is_an_error_not_a_guess(text: str) -> None:
    with pytest.raises(ValueError, match="does not know"):
        connections(text)


def test_differences_name_both_sides() -> None:
    assert differences({("a", "b"): "all"}, {("a", "c"): "TCP 1"}) == [
        "a -> b: expected all, analyzer says none",
        "a -> c: expected none, analyzer says TCP 1",
    ]


def test_a_deb_of_another_digest_is_refused() -> None:
    with pytest.raises(RuntimeError, match=r"has SHA-256 [0-9a-f]{64}, expected 81d59a24"):
        promtool.promtool_from_deb(b"!<arch>\nsomething else")


def test_the_archive_download_reads_the_url_it_is_given(tmp_path: Path) -> None:
    source = tmp_path / "source.deb"
    source.write_bytes(b"payload")
    folder = tmp_path / "download"
    folder.mkdir()
    target = promtool._archive_download(folder, source.as_uri())
    assert target == folder / promtool.DEB and target.read_bytes() == b"payload"
