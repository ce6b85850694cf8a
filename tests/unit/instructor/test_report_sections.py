"""autograder.instructor.report_sections: the class report lists what was not checked, what was set aside and who
was late or of unknown lateness, from grades.json's rows, every text escaped."""
from autograder.instructor.report_sections import late_rows, not_checked_rows, sections, set_aside_rows, summary

DOC = {"students": {
    "ada": {"status": "graded", "submission": {"time": "t", "late_seconds": 0.0, "penalty": 0.0}},
    "bob": {"status": "graded", "not_checked": {"accumulate_gradients": ["one_graph"]},
            "weaker_isolation": ["memory_cgroup"],
            "set_aside": [{"reason": "submitted under the id bob by the account <b>eve</b>", "owner": "eve",
                           "folder": "bob+lesson20+2099", "time": "2026-12-10T06:03:00Z"}],
            "submission": {"time": "2026-12-10T06:03:00Z", "due": "2026-12-10T05:30:00Z", "late_seconds": 1980.0,
                           "penalty": 1.0, "source": "the exchange"}},
    "cy": {"status": "graded", "submission": {"time": None, "late_seconds": None, "penalty": 0.0,
                                              "flags": ["lateness unknown"]}}},
    "set_aside": [{"reason": "its student id cannot be held", "folder": "a" * 100, "owner": "mallory"}]}


def test_each_section_lists_only_what_needs_a_person():
    assert [r[1] for r in not_checked_rows(DOC)] == ["<code>accumulate_gradients</code>"]
    assert len(set_aside_rows(DOC)) == 2
    late = late_rows(DOC)
    assert [r[0] for r in late] == ["<span class='student'>bob</span>", "<span class='student'>cy</span>"]
    assert late[0][3] == "33 min" and late[1][3] == "unknown"
    assert summary(DOC) == ("Needs a person: 1 items with behaviours not checked, 2 submissions set aside, "
                            "1 submissions of unknown lateness.")


def test_texts_are_escaped_and_empty_sections_say_so():
    page = sections(DOC)
    assert "<b>eve</b>" not in page and "&lt;b&gt;eve&lt;/b&gt;" in page
    empty = sections({"students": {"ada": DOC["students"]["ada"]}})
    assert "No submission was set aside." in empty and summary({"students": {}}) == ""
