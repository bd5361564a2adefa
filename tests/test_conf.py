"""hybridasr.kaldi.conf: Kaldi config files (--name=value lines, # comments)."""
from __future__ import annotations

import pytest

from hybridasr.errors import ConfigError
from hybridasr.kaldi.conf import read_config_file, write_config_file


def test_reads_kaldis_own_mfcc_conf(kaldi_digits):
    """The real conf/mfcc.conf: no final newline, one option spelled with '_'."""
    path = kaldi_digits / "conf" / "mfcc.conf"
    raw = path.read_bytes()
    assert not raw.endswith(b"\n") and b"--sample_frequency" in raw
    entries = read_config_file(str(path))
    assert [(e.name, e.value, e.lineno) for e in entries] == [
        ("use-energy", "false", 1), ("sample-frequency", "8000", 2)]


def test_comments_blank_lines_flags_and_line_numbers(tmp_path):
    p = tmp_path / "x.conf"
    p.write_text("# a comment\n\n--num-ceps=20   # trailing comment\n  --use_energy=false\n"
                 "--allow-downsample\n--name=a=b\r\n--last=1")
    entries = read_config_file(str(p))
    assert [(e.name, e.value, e.lineno) for e in entries] == [
        ("num-ceps", "20", 3), ("use-energy", "false", 4), ("allow-downsample", None, 5),
        ("name", "a=b", 6), ("last", "1", 7)]
    assert entries[2].as_arg() == "--allow-downsample"
    assert all(e.path == str(p) for e in entries)


@pytest.mark.parametrize("line", ["num-ceps=20", "-x=1", "--bad name=1", "--=3"])
def test_bad_lines_name_file_and_line(tmp_path, line):
    p = tmp_path / "bad.conf"
    p.write_text(f"--ok=1\n{line}\n")
    with pytest.raises(ConfigError, match=rf"{p}:2: "):
        read_config_file(str(p))


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config file"):
        read_config_file(str(tmp_path / "absent.conf"))


def test_write_then_read_round_trip(tmp_path):
    p = tmp_path / "out.conf"
    write_config_file(str(p), {"num_ceps": 13, "use_energy": False, "dims": [1, 2],
                               "skipped": None}, header="made by a test\nline two")
    text = p.read_text()
    assert text.startswith("# made by a test\n# line two\n")
    assert {e.name: e.value for e in read_config_file(str(p))} == {
        "dims": "1,2", "num-ceps": "13", "use-energy": "false"}
    assert not [q for q in tmp_path.iterdir() if q.name.endswith(".tmp")]
