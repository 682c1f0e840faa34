import gzip
from pathlib import Path

import orjson
import pytest

from tuiapp.cli import main
from tuiapp.events import GpuSample, Note, dump_event
from tuiapp.record.header import build_header
from tuiapp.record.reading import RecordingError, RecordingIndex, read_recording


def _header() -> bytes:
    return orjson.dumps(build_header({"title": "t"}, start_t_s=100.0)) + b"\n"


def _good(i: int) -> bytes:
    return dump_event(Note(t_s=100.0 + i, text=f"n{i}")) + b"\n"


def _damaged_recording() -> tuple[bytes, int]:
    """(file bytes, bad lines)."""
    full = dump_event(GpuSample(t_s=103.5, index=1, mem_used_bytes=5))
    data = (
        _header() + _good(0) + _good(1)
        + b"this is not json\n"
        + full[: len(full) // 2] + b"\n"  # a line cut short, then the writer went on
        + b'{"t_s":104.0,"kind":"bogus","x":1}\n'  # not a known event
        + b'{"t_s":105.0,"kind":"gpu"}\n'  # known kind, missing field
        + b"\n"  # blank lines are not events and not errors
        + _good(6) + _good(7)
        + _good(8)[:20]  # killed mid-line
    )
    return data, 5


def test_corrupt_and_truncated_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    data, bad = _damaged_recording()
    path = tmp_path / "damaged.jsonl"
    path.write_bytes(data)
    rec = read_recording(path)
    assert [e.text for e in rec.events] == ["n0", "n1", "n6", "n7"]
    assert rec.skipped_lines == bad


def test_gzip_reads_the_same_and_a_cut_gzip_reads_its_prefix(tmp_path: Path) -> None:
    data = _header() + b"".join(_good(i) for i in range(200))
    plain, gz = tmp_path / "r.jsonl", tmp_path / "r.jsonl.gz"
    plain.write_bytes(data)
    gz.write_bytes(gzip.compress(data))
    assert read_recording(gz).events == read_recording(plain).events
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gz.read_bytes()[: len(gz.read_bytes()) * 2 // 3])
    rec = read_recording(cut)
    assert 0 < len(rec.events) < 200
    assert [e.text for e in rec.events] == [f"n{i}" for i in range(len(rec.events))]


def test_index_times_and_kinds_without_decoding(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(_header() + _good(3) + dump_event(GpuSample(t_s=101.0, index=0)) + b"\n" + _good(5))
    index = RecordingIndex(path)
    index.finish()
    # a sample stamped earlier than the note before it keeps the index's time monotonic
    assert list(index.times) == [103.0, 103.0, 105.0]
    assert index.duration_s == 5.0 and index.sparse == [0, 2]
    index.close()


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "no such file"), (b"", "empty file"), (b'{"hello": 1}\n', "not a tuiapp recording"),
     (b'{"format":"tuiapp-recording","version":99}\n', "newer")],
)
def test_not_a_recording_is_a_one_line_error(tmp_path: Path, capsys, content, message) -> None:
    path = tmp_path / "x.jsonl"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(RecordingError, match=message):
        read_recording(path)
    for argv in (["replay", str(path), "--headless", "--summary"], ["report", str(path)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1 and "Traceback" not in err


SAMPLE = Path(__file__).parent / "data" / "record" / "campaign_2min.jsonl.gz"


def test_a_recording_cut_mid_line_reads_up_to_the_cut_with_every_alert(tmp_path: Path) -> None:
    full = read_recording(SAMPLE)
    assert full.skipped_lines == 0 and full.header["gpus"] and len(full.alerts()) == 1
    data = gzip.decompress(SAMPLE.read_bytes())
    alert_at = data.index(b'"kind":"alert"')
    cut_at = data.index(b"\n", alert_at) + 40  # a kill -9 just after the alert, mid-line
    cut = tmp_path / "killed.jsonl"
    cut.write_bytes(data[:cut_at])
    rec = read_recording(cut)
    assert rec.skipped_lines == 1
    assert rec.events == full.events[: len(rec.events)]
    assert rec.alerts() == full.alerts()
