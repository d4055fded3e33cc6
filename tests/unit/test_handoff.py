"""Handoff packets carry a session's conclusions: settled requirements, the format, open questions, and no
trace of ideas that were raised and then dropped."""

from __future__ import annotations

import pytest

from hippograph.planner.handoff import HandoffPacket, Turn, build_packet

ROLES = {"u": "user", "a": "assistant", "t": "tool", "s": "system"}


def session(*lines: tuple[str, str]) -> list[Turn]:
    """Turns from (role letter, content); ids are the letter and the position: "u1", "a2", ..."""
    return [Turn(id=f"{r}{n}", role=ROLES[r], content=text) for n, (r, text) in enumerate(lines, 1)]


def packet(*lines: tuple[str, str], task: str = "Prepare the weekly regional report") -> HandoffPacket:
    return build_packet(task, session(*lines))


def source_of(p: HandoffPacket, needle: str) -> list[str]:
    (detail,) = [d for d in p.details if needle in d.text]
    return detail.sources


REPORT = (
    ("u", "I need the weekly regional report for the Northwest region."),
    ("a", "Sure. Should I include archived projects?"),
    ("u", "Hmm, what if we included them... no, leave them out, they distort the totals."),
    ("a", "Got it. What about drafts?"),
    ("u", "Exclude drafts as well. Only active projects."),
    ("a", "Would you like it as a PDF?"),
    ("u", "No. Put a summary table first, details after."),
    ("a", "Should I also send it to the finance team?"),
)


@pytest.fixture(scope="module")
def report() -> HandoffPacket:
    return build_packet("Prepare the weekly regional report", session(*REPORT), source_session="s-42")


def test_report_requirements(report: HandoffPacket) -> None:
    reqs = report.requirements
    assert "exclude archived projects" in reqs
    assert any("exclude drafts" in r for r in reqs)
    assert any("active projects" in r and "archived" not in r for r in reqs)
    assert any("Northwest" in r for r in reqs)
    assert not any("include archived" in r for r in reqs)
    assert len(reqs) == len({r.lower() for r in reqs})
    assert report.source_session == "s-42" and report.task == "Prepare the weekly regional report"


def test_report_rejected_musing_survives_only_as_its_negation(report: HandoffPacket) -> None:
    dump = report.model_dump_json()
    assert dump.count("archived") == dump.count("exclude archived projects") >= 1
    assert "include archived" not in dump.lower()


def test_report_format_and_questions(report: HandoffPacket) -> None:
    assert report.format is not None and "summary table first" in report.format
    assert "pdf" not in report.model_dump_json().lower()
    assert not any("summary table" in r for r in report.requirements)  # the format is not repeated
    assert report.open_questions == ["Should I also send it to the finance team?"]
    assert not any("finance" in r for r in report.requirements)  # an unanswered proposal is not a requirement
    assert report.constraints_confirmed_by_user is True


def test_report_provenance(report: HandoffPacket) -> None:
    assert all(d.confirmed_by_user for d in report.details)
    assert [d.text for d in report.details] == report.requirements
    assert source_of(report, "archived") == ["a2", "u3"]
    assert source_of(report, "drafts") == ["u5"]
    assert source_of(report, "active projects") == ["u5"]
    assert source_of(report, "Northwest") == ["u1"]


def test_requirements_keep_the_order_they_were_settled_in(report: HandoffPacket) -> None:
    order = [next(i for i, r in enumerate(report.requirements) if key in r)
             for key in ("Northwest", "archived", "drafts", "active projects")]
    assert order == sorted(order)


def test_accepted_assistant_proposal() -> None:
    p = packet(("a", "Shall I group the projects by manager?"), ("u", "Yes, please."))
    assert p.requirements == ["group the projects by manager"]
    assert p.details[0].confirmed_by_user and p.details[0].sources == ["a1", "u2"]
    assert p.constraints_confirmed_by_user and p.open_questions == []


def test_user_musing_withdrawn_later() -> None:
    p = packet(
        ("u", "Maybe we should add a pie chart."),
        ("a", "Good idea."),
        ("u", "Also group the projects by manager."),
        ("a", "Noted. Anything else?"),
        ("u", "Actually, forget the pie chart."),
    )
    assert "group the projects by manager" in p.requirements
    pie = [r for r in p.requirements if "pie" in r]
    assert pie in ([], ["no pie chart"], ["do not add a pie chart"])
    assert "add a pie chart" not in p.model_dump_json().replace("do not add a pie chart", "")
    assert p.format is None


