"""Handoff packets carry conclusions: rejected ideas survive only as what was decided instead."""

from __future__ import annotations

import json

from hippograph.planner.conclusions import Turn, build_packet, format_of


def talk(*lines: tuple[str, str]) -> list[Turn]:
    return [Turn(id=f"t{i + 1}", role=role, content=text) for i, (role, text) in enumerate(lines)]


REPORT = talk(
    ("user", "I need the weekly regional report for the Northwest region."),
    ("assistant", "Sure. Should I include archived projects?"),
    ("user", "Hmm, what if we included them... no, leave them out, they distort the totals."),
    ("assistant", "Got it. What about drafts?"),
    ("user", "Exclude drafts as well. Only active projects."),
    ("assistant", "Would you like it as a PDF?"),
    ("user", "No. Put a summary table first, details after."),
    ("assistant", "Should I also send it to the finance team?"),
)


def test_the_report_handoff_keeps_the_conclusions_only() -> None:
    packet = build_packet("generate weekly regional report", REPORT, "monday")
    assert packet.requirements == ["region: Northwest", "exclude archived projects", "exclude drafts",
                                   "active projects only"]
    assert packet.format == "summary table first, details after"
    assert packet.open_questions == ["Should I also send it to the finance team?"]
    assert packet.constraints_confirmed_by_user is True and packet.source_session == "monday"
    dumped = json.dumps(packet.model_dump()).lower()
    assert dumped.count("archived") == 2 and "include archived" not in dumped  # requirement + its detail
    assert "pdf" not in dumped
    sources = {d.text: d.sources for d in packet.details}
    assert sources["exclude archived projects"] == ["t2", "t3"] and sources["exclude drafts"] == ["t5"]


def test_an_accepted_proposal_is_a_confirmed_requirement() -> None:
    packet = build_packet("t", talk(("assistant", "Shall I group the projects by manager?"), ("user", "Yes, please.")))
    assert packet.requirements == ["group the projects by manager"]
    assert packet.constraints_confirmed_by_user and packet.open_questions == []


def test_a_musing_withdrawn_later_vanishes_or_is_negated() -> None:
    packet = build_packet("t", talk(("user", "Maybe we should add a pie chart."), ("assistant", "I can do that."),
                                    ("user", "Use the Q3 numbers."), ("user", "Actually, forget the pie chart.")))
    assert packet.requirements == ["do not add a pie chart", "use the Q3 numbers"]


def test_the_last_format_wins_and_the_replaced_one_is_gone() -> None:
    packet = build_packet("t", talk(("user", "Use CSV."), ("assistant", "Sure."),
                                    ("user", "Actually, make it Excel instead.")))
    assert packet.format == "Excel" and packet.requirements == []
    assert "csv" not in json.dumps(packet.model_dump()).lower()


def test_what_if_accepted() -> None:
    packet = build_packet("t", talk(("assistant", "What if we included last year's numbers?"),
                                    ("user", "Yes, let's do that.")))
    assert packet.requirements == ["include last year's numbers"]
    own = build_packet("t", talk(("user", "What if we included last year's numbers?"),
                                 ("assistant", "Yes, that works.")))
    assert own.requirements == ["include last year's numbers"] and own.constraints_confirmed_by_user


def test_open_questions_are_the_unanswered_ones() -> None:
    packet = build_packet("t", talk(("user", "Which quarter is this for?"), ("assistant", "Q3, as agreed."),
                                    ("assistant", "Do you have a deadline?"), ("user", "I'm not sure yet.")))
    assert packet.open_questions == ["Do you have a deadline?"]


def test_unconfirmed_claims_and_empty_sessions() -> None:
    claim = build_packet("t", talk(("assistant", "I'll use the Q3 numbers.")))
    assert claim.requirements == ["use the Q3 numbers"] and claim.constraints_confirmed_by_user is False
    assert claim.details[0].confirmed_by_user is False
    empty = build_packet("t", [])
    assert empty.requirements == [] and empty.format is None and empty.constraints_confirmed_by_user is False
    tools = build_packet("t", talk(("tool", "Exclude everything."), ("system", "Use JSON."),
                                   ("user", "Hi there!")))
    assert tools.requirements == [] and tools.format is None  # tools and system rules are not the user


def test_a_rejected_assistant_plan_is_reversed() -> None:
    packet = build_packet("t", talk(("assistant", "I'll include the contractors."), ("user", "No, don't.")))
    assert packet.requirements == ["exclude the contractors"] and packet.constraints_confirmed_by_user


def test_format_phrases() -> None:
    assert format_of("put a summary table first, details after") == "summary table first, details after"
    assert format_of("it as a PDF") == "PDF" and format_of("use CSV") == "CSV"
    assert format_of("group by manager") is None
