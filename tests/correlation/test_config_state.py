import datetime as dt

from tests.correlation.builders import at, change
from timeline.correlation.config_state import (
    diff_states,
    fmt_duration,
    fmt_time,
    merge_changes,
    state_at,
    state_intervals,
    unmerged_duplicates,
)

WINDOW = dt.timedelta(minutes=30)
CTAS = "SGLANG_SM120_MMA_TARGET_CTAS"


def test_doc_and_commit_recording_the_same_change_merge_into_one_at_the_earliest_time():
    commit = change(CTAS, None, "512", at(13, 12), "commit:9f3e")
    doc = change(CTAS, None, "512", at(13, 10), "doc:DSV4_DEPLOY.md@ab12")

    merged = merge_changes([commit, doc], WINDOW)

    assert len(merged) == 1
    assert merged[0].at == at(13, 10)
    assert merged[0].ref == doc.ref
    assert merged[0].sources == ("doc:DSV4_DEPLOY.md@ab12", "commit:9f3e")
    assert (merged[0].old, merged[0].new) == (None, "512")


def test_records_with_the_same_new_value_but_different_old_values_merge():
    doc = change("--tp", "4", "8", at(9, 0), "doc:a")
    commit = change("--tp", None, "8", at(9, 5), "commit:b")

    merged = merge_changes([doc, commit], WINDOW)

    assert [(c.old, c.new, c.sources) for c in merged] == [("4", "8", ("doc:a", "commit:b"))]


def test_a_source_listed_twice_appears_once_in_the_merged_sources():
    a = change("K", "1", "2", at(9, 0), "doc:a", "changelog:a")
    b = change("K", "1", "2", at(9, 1), "changelog:a", "commit:c")

    assert merge_changes([a, b], WINDOW)[0].sources == ("doc:a", "changelog:a", "commit:c")


def test_the_same_change_further_apart_than_the_window_stays_two_changes():
    doc = change(CTAS, None, "512", at(13, 10), "doc:a")
    commit = change(CTAS, None, "512", at(13, 41), "commit:b")

    merged = merge_changes([doc, commit], WINDOW)

    assert [c.at for c in merged] == [at(13, 10), at(13, 41)]


def test_different_new_values_of_one_key_are_not_merged():
    a = change("--chunked-prefill-size", "8192", "16384", at(13, 40))
    b = change("--chunked-prefill-size", "16384", "8192", at(13, 45))

    assert len(merge_changes([a, b], WINDOW)) == 2


def test_a_record_does_not_merge_across_an_intervening_different_value():
    first = change("K", "a", "b", at(13, 0), "commit:1")
    back = change("K", "b", "a", at(13, 5), "commit:2")
    again = change("K", "a", "b", at(13, 10), "doc:3")

    merged = merge_changes([first, back, again], WINDOW)

    assert [(c.new, c.at) for c in merged] == [
        ("b", at(13, 0)),
        ("a", at(13, 5)),
        ("b", at(13, 10)),
    ]
    assert state_at(merged, at(14)) == {"K": "b"}


def test_state_at_applies_changes_up_to_and_including_the_moment():
    changes = [
        change("A", None, "1", at(8)),
        change("B", None, "x", at(8)),
        change("A", "1", "2", at(9)),
    ]

    assert state_at(changes, at(7, 59)) == {}
    assert state_at(changes, at(8, 30)) == {"A": "1", "B": "x"}
    assert state_at(changes, at(9)) == {"A": "2", "B": "x"}


def test_a_removed_key_is_absent_from_the_state():
    changes = [change("A", None, "1", at(8)), change("A", "1", None, at(9))]

    assert state_at(changes, at(10)) == {}


def test_diff_states_lists_every_differing_key_sorted_with_unset_as_none():
    changes = [
        change("Z", None, "1", at(8)),
        change("A", None, "old", at(8)),
        change("A", "old", "new", at(10)),
        change("M", None, "added", at(10)),
        change("Z", "1", None, at(11)),
        change("SAME", None, "s", at(8)),
    ]

    assert diff_states(changes, at(9), at(12)) == [
        ("A", "old", "new"),
        ("M", None, "added"),
        ("Z", "1", None),
    ]


def test_state_intervals_run_from_change_to_change_and_the_last_ends_at_the_horizon():
    changes = [
        change("A", None, "1", at(8)),
        change("B", None, "x", at(8)),
        change("A", "1", "2", at(9)),
    ]

    intervals = state_intervals(changes, until=at(12))

    assert [(i.start, i.end) for i in intervals] == [(at(8), at(9)), (at(9), at(12))]
    assert intervals[0].state == {"A": "1", "B": "x"}
    assert intervals[1].state == {"A": "2", "B": "x"}
    assert len(intervals[0].opened_by) == 2


def test_the_last_state_interval_is_open_without_a_horizon():
    intervals = state_intervals([change("A", None, "1", at(8))])

    assert intervals[-1].end is None


def test_the_same_value_recorded_by_another_source_beyond_the_window_is_flagged_as_skew():
    merged = merge_changes(
        [
            change(CTAS, None, "512", at(13, 10), "doc:a"),
            change(CTAS, None, "512", at(14), "commit:b"),
        ],
        WINDOW,
    )

    pairs = unmerged_duplicates(merged, WINDOW)

    assert [(a.at, b.at) for a, b in pairs] == [(at(13, 10), at(14))]


def test_durations_and_times_read_as_words():
    assert fmt_duration(dt.timedelta(hours=3, minutes=35, seconds=40)) == "3 h 35 min"
    assert fmt_duration(dt.timedelta(minutes=29)) == "29 min"
    assert fmt_duration(dt.timedelta(seconds=45)) == "45 s"
    assert fmt_duration(dt.timedelta(hours=2)) == "2 h"
    assert fmt_duration(dt.timedelta(days=2, hours=3)) == "2 d 3 h"
    assert fmt_time(at(23, 39, 58)) == "2026-11-20 23:39:58 UTC"
    pst = dt.timezone(dt.timedelta(hours=-8))
    assert fmt_time(dt.datetime(2026, 11, 20, 9, 30, tzinfo=pst)) == "2026-11-20 17:30 UTC"