def test_pending_user_musing_is_not_a_requirement() -> None:
    p = packet(("u", "Maybe we should add a pie chart."), ("a", "Let me know when you decide."))
    assert p.requirements == [] and p.format is None


def test_change_of_mind_on_format() -> None:
    p = packet(("u", "Use CSV."), ("a", "Will do."), ("u", "Exclude drafts."), ("u", "Actually, make it Excel instead."))
    assert p.format is not None and "Excel" in p.format
    assert "csv" not in p.model_dump_json().lower()
    assert p.requirements == ["exclude drafts"]


def test_scratch_that_replaces_within_a_turn() -> None:
    p = packet(("u", "Use CSV. Scratch that, use JSON."))
    assert p.format == "JSON"


def test_accepted_what_if_proposal() -> None:
    p = packet(("a", "What if we included last year's numbers?"), ("u", "Yes, let's do that."))
    assert p.requirements == ["include last year's numbers"]
    assert p.constraints_confirmed_by_user and p.open_questions == []


def test_user_proposal_accepted_by_the_assistant_is_confirmed() -> None:
    p = packet(("u", "What if we included last year's numbers?"), ("a", "Sure, I can do that."))
    assert p.requirements == ["include last year's numbers"]
    assert p.constraints_confirmed_by_user and p.open_questions == []


def test_answered_and_unanswered_questions() -> None:
    p = packet(
        ("u", "Which quarter is this for?"),
        ("a", "Q3, as agreed."),
        ("a", "Do you have a deadline?"),
        ("u", "I'm not sure yet."),
    )
    assert p.open_questions == ["Do you have a deadline?"]


@pytest.mark.parametrize("reply", ["Let me check.", "I'll get back to you.", "TBD", "Good question."])
def test_non_answers_leave_the_question_open(reply: str) -> None:
    p = packet(("u", "Which projects count as active?"), ("a", reply))
    assert p.open_questions == ["Which projects count as active?"]


def test_a_question_never_addressed_is_open() -> None:
    p = packet(("a", "Which currency should the totals use?"))
    assert p.open_questions == ["Which currency should the totals use?"]


def test_a_proposal_ignored_by_the_reply_stays_open_and_unsettled() -> None:
    p = packet(("a", "Should I include archived projects?"), ("u", "Use the Northwest region."))
    assert p.open_questions == ["Should I include archived projects?"]
    assert p.requirements == ["region: Northwest"]


def test_empty_session() -> None:
    p = packet()
    assert p.requirements == [] and p.details == [] and p.open_questions == []
    assert p.format is None and p.constraints_confirmed_by_user is False


def test_small_talk_is_not_a_requirement() -> None:
    p = packet(("u", "Hi there!"), ("a", "Hello! How can I help?"), ("u", "Thanks, no problem, that's all."))
    assert p.requirements == [] and p.format is None and p.constraints_confirmed_by_user is False


def test_tool_and_system_turns_are_ignored() -> None:
    p = packet(
        ("s", "Always include archived projects. Use CSV."),
        ("a", "Should I exclude drafts?"),
        ("t", "No. Should I also email the finance team?"),
        ("u", "Yes."),
    )
    assert p.requirements == ["exclude drafts"]
    assert p.details[0].sources == ["a2", "u4"]
    assert p.format is None and p.open_questions == []


def test_assistant_claim_never_confirmed_by_the_user() -> None:
    p = packet(("u", "I need the report."), ("a", "I'll exclude archived projects."), ("u", "Thanks."))
    assert p.requirements == ["exclude archived projects"]
    assert p.details[0].confirmed_by_user is False
    assert p.constraints_confirmed_by_user is False


def test_assistant_claim_confirmed_by_the_user() -> None:
    p = packet(("a", "I'll exclude archived projects."), ("u", "Yes, exactly."))
    assert p.details[0].confirmed_by_user and p.constraints_confirmed_by_user


def test_unconfirmed_format_makes_the_packet_unconfirmed() -> None:
    p = packet(("u", "Exclude drafts."), ("a", "I'll send it as a PDF."))
    assert p.format == "PDF" and p.requirements == ["exclude drafts"]
    assert p.constraints_confirmed_by_user is False


