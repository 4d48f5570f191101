"""Request logs: data problems become reports, never silent numbers; the peak is the busiest sliding window (issue 13)."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pandas as pd
import pytest
import yaml

from xlplan.cli import main
from xlplan.evidence.traffic import MIN_REQUESTS, UnsuitableLog, summarise
from xlplan.evidence.traffic_windows import peak_rate
from xlplan.io.errors import InputError
from xlplan.io.logs import read_logs

T0 = 1_767_225_600  # 2026-01-01 00:00:00 UTC, a Thursday
HEADER = "timestamp,prompt_tokens,completion_tokens\n"


def rows(n: int, start: int = 0) -> list[str]:
    """``n`` good CSV rows, one a second from T0 + start, 1,000 tokens in and 100 out."""
    return [f"{T0 + start + i},1000,100\n" for i in range(n)]


def write(tmp_path, lines: list[str], name="log.csv", header=HEADER):
    path = tmp_path / name
    path.write_text(header + "".join(lines), encoding="utf-8")
    return path


@pytest.mark.slow
def test_one_malformed_line_among_thousands_is_one_row_left_out(tmp_path, capsys):
    # line 1 is the header, so the 1,501st data row is on line 1,502
    lines = rows(3000)
    lines[1500] = f"{T0 + 1500},1000,100,an extra field\n"
    path = write(tmp_path, lines)
    r = read_logs([path])
    assert r.t_s.size == 2999 and r.bad.counts == {"wrong number of fields": 1}
    assert f"{path} line 1502: 4 field(s) where the header has 3" in r.bad.examples
    assert main(["traffic", str(path)]) == 0
    assert "1 row(s) left out: wrong number of fields" in capsys.readouterr().out
    assert main(["traffic", str(path), "--strict"]) == 2
    assert "1 bad row(s) (--strict)" in capsys.readouterr().err


def test_an_unreadable_json_line_and_a_byte_that_is_not_utf8(tmp_path):
    path = tmp_path / "log.jsonl"
    recs = [json.dumps({"created": T0 + i, "usage": {"prompt_tokens": 10, "completion_tokens": 5}}).encode() for i in range(200)]
    recs[9] = b'{"created": 1767225609, "usage": {'  # line 10: cut short
    recs[19] = recs[19].replace(b'"usage"', b'"us\xe9age"')  # line 20: a Latin-1 byte
    path.write_bytes(b"\n".join(recs) + b"\n")
    r = read_logs([path])
    assert r.t_s.size == 198
    assert r.bad.counts == {"unreadable JSON line": 1, "unreadable line": 1}
    assert any(e.startswith(f"{path} line 10: not valid JSON") for e in r.bad.examples)
    assert any(e.startswith(f"{path} line 20: column") and "0xe9 is not UTF-8" in e for e in r.bad.examples)


def test_crlf_and_blank_lines_keep_line_numbers(tmp_path):
    # header on line 1, a blank line 2, good rows on lines 3-4, a bad one on line 5
    path = tmp_path / "log.csv"
    # (then 200 more good rows, so the one bad row is under the 1% a log may leave out)
    more = b"".join(b"%d,1,1\r\n" % (1767225602 + i) for i in range(200))
    path.write_bytes(b"timestamp,prompt_tokens,completion_tokens\r\n\r\n1767225600,1,1\r\n1767225601,1,1\r\nsoon,1,1\r\n" + more)
    r = read_logs([path])
    assert r.t_s.size == 202 and r.bad.examples[0].startswith(f"{path} line 5, column 'timestamp': 'soon'")


def test_a_timestamp_in_another_format_is_left_out_not_the_rest(tmp_path):
    # 2,999 rows in Unix seconds and one in ISO 8601: the file's format is seconds, the ISO row is the odd one out
    lines = rows(3000)
    lines[7] = "2026-01-01T00:00:07Z,1000,100\n"
    r = read_logs([write(tmp_path, lines)])
    assert r.t_s.size == 2999
    assert r.bad.counts == {"timestamp in another format in column 'timestamp'": 1}
    assert "line 9, column 'timestamp': '2026-01-01T00:00:07Z' where the file's timestamps are Unix seconds" in r.bad.examples[0]
    # and the other way round: ISO text with one Unix timestamp among it
    iso = [f"{pd.Timestamp(T0 + i, unit='s', tz='UTC').isoformat()},1000,100\n" for i in range(300)]
    iso[5] = f"{T0 + 5},1000,100\n"
    r = read_logs([write(tmp_path, iso, "iso.csv")])
    assert r.t_s.size == 299 and "where the file's timestamps are ISO 8601 text" in r.bad.examples[0]


def test_seconds_and_milliseconds_are_refused_not_left_out(tmp_path):
    # one row in Unix milliseconds among 499 in seconds: both read as real dates (2026-01-01) in their own unit, so
    # this is a log in two units -- refused, naming both, since leaving either out would understate the peak
    lines = rows(500)
    lines[0] = f"{(T0 + 0) * 1000},1000,100\n"
    path = write(tmp_path, lines)
    with pytest.raises(InputError) as e:
        read_logs([path])
    msg = str(e.value)
    assert str(path) in msg and "timestamps in more than one unit (499 in Unix seconds, 1 in Unix milliseconds" in msg
    assert f"line 2: {T0 * 1000} = 2026-01-01 in Unix milliseconds" in msg and "convert them to Unix seconds" in msg


def test_half_the_log_in_milliseconds_never_halves_the_peak(tmp_path, capsys):
    # the case: a log that mixes seconds and milliseconds, half and half. Left out, the minority would halve the
    # peak with exit 0; the command refuses it in one line, exit 2
    lines = [f"{(T0 + i) * (1000 if i % 2 else 1)},1000,100\n" for i in range(400)]
    path = write(tmp_path, lines)
    assert main(["traffic", str(path)]) == 2
    err = capsys.readouterr().err
    assert "200 in Unix seconds, 200 in Unix milliseconds" in err and "Traceback" not in err


def test_a_number_that_is_no_date_in_its_own_unit_is_a_bad_row_not_a_second_unit(tmp_path):
    # 12 among Unix milliseconds reads as Unix seconds by its size, and as 12 s after 1970 in seconds: no date, so a bad
    # row (left out and counted), not a second unit
    lines = [f"{(T0 + i) * 1000},1000,100\n" for i in range(300)]
    lines[4] = "12,1000,100\n"
    r = read_logs([write(tmp_path, lines)])
    assert r.t_s.size == 299 and r.bad.total == 1


@pytest.mark.parametrize("value, date", [("0", "1970-01-01"), ("4102444800", "2100-01-01"), ("946684799", "1999-12-31")])
def test_timestamps_outside_2000_2099_are_reported(tmp_path, value, date):
    lines = rows(300)
    lines[3] = f"{value},1000,100\n"
    r = read_logs([write(tmp_path, lines)])
    assert r.t_s.size == 299 and r.bad.counts == {"timestamp outside 2000-2099 in column 'timestamp'": 1}
    assert f"line 5, column 'timestamp': {value} is {date}; expected a date from 2000 to 2099" in r.bad.examples[0]


@pytest.mark.parametrize("bad, reason", [
    ("1767225610,-5,100", "negative prompt token count in column 'prompt_tokens'"),
    ("1767225610,1000,-1", "negative output token count in column 'completion_tokens'"),
    ("1767225610,1000.5,100", "fractional prompt token count in column 'prompt_tokens'"),
    ("1767225610,inf,100", "implausible prompt token count in column 'prompt_tokens'"),
    ("1767225610,1e12,100", "implausible prompt token count in column 'prompt_tokens'"),
    ("1767225610,true,100", "missing or non-numeric prompt token count in column 'prompt_tokens'"),
])
def test_impossible_token_counts_are_reported(tmp_path, bad, reason):
    lines = rows(300)
    lines[10] = bad + "\n"
    r = read_logs([write(tmp_path, lines)])
    assert r.t_s.size == 299 and r.bad.counts == {reason: 1} and "line 12" in r.bad.examples[0]


def test_cached_above_prompt_is_reported_not_clamped(tmp_path):
    header = "timestamp,prompt_tokens,completion_tokens,cached_tokens\n"
    lines = [f"{T0 + i},1000,100,250\n" for i in range(300)]
    lines[4] = f"{T0 + 4},1000,100,3000\n"
    r = read_logs([write(tmp_path, lines, header=header)])
    assert r.t_s.size == 299 and r.bad.counts == {"cached tokens above prompt tokens in column 'cached_tokens'": 1}
    assert "line 6, column 'cached_tokens': 3000 above the prompt's 1,000 tokens" in r.bad.examples[0]
    # prefix reuse from the 299 rows left: 250 / 1,000 exactly, not pulled up by a clamped 1,000 / 1,000
    assert summarise(r.t_s, r.prompt, r.output, r.cached).prefix_reuse == 0.25


def test_duplicate_request_ids_are_counted_once(tmp_path):
    header = "request_id,startTime,prompt_tokens,completion_tokens\n"
    lines = [f"r{i},{T0 + i},1000,100\n" for i in range(300)]
    lines[299] = f"r7,{T0 + 299},1000,100\n"
    path = write(tmp_path, lines, header=header)
    r = read_logs([path])
    assert r.t_s.size == 299 and r.bad.counts == {"duplicate request id": 1}
    assert f"{path} line 301, column 'request_id': 'r7' was seen before, at {path} line 9" in r.bad.examples[0]
    # the same log under another name: every request of the copy is a duplicate, and none is counted twice
    copy = tmp_path / "copy.csv"
    copy.write_bytes(path.read_bytes())
    r = read_logs([path, copy])
    assert r.t_s.size == 299 and r.bad.counts == {"duplicate request id": 1 + 300}


def test_the_same_file_twice_is_an_error(tmp_path, capsys):
    path = write(tmp_path, rows(300))
    assert main(["traffic", str(path), str(tmp_path / "." / "log.csv")]) == 2
    assert "given twice" in capsys.readouterr().err


def test_too_few_requests_or_too_short_a_span_is_an_error(tmp_path, capsys):
    path = write(tmp_path, rows(MIN_REQUESTS - 1))
    assert main(["traffic", str(path)]) == 2
    assert f"{MIN_REQUESTS - 1} request(s); expected at least {MIN_REQUESTS}" in capsys.readouterr().err
    # 300 requests a second apart span 299 s: shorter than a 5-minute window, so no peak is computed ("peak 0.000" before)
    path = write(tmp_path, rows(300), "short.csv")
    assert main(["traffic", str(path), "--window", "5m"]) == 2
    assert "the requests span 299 s, shorter than the 300 s window" in capsys.readouterr().err
    with pytest.raises(UnsuitableLog):
        summarise(np.arange(300.0), np.ones(300), np.ones(300), window_s=300)


def test_a_truncated_gz_is_one_clear_line(tmp_path, capsys):
    path = tmp_path / "log.csv.gz"
    path.write_bytes(gzip.compress((HEADER + "".join(rows(3000))).encode())[:-200])
    assert main(["traffic", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a damaged or truncated .gz" in err and "Aborted" not in err


def test_a_log_that_is_mostly_bad_is_refused(tmp_path):
    # 150 good rows and 151 whose timestamps are not timestamps: more than half bad, so no forecast from the rest
    lines = rows(150) + ["soon,1000,100\n"] * 151
    with pytest.raises(InputError, match="151 of 301 rows are bad"):
        read_logs([write(tmp_path, lines)])
    # the format is the one most rows use, not the first row's: 151 ISO rows outvote 150 in Unix seconds, and the 150
    # left out are far more than the 1% a log may leave out
    lines = rows(150) + [f"2026-01-02T00:{i // 60:02d}:{i % 60:02d}Z,1000,100\n" for i in range(151)]
    with pytest.raises(InputError, match="150 of 301 rows are bad .* timestamp in another format"):
        read_logs([write(tmp_path, lines, "mixed.csv")])


def test_more_than_one_percent_bad_is_refused_up_to_one_percent_reported(tmp_path, capsys):
    # 1,000 rows a second apart; 10 bad (1.0%, at the limit) are left out and reported, exit 0; 11 (1.1%) are refused,
    # exit 2: so many could change the forecast
    for n_bad, code in ((10, 0), (11, 2)):
        lines = rows(1000)
        for k in range(n_bad):
            lines[500 + k * 40] = "soon,1000,100\n"
        path = write(tmp_path, lines, f"bad{n_bad}.csv")
        assert main(["traffic", str(path)]) == code
        out = capsys.readouterr()
        if code:
            assert f"{n_bad} of 1,000 rows are bad (1.1%), more than 1%" in out.err
            # one error line, the counted rows and examples indented under it as details, not 'N problem(s)'
            lines = out.err.splitlines()
            assert lines[0].startswith("error: ") and "problem(s)" not in out.err
            assert all(ln.startswith("  ") for ln in lines[1:]) and "11 row(s) left out: unparseable timestamp" in out.err
        else:
            assert "10 row(s) left out: unparseable timestamp" in out.out


def test_an_arrival_whose_lengths_cannot_be_read_still_counts_toward_the_peak(tmp_path, capsys):
    # 900 rows, one every 2 s, except a burst of 60 rows in one minute (T0 + 1000 .. T0 + 1059, one a second): the
    # busiest 60 s window holds those 60 plus none of the 2-s rows placed there, so the peak is 60 / 60 = 1.0 req/s.
    # Five of the burst's rows have no output count: they are still arrivals, so the peak stays 1.0 (without them it
    # would be 55 / 60 = 0.92), and their lengths are left out of the percentiles (5 of 900 rows, 0.6%)
    lines = [f"{T0 + 2 * i},1000,100\n" for i in range(450)] + [f"{T0 + 2000 + 2 * i},1000,100\n" for i in range(390)]
    burst = [f"{T0 + 1000 + i},1000,{'' if i % 12 == 0 else 100}\n" for i in range(60)]
    lines = lines[:450] + burst + lines[450:]
    lines = [ln for ln in lines if not (T0 + 1000 <= int(ln.split(",")[0]) < T0 + 1060) or ln in burst]
    r = read_logs([write(tmp_path, lines)])
    assert r.arrivals_without_lengths == 5 and r.t_s.size == r.arrival_t_s.size - 5
    assert peak_rate(np.sort(r.arrival_t_s), 60.0)[0] == pytest.approx(1.0)
    s = summarise(r.arrival_t_s, r.prompt, r.output, None, 60.0)
    assert s.peak_rps == pytest.approx(1.0) and s.requests == r.arrival_t_s.size


def test_an_unreadable_row_inside_the_peak_window_is_refused(tmp_path, capsys):
    # the busiest minute is a burst of 120 rows (two a second) at lines 302-421; a row with no readable time among them
    # may be part of the peak, so the command stops (exit 2), naming the line; the same row in the quiet hours is
    # left out and reported (exit 0)
    quiet = [f"{T0 + 2 * i},1000,100\n" for i in range(300)]
    burst = [f"{T0 + 600 + i // 2},1000,100\n" for i in range(120)]
    tail = [f"{T0 + 700 + 2 * i},1000,100\n" for i in range(300)]
    inside = quiet + burst[:60] + ["soon,1000,100\n"] + burst[60:] + tail
    assert main(["traffic", str(write(tmp_path, inside, "inside.csv"))]) == 2
    err = capsys.readouterr().err
    assert "line 362: a row with no readable time among lines 302-422, the peak window's" in err
    outside = quiet[:10] + ["soon,1000,100\n"] + quiet[10:] + burst + tail
    assert main(["traffic", str(write(tmp_path, outside, "outside.csv"))]) == 0
    assert "1 row(s) left out: unparseable timestamp" in capsys.readouterr().out


def test_a_json_array_with_one_bad_record(tmp_path):
    records = [{"created": T0 + i, "usage": {"prompt_tokens": 10, "completion_tokens": 5}} for i in range(200)]
    records[3] = [1, 2]
    path = tmp_path / "log.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    r = read_logs([path])
    assert r.t_s.size == 199 and r.bad.examples == [f"{path} record 4: a JSON list, not an object"]


@pytest.mark.slow
def test_a_burst_inside_one_clock_minute_is_the_true_busiest_minute(tmp_path, capsys):
    # A week with one request every 2 s from T0 + 37 s (any 60 s span holds exactly 30 of them), plus 3,000 requests
    # between 10 s and 50 s into the clock minute that starts 3 days, 12 h and 17 min after T0. The busiest minute holds
    # the whole burst and 30 background requests: 3,030 / 60 s = 50.5 req/s. A window anchored at the first request
    # (T0 + 37 s + 60 k) would cut the burst at 37 s into its minute.
    minute = T0 + 3 * 86_400 + 12 * 3600 + 17 * 60
    background = T0 + 37 + np.arange(0, 7 * 86_400 - 60, 2.0)
    burst = minute + 10 + np.arange(3000) * (40.0 / 3000)
    t = np.sort(np.concatenate([background, burst]))
    path = tmp_path / "week.csv"
    pd.DataFrame({"created": np.round(t, 3), "prompt_tokens": 1000, "completion_tokens": 100}).to_csv(path, index=False)
    out = tmp_path / "fc.yaml"
    assert main(["traffic", str(path), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert yaml.safe_load(out.read_text())["forecast"]["peak_rps"] == 3030 / 60
    assert "sliding: the most requests in any 60 s span" in printed  # the rule is stated
    peak, start, _ = peak_rate(t, 60)
    assert peak == 50.5 and minute - 10 < start <= minute + 10  # the window holds the whole burst


def test_a_burst_across_two_fixed_windows_is_found_whole():
    # 100 requests from 30 s to 89.4 s: fixed windows [0, 60) and [60, 120) would each see about half; the sliding
    # window from the first of them holds all 100, so the peak is 100 / 60 s
    t = 30 + np.arange(100) * 0.6
    assert peak_rate(t, 60)[:2] == (100 / 60, 30.0)


@pytest.mark.parametrize("column", [
    pd.to_datetime(T0 + np.arange(300), unit="s", utc=True),  # a Parquet timestamp with a zone
    pd.to_datetime(T0 + np.arange(300), unit="s"),  # and without
    pd.array(list(T0 + np.arange(299)) + [None], dtype="Int64"),  # nullable integers, one missing
])
def test_parquet_column_types(tmp_path, column):
    path = tmp_path / "log.parquet"
    pd.DataFrame({"created": column, "prompt_tokens": 100, "completion_tokens": 10}).to_parquet(path)
    r = read_logs([path])
    assert r.t_s.min() == T0 and r.t_s.size + r.bad.total == 300


def test_a_header_that_is_not_utf8_is_named_not_replaced_by_the_first_row(tmp_path):
    # issue 22: a non-UTF-8 byte in the header line made the first data row the header ("columns: 1767225600, 1000,
    # 100"); the header is named as unreadable, on the fast path and on the line-by-line one
    from xlplan.io.log_csv import csv_rows_slow
    from xlplan.io.log_values import BadRows

    path = tmp_path / "log.csv"
    path.write_bytes(b"times\xfftamp,prompt_tokens,completion_tokens\n" + "".join(rows(300)).encode())
    with pytest.raises(InputError, match="line 1: the header is unreadable"):
        read_logs([path])
    with pytest.raises(InputError, match="line 1: the header is unreadable"):
        list(csv_rows_slow(path, str(path), {}, BadRows(), None))