def test_assistant_claim_rejected_by_the_user_becomes_its_opposite() -> None:
    p = packet(("a", "I'll include archived projects."), ("u", "No, leave them out."))
    assert p.requirements == ["exclude archived projects"]
    assert "include" not in p.model_dump_json()


@pytest.mark.parametrize(("proposal", "reply", "expected"), [
    ("Should I include archived projects?", "Nope.", ["exclude archived projects"]),
    ("Should I include archived projects?", "Hmm, no.", ["exclude archived projects"]),
    ("Should I exclude drafts?", "No.", ["include drafts"]),
    ("Should I add a chart?", "I'd rather not.", ["no chart"]),
    ("Do you want me to group the projects by manager?", "No thanks.", []),
    ("Would you like a breakdown by team?", "Sure.", ["include a breakdown by team"]),
    ("How about adding a trend line?", "Go ahead.", ["add a trend line"]),
])
def test_replies_settle_the_pending_proposal(proposal: str, reply: str, expected: list[str]) -> None:
    p = packet(("a", proposal), ("u", reply))
    assert p.requirements == expected
    assert p.open_questions == []


@pytest.mark.parametrize(("text", "expected"), [
    ("Don't include drafts.", ["exclude drafts"]),
    ("Let's not add a chart.", ["no chart"]),
    ("No drafts, please.", ["exclude drafts"]),
    ("Drop drafts.", ["exclude drafts"]),
    ("Let's leave drafts out.", ["exclude drafts"]),
    ("Can you exclude drafts?", ["exclude drafts"]),
    ("Round the totals to whole numbers, please.", ["round the totals to whole numbers"]),
    ("Only include active projects for the Northwest region.", ["region: Northwest", "active projects only"]),
    ("Use the Northwest region only.", ["region: Northwest"]),
    ("Export it to Excel and group by manager.", ["group by manager"]),
    ("Prepare the weekly regional report.", []),  # a restatement of the task is not a requirement
])
def test_user_directives(text: str, expected: list[str]) -> None:
    assert packet(("u", text)).requirements == expected


@pytest.mark.parametrize(("text", "fmt"), [
    ("I need it as a one-pager.", "one-pager"),
    ("It should be in Excel.", "Excel"),
    ("Give me bullet points.", "bullet points"),
    ("Summary table first, details after.", "Summary table first, details after"),
])
def test_format_statements(text: str, fmt: str) -> None:
    p = packet(("u", text))
    assert p.format == fmt and p.requirements == []


def test_format_proposal_accepted_and_formats_of_different_kinds_combine() -> None:
    p = packet(("u", "Give me bullet points."), ("a", "Do you want it as slides instead?"), ("u", "Yes."))
    assert p.format == "bullet points; slides"


def test_a_directive_replaces_an_earlier_one_on_the_same_subject() -> None:
    p = packet(("u", "Please use the Southeast region."), ("a", "OK."), ("u", "Actually, use the Northwest region."))
    assert p.requirements == ["region: Northwest"]
    assert "Southeast" not in p.model_dump_json()


def test_accepted_idea_rejected_later_disappears() -> None:
    p = packet(
        ("a", "Shall I group the projects by manager?"),
        ("u", "Yes."),
        ("u", "Actually, drop the grouping by manager."),
    )
    assert p.requirements == [] and "manager" not in p.model_dump_json()


def test_accepted_inclusion_rejected_later_turns_into_an_exclusion() -> None:
    p = packet(("u", "Include archived projects."), ("a", "OK."), ("u", "Hmm, on second thought, no."))
    assert p.requirements == ["exclude archived projects"]


def test_assistant_counter_proposal_accepted() -> None:
    p = packet(
        ("u", "Should we include archived projects?"),
        ("a", "I would leave them out, they distort the totals."),
        ("u", "Ok."),
    )
    assert p.requirements == ["exclude archived projects"] and p.open_questions == []
    assert p.constraints_confirmed_by_user


def test_same_requirement_twice_is_listed_once() -> None:
    p = packet(("u", "Exclude drafts."), ("a", "I'll exclude drafts."), ("u", "Yes, exclude drafts."))
    assert p.requirements == ["exclude drafts"]
    assert p.details[0].sources == ["u1", "a2", "u3"]


def test_build_packet_is_deterministic() -> None:
    turns = session(*REPORT)
    assert build_packet("t", turns) == build_packet("t", list(turns))
